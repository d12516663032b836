/*
 * The keys the Consul source holds, with the ModifyIndex each had in the last answer: what
 * an answer is compared with, key by key, so only keys that are new or whose ModifyIndex
 * moved are decoded and put into the mirror, and keys no longer answered are deleted.
 *
 * Every answer lists every key again (100,000 at 100,000 rules), so finding each one must
 * cost little: Consul answers in key order, the same order each time, so the key expected
 * next is the one that followed the last one found in the previous answer (a comparison of
 * the key's bytes, no hashing); only a key out of that order (new, or after a deleted one)
 * is looked up in the hash table. And when every key held was answered again (the common
 * case: nothing deleted), nothing is swept.
 *
 * Use: begin, then per entry of the answer find (and add when absent) and seen, then end;
 * abort when the answer is not applied to the end. Single-threaded (the source's thread).
 */
#ifndef GW_CONSUL_KEYS_H
#define GW_CONSUL_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "core/htab.h"

struct consul_key {
	struct htab_link link; /* first */
	uint64_t modify_index;
	uint64_t gen; /* the last answer that held it */
	size_t pos;   /* its place in the last answer's order */
	size_t len;
	char path[]; /* the mirror's path form: "/" + the key */
};

struct consul_keys {
	struct htab tab;
	struct consul_key **order; /* the last whole answer's keys, in its order */
	size_t n_order, cap_order;
	struct consul_key **next; /* this answer's, being built */
	size_t n_next, cap_next;
	size_t cursor; /* where in `order` the next key is expected */
	uint64_t gen;
};

void consul_keys_begin(struct consul_keys *ks);
/* The key held at path, or NULL. */
struct consul_key *consul_keys_find(struct consul_keys *ks, const char *path, size_t len);
/* A key not held yet, at modify_index (then seen). NULL on out of memory. */
struct consul_key *consul_keys_add(struct consul_keys *ks, const char *path, size_t len,
                                   uint64_t modify_index);
/* This answer lists k. 0, or -1 on out of memory. */
int consul_keys_seen(struct consul_keys *ks, struct consul_key *k);
/* The answer is whole: every key it did not list is passed to gone() and forgotten. */
void consul_keys_end(struct consul_keys *ks, void (*gone)(void *arg, const struct consul_key *k),
                     void *arg);
/* The answer was not applied to the end: the keys stay as they are (those it listed keep
 * what it said of them), nothing is forgotten. */
void consul_keys_abort(struct consul_keys *ks);
/* Forget every key (the next answer decodes them all), or the table too (at free). */
void consul_keys_clear(struct consul_keys *ks);
void consul_keys_free(struct consul_keys *ks);

#endif
