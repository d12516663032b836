/*
 * One change = one LMDB write transaction, in the layout of docs/lmdb-cache.md: the group's
 * items (the delta, or the whole group when nothing was delivered before), its `meta`
 * entry, the generation counter and the change log's entry, committed together so a reader sees
 * each group as one admin version. Knows nothing of files or modes (cache_env.c does).
 */
#ifndef GW_LMDB_CACHE_WRITE_H
#define GW_LMDB_CACHE_WRITE_H

#include <gwsync/subscriber.h>
#include <lmdb.h>
#include <stddef.h>

#include "core/error.h"

/* What cache_write_change did, for the caller's log line. */
struct cache_write_result {
	int replaced; /* 1: the group's database was emptied and written whole */
	int repaired; /* 1: the delta left a different item count, so it was rewritten */
	size_t count; /* items in the group's database after the commit */
	unsigned long long generation; /* the generation committed */
};

/* Where and how to write. */
struct cache_writer {
	MDB_env *env;
	unsigned long long change_log; /* generations the change log keeps; 0: no log */
	/* The cause behind an error LMDB returned, or NULL: LMDB reports a write that stopped
	 * short on a full filesystem as EIO, and only the filesystem side can tell. */
	int (*cause)(void *arg, int rc);
	void *cause_arg;
	/* Reads the change's items (gw_change_entry: the plugin declares
	 * GW_SUB_LISTS_ON_DEMAND). */
	const struct gw_host *host;
};

/* Writes `change` in one transaction and commits it. Returns 0, or an LMDB error code
 * (MDB_MAP_FULL: the caller grows the map and calls again; anything else is final for this
 * try) with a reason naming the group and, where one is concerned, the key in err.
 * Nothing is visible to readers unless it returns 0. */
int cache_write_change(const struct cache_writer *w, const struct gw_change *change,
                       struct cache_write_result *res, struct gw_err *err);

/* The meta entry's JSON for a group version: {"md5","lastModifyTime","count","stale"}.
 * Returns the length written (< cap) or -1 if it does not fit. */
int cache_meta_json(char *out, size_t cap, const struct gw_version *v, size_t count, int stale);

#endif
