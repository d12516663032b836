-- gwsync.contract: the LMDB cache's layout names, as include/gwsync/cache.h defines them (the
-- contract between gwsyncd's `lmdb` subscriber and every reader; docs/lmdb-cache.md).
--
-- Each field is one GW_CACHE_* macro of cache.h, under the macro's name without the prefix,
-- with the same value (numbers that are read or written as text in the cache, such as the
-- format, are kept as the text). The router reads them from here only, never as literals of
-- its own, and tests/lua/test_contract.lua checks every macro of cache.h against this table
-- (a macro added there and not here fails it), so the two cannot drift apart silently.
return {
    FORMAT = "1",                       -- GW_CACHE_FORMAT: the value of meta `format`
    META_DB = "meta",                   -- GW_CACHE_META_DB
    KEY_FORMAT = "format",              -- GW_CACHE_KEY_FORMAT
    KEY_GENERATION = "generation",      -- GW_CACHE_KEY_GENERATION
    CHANGES_DB = "changes",             -- GW_CACHE_CHANGES_DB
    KEY_CHANGES_FROM = "changes_from",  -- GW_CACHE_KEY_CHANGES_FROM
    MAX_KEY = 511,                      -- GW_CACHE_MAX_KEY
    LONG_KEY_PREFIX = "#sha256:",       -- GW_CACHE_LONG_KEY_PREFIX
    MAX_DBS = 32,                       -- GW_CACHE_MAX_DBS
    -- not a macro: a change-log key is the generation as exactly 20 decimal digits (cache.h,
    -- GW_CACHE_CHANGES_DB's comment, which test_contract.lua reads for this width)
    LOG_KEY_DIGITS = 20,
}
