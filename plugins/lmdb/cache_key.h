/*
 * The key an item is stored under in its group's database (docs/lmdb-cache.md, "Long
 * keys"): the item key itself, or, for a key LMDB cannot hold (longer than
 * GW_CACHE_MAX_KEY) or one that begins with the reserved prefix, the prefix plus the hex
 * SHA-256 of the key. One rule for puts, deletes and the change log, so a long key can be
 * written, updated and deleted like any other and never blocks its group.
 */
#ifndef GW_LMDB_CACHE_KEY_H
#define GW_LMDB_CACHE_KEY_H

#include <gwsync/cache.h>
#include <lmdb.h>

/* "#sha256:" + 64 hex digits */
#define CACHE_KEY_DERIVED_LEN (sizeof GW_CACHE_LONG_KEY_PREFIX - 1 + 64)

struct cache_key {
	MDB_val val; /* the stored key: points at the item key or at `derived` */
	char derived[CACHE_KEY_DERIVED_LEN + 1];
};

/* 1 if `key` (of `len` bytes) is stored under a derived key. */
int cache_key_is_long(const char *key, size_t len);

/* Fills *out with the stored form of the NUL-terminated `key` (out->val points into `key`
 * or into *out, so *out must not be copied). 0, or -1 if SHA-256 is unavailable. */
int cache_key_stored(const char *key, struct cache_key *out);

#endif
