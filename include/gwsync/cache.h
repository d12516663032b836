/*
 * gwsync LMDB cache contract: the names a gateway process needs to read the environment
 * the `lmdb` subscriber writes (docs/lmdb-cache.md is the full contract).
 *
 * The header has no LMDB dependency on purpose: it is the layout, not a client. A reader
 * opens the environment directory read-only with liblmdb (or any binding of it: LuaJIT's
 * FFI, Python's lmdb), sets maxdbs to at least GW_CACHE_MAX_DBS, and then finds
 *
 *   database GW_CACHE_META_DB ("meta"):
 *     GW_CACHE_KEY_FORMAT      -> "1"           the layout's version (GW_CACHE_FORMAT)
 *     GW_CACHE_KEY_GENERATION  -> "1234"        decimal, +1 on every commit
 *     "<GROUP>"                -> {"md5":"..","lastModifyTime":N,"count":N,"stale":false}
 *   one database per group, named as the group ("PLUGIN", "SELECTOR", "RULE", ...; the
 *   names of gw_group_name() in subscriber.h):
 *     item key -> the item's raw JSON, byte for byte as the admin sent it
 *
 * Keys and values carry no terminating NUL. Every commit changes one group (its items, its
 * meta entry and the generation together), so one read transaction sees each group as
 * exactly one admin version.
 */
#ifndef GWSYNC_CACHE_H
#define GWSYNC_CACHE_H

/** The layout version this header describes (the value of the "format" key). A reader
 *  must refuse an environment whose format is a different number. */
#define GW_CACHE_FORMAT 1

/** The named database holding the per-group metadata and the generation counter. */
#define GW_CACHE_META_DB "meta"

/** Key in GW_CACHE_META_DB: the layout version, decimal text. */
#define GW_CACHE_KEY_FORMAT "format"

/** Key in GW_CACHE_META_DB: a decimal counter incremented by every commit, so one cheap
 *  read tells a reader whether anything changed since it last looked. */
#define GW_CACHE_KEY_GENERATION "generation"

/** The writer opens at most this many named databases; readers should pass at least this
 *  to mdb_env_set_maxdbs() so that a newer agent's groups never make their open fail. */
#define GW_CACHE_MAX_DBS 32

/** Environment flags a reader should use: MDB_RDONLY. Readers must also handle
 *  MDB_MAP_RESIZED from mdb_txn_begin() (call mdb_env_set_mapsize(env, 0), then begin
 *  again): the writer grows the map when it fills. */

#endif /* GWSYNC_CACHE_H */
