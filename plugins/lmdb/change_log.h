/*
 * The cache's change log (docs/lmdb-cache.md, "The change log"): what each commit put and
 * deleted, keyed by the generation it produced, so a gateway reader applies only what
 * changed instead of re-reading every group. An entry is built while the commit writes
 * (change_entry_*), then written with the commit, in its transaction, by
 * change_log_commit(), which also keeps the log to its window.
 */
#ifndef GW_LMDB_CHANGE_LOG_H
#define GW_LMDB_CHANGE_LOG_H

#include <lmdb.h>
#include <stddef.h>

#include "shared/strbuf.h"

/* One commit's entry, gathered as the commit writes its keys. */
struct change_entry {
	int on;      /* 0: the log is off and the functions below do nothing */
	int replace; /* the group was rewritten whole: the lists do not matter */
	size_t n_put, n_del;
	struct strbuf put, del; /* the lists' JSON elements so far */
};

void change_entry_init(struct change_entry *e, int on);
/* A stored key the commit put or deleted (each key at most once per commit). 0 or -1 (out
 * of memory). */
int change_entry_put(struct change_entry *e, const MDB_val *key);
int change_entry_del(struct change_entry *e, const MDB_val *key);
/* The commit rewrites the group whole. */
void change_entry_replace(struct change_entry *e);
void change_entry_free(struct change_entry *e);

/* The entry's value, {"group":G,"put":[..],"del":[..]} or {"group":G,"replace":true}, as a
 * fresh string of *len bytes (caller frees), or NULL when out of memory. */
char *change_entry_json(const struct change_entry *e, const char *group, size_t *len);

/* Appends `s` (`n` bytes of UTF-8) as a JSON string literal: `"` and `\` escaped, control
 * characters as \u00XX. 0 or -1 (out of memory). */
int json_add_string(struct strbuf *b, const char *s, size_t n);

/* The change log's part of a commit, inside its write transaction (`meta` is the meta
 * database): with keep > 0, writes `entry` under generation `gen`, deletes the entries
 * that fell out of the last `keep` generations and sets meta changes_from; a log that does
 * not continue to gen - 1 (none yet, an upgrade, a writer without a log in between) starts
 * again at `gen`. With keep == 0, empties the log and deletes changes_from. Returns 0, or
 * an LMDB error with *what naming the step that failed. */
int change_log_commit(MDB_txn *txn, MDB_dbi meta, unsigned long long gen, unsigned long long keep,
                      const char *entry, size_t len, const char **what);

#endif
