/*
 * The agent's one hash table: intrusive (an entry embeds a struct htab_link as its first
 * member, so the table allocates nothing per entry and an entry's address never moves),
 * chained, FNV-1a over the key's bytes, doubled from 64 slots when it holds as many
 * entries as slots. The owner keeps the keys and says when two are equal: the path stores'
 * node and directory tables (source/kv/table.c) and the ZooKeeper source's table of
 * watched znodes (source/zookeeper/tree.c) are all this table, with their own entries.
 */
#ifndef GW_HTAB_H
#define GW_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_link {
	struct htab_link *next; /* in its slot's chain */
	uint64_t hash;
};

struct htab {
	struct htab_link **slots;
	size_t n_slots; /* a power of two, or 0 before the first entry */
	size_t n;       /* entries */
};

/* Whether entry e has the key [key, key + len). */
typedef int (*htab_eq_fn)(const struct htab_link *e, const void *key, size_t len);

uint64_t htab_hash(const void *key, size_t len);

/* The link pointing at the entry whose key is [key, key + len) (hash h): *link is the
 * entry, or NULL with the link where it would go. NULL while the table has no slots. */
struct htab_link **htab_find(const struct htab *t, uint64_t h, htab_eq_fn eq, const void *key,
                             size_t len);

/* Make room for one more entry before looking up where it goes (growing moves entries
 * between chains, so a link found before is stale after). 0, or -1 on out of memory. */
int htab_reserve(struct htab *t);

/* Put e (its key hashing to h) at `at`, an empty link htab_find gave after htab_reserve. */
void htab_insert(struct htab *t, struct htab_link **at, struct htab_link *e, uint64_t h);

/* Take the entry *at out of the table (the caller frees it). */
void htab_remove(struct htab *t, struct htab_link **at);

/* Iteration in no particular order: prev NULL for the first entry, then the last one
 * returned; *slot is the cursor (any value to start). The loop must not insert or remove. */
struct htab_link *htab_next(const struct htab *t, size_t *slot, const struct htab_link *prev);

/* Remove every entry for which drop(e, arg) is non-zero; drop frees what it removes (it may
 * keep nothing of e). Returns how many were removed. */
size_t htab_remove_if(struct htab *t, int (*drop)(struct htab_link *e, void *arg), void *arg);

/* Free the slots (entries are the owner's: free them first, e.g. with htab_remove_if);
 * t is then empty. */
void htab_free(struct htab *t);

#endif
