-- gwsync.lmdb: the few liblmdb calls a read-only reader of the gwsync cache needs, through
-- LuaJIT's FFI (no C module to build into nginx).
--
-- Why it is shaped this way:
-- * liblmdb.so.0 is loaded by its versioned name: the unversioned liblmdb.so only exists
--   with liblmdb-dev installed.
-- * The environment is opened MDB_RDONLY|MDB_NOTLS: with NOTLS a reader slot belongs to a
--   transaction object, not to the OS thread, so one worker may keep its reusable per-request
--   transaction (reset between requests) and still begin the short transaction that opens
--   database handles.
-- * Database handles are opened in their own read transaction that is committed (that is
--   what makes a handle usable by later transactions); a transaction begun before that
--   commit cannot use it, so callers open handles first and then renew their transaction.
-- * MDB_MAP_RESIZED (the writer grew the map) is answered by mdb_env_set_mapsize(env, 0)
--   and one more try, as docs/lmdb-cache.md asks of readers.
-- * Everything returned is a Lua string copy (ffi.string), except from the *_at calls, which
--   give a value as a pointer into the map and a length, for a caller that reads the value
--   in place (the route table's first load reads 120,000 values: no string made per value).
--   Such a pointer is valid until the transaction ends (reset or close), and the map is
--   never remapped while a transaction of the env is active (below).
-- * A worker holds two transaction objects: the per-request one (renewed and reset around
--   each request) and the refresh timer's, which may stay open across ngx.sleep(0) while it
--   reads a large group in slices. mdb_env_set_mapsize(env, 0) remaps the file, which would
--   pull the pages from under an open transaction, so the MAP_RESIZED answer is given only
--   when no other transaction of this env is active (env.active counts them); otherwise the
--   begin fails with MAP_RESIZED and the caller tries again later.
-- Errors are returned as nil, message, code (message from mdb_strerror).
local ffi = require "ffi"

local C_DEFS = [[
typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef struct MDB_val { size_t mv_size; void *mv_data; } MDB_val;
int  mdb_env_create(MDB_env **env);
int  mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs);
int  mdb_env_open(MDB_env *env, const char *path, unsigned int flags, unsigned int mode);
void mdb_env_close(MDB_env *env);
int  mdb_env_set_mapsize(MDB_env *env, size_t size);
int  mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
int  mdb_txn_commit(MDB_txn *txn);
void mdb_txn_abort(MDB_txn *txn);
void mdb_txn_reset(MDB_txn *txn);
int  mdb_txn_renew(MDB_txn *txn);
int  mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int  mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int  mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
void mdb_cursor_close(MDB_cursor *cursor);
int  mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, int op);
char *mdb_strerror(int err);
int  mdb_env_get_fd(MDB_env *env, int *fd);
]]

-- A second copy of this module (package.loaded cleared by a test) must not re-declare
-- the types: ffi.cdef of an existing struct raises "attempt to redefine".
if not pcall(ffi.typeof, "MDB_val") then
    ffi.cdef(C_DEFS)
end

-- stat(2) and fstat(2), for a file's identity (Env:identity, M.identity). glibc 2.33+ exports
-- both symbols (Debian 12 has 2.36). struct stat is read as bytes: st_dev and st_ino are the
-- first two 64-bit fields on every 64-bit Linux ABI LuaJIT runs on (x86_64, arm64, the
-- generic layout); 256 bytes cover the largest struct stat there.
pcall(ffi.cdef, [[
int stat(const char *path, void *buf);
int fstat(int fd, void *buf);
]])
local statbuf = ffi.new("uint64_t[32]")
local fdbuf = ffi.new("int[1]")

local function identity_of(rc)
    if rc ~= 0 then return nil end
    return string.format("%d:%d", tonumber(statbuf[0]), tonumber(statbuf[1]))
end

local lib = ffi.load("liblmdb.so.0")
local u8p = ffi.typeof("const uint8_t *")

local M = {
    RDONLY = 0x20000,
    NOTLS = 0x200000,
    NOTFOUND = -30798,
    MAP_RESIZED = -30785,
    MAX_DBS = require("gwsync.contract").MAX_DBS,
}

local MDB_FIRST, MDB_NEXT, MDB_SET_KEY, MDB_SET_RANGE = 0, 8, 16, 17

local function fail(rc)
    return nil, ffi.string(lib.mdb_strerror(rc)), rc
end
M.strerror = function(rc) return ffi.string(lib.mdb_strerror(rc)) end

local Env = {}
Env.__index = Env
local Txn = {}
Txn.__index = Txn

-- open(path [, maxdbs]) -> env | nil, err, code. Read-only; the directory must exist.
function M.open(path, maxdbs)
    local pp = ffi.new("MDB_env *[1]")
    local rc = lib.mdb_env_create(pp)
    if rc ~= 0 then return fail(rc) end
    local handle = pp[0]
    rc = lib.mdb_env_set_maxdbs(handle, maxdbs or M.MAX_DBS)
    if rc == 0 then
        rc = lib.mdb_env_open(handle, path, M.RDONLY + M.NOTLS, 0)
    end
    if rc ~= 0 then
        lib.mdb_env_close(handle)
        return fail(rc)
    end
    return setmetatable({ handle = handle, path = path, dbis = {}, active = 0 }, Env)
end

-- identity(path) -> "dev:inode" of the file at path | nil (absent or unreadable)
function M.identity(path)
    return identity_of(ffi.C.stat(path, statbuf))
end

-- env:identity() -> "dev:inode" of the data file this env maps (fstat of LMDB's descriptor)
function Env:identity()
    if self.handle == nil or lib.mdb_env_get_fd(self.handle, fdbuf) ~= 0 then return nil end
    return identity_of(ffi.C.fstat(fdbuf[0], statbuf))
end

function Env:close()
    if self.handle ~= nil then
        lib.mdb_env_close(self.handle)
        self.handle = nil
        self.dbis = {}
    end
end

-- The MDB_MAP_RESIZED answer: adopt the writer's new map size. 0 | rc
-- Refused (rc stays MAP_RESIZED) while another transaction of this env is open: the remap
-- would invalidate the pages it reads.
local function adopt_size(env)
    if env.active > 0 then return M.MAP_RESIZED end
    env.resized = (env.resized or 0) + 1
    return lib.mdb_env_set_mapsize(env.handle, 0)
end

local function begin_raw(env)
    local pp = ffi.new("MDB_txn *[1]")
    local rc = lib.mdb_txn_begin(env.handle, nil, M.RDONLY, pp)
    if rc == M.MAP_RESIZED then
        rc = adopt_size(env)
        if rc == 0 then rc = lib.mdb_txn_begin(env.handle, nil, M.RDONLY, pp) end
    end
    if rc ~= 0 then return fail(rc) end
    return pp[0]
end

-- dbi(name) -> dbi | nil, err, code. Cached once opened; a database that does not exist
-- yet gives MDB_NOTFOUND (code M.NOTFOUND) and is tried again on the next call.
function Env:dbi(name)
    local d = self.dbis[name]
    if d then return d end
    local txn, err, code = begin_raw(self)
    if not txn then return nil, err, code end
    local out = ffi.new("MDB_dbi[1]")
    local rc = lib.mdb_dbi_open(txn, name, 0, out)
    if rc ~= 0 then
        lib.mdb_txn_abort(txn)
        return fail(rc)
    end
    rc = lib.mdb_txn_commit(txn)   -- commit, not abort: it keeps the handle for later txns
    if rc ~= 0 then return fail(rc) end
    d = tonumber(out[0])
    self.dbis[name] = d
    return d
end

-- Forget a handle (after MDB_BAD_DBI or similar) so the next dbi() opens it again.
function Env:forget(name)
    self.dbis[name] = nil
end

-- reader() -> a reusable read transaction object, not begun yet (call :begin()).
function Env:reader()
    return setmetatable({ env = self, handle = nil, active = false,
                          key = ffi.new("MDB_val[1]"), val = ffi.new("MDB_val[1]") }, Txn)
end

-- begin() -> true | nil, err, code. Renews the reset transaction (cheap) or begins one.
function Txn:begin()
    if self.active then return true end
    local env = self.env
    if self.handle == nil then
        local h, err, code = begin_raw(env)
        if not h then return nil, err, code end
        self.handle = h
    else
        local h = self.handle
        local rc = lib.mdb_txn_renew(h)
        if rc == M.MAP_RESIZED then
            rc = adopt_size(env)
            if rc == 0 then rc = lib.mdb_txn_renew(h) end
        end
        if rc ~= 0 then
            -- a failed renew leaves the transaction finished: drop it, begin anew next time
            lib.mdb_txn_abort(h)
            self.handle = nil
            return fail(rc)
        end
    end
    self.active = true
    env.active = env.active + 1
    return true
end

-- reset(): end the snapshot, keep the object and its reader slot for the next begin().
function Txn:reset()
    if self.active then
        lib.mdb_txn_reset(self.handle)
        self.active = false
        self.env.active = self.env.active - 1
    end
end

-- close(): give the reader slot back (before closing the env).
function Txn:close()
    if self.handle ~= nil then
        lib.mdb_txn_abort(self.handle)
        self.handle = nil
        if self.active then self.env.active = self.env.active - 1 end
        self.active = false
    end
end

-- get(dbi, key) -> value string | nil (absent) | nil, err, code
-- key is a string, or an MDB_val made once by M.key() (no cdata made per call).
function Txn:get(dbi, key)
    local k, v = key, self.val
    if type(key) == "string" then
        k = self.key
        k[0].mv_size = #key
        k[0].mv_data = ffi.cast("void *", key)
    end
    local rc = lib.mdb_get(self.handle, dbi, k, v)
    if rc == M.NOTFOUND then return nil end
    if rc ~= 0 then return fail(rc) end
    return ffi.string(v[0].mv_data, v[0].mv_size)
end

-- get_at(dbi, key) -> pointer, length | nil (absent) | nil, err, code: the value in place
-- (valid until this transaction is reset)
function Txn:get_at(dbi, key)
    local k, v = self.key, self.val
    k[0].mv_size = #key
    k[0].mv_data = ffi.cast("void *", key)
    local rc = lib.mdb_get(self.handle, dbi, k, v)
    if rc == M.NOTFOUND then return nil end
    if rc ~= 0 then return fail(rc) end
    return ffi.cast(u8p, v[0].mv_data), tonumber(v[0].mv_size)
end

-- key(s) -> an MDB_val[1] for a key asked on every request (the generation): made once, it
-- points at its own copy of s, which lives as long as the key does.
local key_bufs = setmetatable({}, { __mode = "k" })
function M.key(s)
    local buf = ffi.new("char[?]", #s + 1, s)
    local k = ffi.new("MDB_val[1]")
    k[0].mv_size = #s
    k[0].mv_data = buf
    key_bufs[k] = buf
    return k
end

-- A cursor over one database of a begun transaction, for reads done in slices:
--   local cur = txn:cursor(dbi); local k, v = cur:first(); while k do ...; k, v = cur:next() end
--   cur:close()   (before the transaction is reset)
-- first()/next()/seek(key) -> key, value (strings) | nil (end) | nil, err, code.
local Cursor = {}
Cursor.__index = Cursor

function Txn:cursor(dbi)
    local pp = ffi.new("MDB_cursor *[1]")
    local rc = lib.mdb_cursor_open(self.handle, dbi, pp)
    if rc ~= 0 then return fail(rc) end
    return setmetatable({ cur = pp[0], key = ffi.new("MDB_val[1]"), val = ffi.new("MDB_val[1]") },
        Cursor)
end

local function cursor_get(self, op)
    local k, v = self.key, self.val
    local rc = lib.mdb_cursor_get(self.cur, k, v, op)
    if rc == M.NOTFOUND then return nil end
    if rc ~= 0 then return fail(rc) end
    return ffi.string(k[0].mv_data, k[0].mv_size), ffi.string(v[0].mv_data, v[0].mv_size)
end

function Cursor:first() return cursor_get(self, MDB_FIRST) end
function Cursor:next() return cursor_get(self, MDB_NEXT) end

-- first_at()/next_at() -> key (a string), value pointer, value length | nil (end) |
-- nil, err, code: the value in place (valid until the transaction is reset)
local function cursor_get_at(self, op)
    local k, v = self.key, self.val
    local rc = lib.mdb_cursor_get(self.cur, k, v, op)
    if rc == M.NOTFOUND then return nil end
    if rc ~= 0 then return fail(rc) end
    return ffi.string(k[0].mv_data, k[0].mv_size), ffi.cast(u8p, v[0].mv_data), tonumber(v[0].mv_size)
end
function Cursor:first_at() return cursor_get_at(self, MDB_FIRST) end
function Cursor:next_at() return cursor_get_at(self, MDB_NEXT) end

-- seek(key, exact) -> the entry at key (exact) or at the first key >= key
function Cursor:seek(key, exact)
    local k = self.key
    k[0].mv_size = #key
    k[0].mv_data = ffi.cast("void *", key)
    self.pin = key   -- keep the key string alive while LMDB may read it
    return cursor_get(self, exact and MDB_SET_KEY or MDB_SET_RANGE)
end

function Cursor:close()
    if self.cur ~= nil then
        lib.mdb_cursor_close(self.cur)
        self.cur = nil
    end
end

-- walk(dbi) -> values, keys (two lists in key order) | nil, err, code
function Txn:walk(dbi)
    local pp = ffi.new("MDB_cursor *[1]")
    local rc = lib.mdb_cursor_open(self.handle, dbi, pp)
    if rc ~= 0 then return fail(rc) end
    local cur = pp[0]
    local k, v = self.key, self.val
    local values, keys, n = {}, {}, 0
    rc = lib.mdb_cursor_get(cur, k, v, MDB_FIRST)
    while rc == 0 do
        n = n + 1
        keys[n] = ffi.string(k[0].mv_data, k[0].mv_size)
        values[n] = ffi.string(v[0].mv_data, v[0].mv_size)
        rc = lib.mdb_cursor_get(cur, k, v, MDB_NEXT)
    end
    lib.mdb_cursor_close(cur)
    if rc ~= M.NOTFOUND then return fail(rc) end
    return values, keys
end

return M
