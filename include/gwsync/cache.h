/*
 * gwsync LMDB cache contract: the names a gateway process needs to read the environment
 * the `lmdb` subscriber writes (docs/lmdb-cache.md is the full contract).
 *
 * The header has no LMDB dependency on purpose: it is the layout, not a client. A reader
 * opens the environment directory read-only with liblmdb (or any binding of it: LuaJIT's
 * FFI, Python's lmdb), sets maxdbs to at least GW_CACHE_MAX_DBS, and then finds
 *
 *   database GW_CACHE_META_DB ("meta"):
 *     GW_CACHE_KEY_FORMAT       -> "1"     the layout's version (GW_CACHE_FORMAT)
 *     GW_CACHE_KEY_GENERATION   -> "1234"  decimal, +1 on every commit
 *     GW_CACHE_KEY_CHANGES_FROM -> "235"   decimal, the oldest generation in the log
 *     "<GROUP>"                 -> {"md5":"..","lastModifyTime":N,"count":N,"stale":false}
 *   one database per group, named as the group ("PLUGIN", "SELECTOR", "RULE", ...; the
 *   names of gw_group_name() in subscriber.h):
 *     item key -> the item's raw JSON, byte for byte as the admin sent it
 *     (a key longer than GW_CACHE_MAX_KEY, or beginning with GW_CACHE_LONG_KEY_PREFIX, is
 *     stored under GW_CACHE_LONG_KEY_PREFIX + the hex SHA-256 of the key)
 *   database GW_CACHE_CHANGES_DB ("changes"), what each commit touched:
 *     "00000000000000001234" -> {"group":"RULE","put":["k1"],"del":["k2"]}
 *                               or {"group":"RULE","replace":true}
 *
 * Keys and values carry no terminating NUL. Every commit changes one group (its items, its
 * meta entry, the generation and its change-log entry together), so one read transaction
 * sees each group as exactly one admin version, and the log says which keys got there.
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

/** The named database of the change log: one entry per commit, keyed by the generation the
 *  commit produced as exactly 20 ASCII decimal digits, zero-padded (generation 42 is
 *  "00000000000000000042", so a cursor walks it in generation order). The value is one
 *  JSON object:
 *    {"group":"RULE","put":["k1","k2"],"del":["k3"]}  the commit put (added or updated)
 *        k1 and k2 in database RULE and deleted k3; keys as stored (GW_CACHE_LONG_KEY_PREFIX
 *        form for long keys); either list may be empty (only the meta entry changed);
 *    {"group":"RULE","replace":true}  the commit rewrote the group whole: re-read it.
 *  A reader that last applied generation g and now reads generation G > g in one read
 *  transaction: if GW_CACHE_KEY_CHANGES_FROM is present and <= g + 1, walk the entries
 *  g+1 .. G (mdb_cursor_get MDB_SET_KEY at g+1, then MDB_NEXT; each key must be the next
 *  generation, else it is a gap), fold them per group (the last of put/del wins; replace
 *  means re-read the group), then mdb_get each changed key from its group in the same
 *  transaction (found: upsert the value; MDB_NOTFOUND: delete). Otherwise (no log, a
 *  reader further behind than the log, a gap, an entry it cannot parse, G < g, the first
 *  load) it reads every group it uses whole. The log is optional: format-1 readers that
 *  ignore it are unaffected. */
#define GW_CACHE_CHANGES_DB "changes"

/** Key in GW_CACHE_META_DB: decimal, the oldest generation whose entry GW_CACHE_CHANGES_DB
 *  holds; the log holds every generation from it to GW_CACHE_KEY_GENERATION inclusive.
 *  Absent: there is no log (an older writer, or the `change_log` option is 0); never
 *  trust entries of GW_CACHE_CHANGES_DB then. */
#define GW_CACHE_KEY_CHANGES_FROM "changes_from"

/** The longest item key stored as it is (LMDB's maximum key size in Debian's liblmdb,
 *  mdb_env_get_maxkeysize()). A longer item key is stored under a derived key. */
#define GW_CACHE_MAX_KEY 511

/** The derived keys' prefix: an item whose key is longer than GW_CACHE_MAX_KEY bytes, or
 *  begins with this prefix, is stored under this prefix + the 64 lower-case hex digits of
 *  SHA-256 over the key's bytes (72 bytes in all). The value is the item's raw JSON as
 *  always, which holds the fields the key is made of. Readers that walk a group need
 *  nothing special; a reader that looks an item up by its key applies the same rule. Every
 *  key starting with the prefix is derived, so a derived key never equals a real one. */
#define GW_CACHE_LONG_KEY_PREFIX "#sha256:"

/** The writer opens at most this many named databases; readers should pass at least this
 *  to mdb_env_set_maxdbs() so that a newer agent's groups never make their open fail. */
#define GW_CACHE_MAX_DBS 32

/** Environment flags a reader should use: MDB_RDONLY. Readers must also handle
 *  MDB_MAP_RESIZED from mdb_txn_begin() (call mdb_env_set_mapsize(env, 0), then begin
 *  again): the writer grows the map when it fills. */

#endif /* GWSYNC_CACHE_H */
