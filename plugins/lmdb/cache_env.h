/*
 * The LMDB environment of the `lmdb` subscriber: where it lives, who may read it, and how its
 * map grows. Kept apart from the writing of changes (cache_write.c) because this is the part
 * that talks to the filesystem (directories, modes, free space) rather than to the data.
 */
#ifndef GW_LMDB_CACHE_ENV_H
#define GW_LMDB_CACHE_ENV_H

#include <lmdb.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct cache_env {
	MDB_env *env;
	char *path;
	unsigned mode;    /* data.mdb; lock.mdb adds write where mode reads */
	int64_t map_size; /* the map size now (grows) */
	unsigned max_readers;
};

/* Creates the directory if missing (mode plus search bits) and opens the environment for
 * writing with the configured modes; refuses a liblmdb whose keys cannot reach
 * GW_CACHE_MAX_KEY, the longest key the layout stores as it is. 0, or -1 with a reason naming the
 * path in err. */
int cache_env_open(struct cache_env *ce, struct gw_err *err);

/* After MDB_MAP_FULL (no transaction open): doubles the map, bounded by the free space of
 * the filesystem. 0 when it grew (*old_size, *new_size set), -1 with a reason when there is
 * no room left. */
int cache_env_grow(struct cache_env *ce, int64_t *old_size, int64_t *new_size, struct gw_err *err);

/* The cause behind an error LMDB returned: EIO is ENOSPC when the filesystem holding the
 * environment has less than a page left (LMDB turns a write that stopped short, which is
 * how a full filesystem shows, into EIO); anything else is returned as it is. */
int cache_env_cause(struct cache_env *ce, int rc);

void cache_env_close(struct cache_env *ce);

/* The lock file's mode for a data mode: readers must write the lock file (they register in
 * its reader table), so every class that may read gets write too. */
unsigned cache_env_lock_mode(unsigned mode);

#endif
