/*
 * Benchmark datasets on the C side: load what gendata.py wrote (a manifest and one
 * compact JSON item list per group) and build admin replies around those exact bytes.
 * Shared by the admin stand-in (fastadmin.c) and the in-process benchmark
 * (bench_inproc.c) so both serve and parse the same text.
 *
 * A one-rule change is made in place: the nine digits after "bench-mutable-" in the RULE
 * list are overwritten, which changes that rule's name and nothing else, so the new
 * version differs from the old by exactly one item and no re-serialisation is needed.
 */
#ifndef BENCH_BENCHDATA_H
#define BENCH_BENCHDATA_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_GROUPS     8
#define BENCH_MUTABLE        "bench-mutable-"
#define BENCH_MUTABLE_DIGITS 9

struct bench_group {
	char name[32];
	char md5[65];
	int64_t lmt; /* lastModifyTime */
	char *items; /* the JSON array text */
	size_t len;
};

struct bench_data {
	struct bench_group g[BENCH_MAX_GROUPS];
	size_t n;
	size_t item_bytes; /* sum of the groups' array lengths */
};

/* Read DIR/manifest and every DIR/GROUP.json. Prints the reason to stderr on failure. */
int bench_data_load(const char *dir, struct bench_data *d);
void bench_data_free(struct bench_data *d);
struct bench_group *bench_data_group(struct bench_data *d, const char *name);

/* Where the mutable rule's nine digits are in g->items, or NULL. */
char *bench_mutable_digits(const struct bench_group *g);

/* Make version `seq` of g: digits = seq, md5 = a tag derived from seq, lmt = base + seq. */
void bench_group_set_version(struct bench_group *g, char *digits, int64_t base_lmt,
                             unsigned long seq);

/* The text before a group's items inside a fetch reply's "data" object:
 * `"RULE":{"md5":"...","lastModifyTime":N,"data":` (with a leading ',' if not first).
 * Returns its length (< cap). */
size_t bench_group_prefix(const struct bench_group *g, int first, char *buf, size_t cap);

#define BENCH_FETCH_HEAD "{\"code\":200,\"message\":\"success\",\"data\":{"
#define BENCH_GROUP_TAIL "}"
#define BENCH_FETCH_TAIL "}}"

/* A whole /configs/fetch reply for the given groups (all if n == 0), malloc'ed. */
char *bench_fetch_reply(const struct bench_data *d, const char *const *groups, size_t n,
                        size_t *len);

/* CLOCK_MONOTONIC in nanoseconds: system-wide, so timestamps of two processes compare. */
int64_t bench_now_ns(void);

#endif
