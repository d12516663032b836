-- gwsync.cache: one nginx worker's view of the gwsync LMDB cache (docs/lmdb-cache.md) and the
-- route table built from it.
--
-- Two paths, two read transactions:
-- * current(), per request: one renewed read transaction and one mdb_get of meta/generation
--   (a key and value buffer made once: no cdata, no system call, no lock), then the live route
--   table. It never reads or builds anything: it only says whether the cache holds a newer
--   generation, so that the caller can wake the refresh (gwsync.updater).
-- * refresh(), off the request path (a timer): reads what changed since the generation the
--   table was built from and applies it. With the cache's change log (gwsync.changes) that is
--   the changed keys only, looked up in the same read transaction as `generation`; a group
--   rewritten whole (`replace`), a gap in the log, no log, or the first load read whole
--   groups instead, and compare each value with the one the table holds: only items whose raw
--   JSON differs are compiled again (gwsync.items). The changes are then applied to the live
--   table in one step that does not yield (gwsync.routes: a request sees the table before or
--   after them), or, when there are many (a first load, a large batch), to a new table built
--   off to the side from the live table's compiled items and swapped in at the end.
--   refresh() calls opts.pace() between slices of long work (reading a group, compiling,
--   building): inside nginx pace() lets requests run and updates nginx's clock.
--
-- Why it is built this way:
-- * The environment is opened lazily, in the worker (an LMDB env must not cross fork(), and
--   init_by_lua runs in the master); if it is absent it is tried again on the next refresh,
--   so nginx may start before gwsyncd has written anything.
-- * The environment may be replaced under a running nginx (the directory removed and written
--   afresh at the same path: an operator's reset, a restore, a reinstall). The worker would go
--   on reading the deleted file it still maps, which no writer updates any more. So each
--   refresh (the worker's timer, every refresh_interval) compares the identity (device and
--   inode) of <path>/data.mdb with that of the file the env maps; when they differ it logs
--   once, closes the env, opens the new one and reads it whole, whatever its generation
--   (a new environment counts from 1 again). Until then, and while the file is absent, the
--   last good table serves.
-- * A failed read, a refused `format` or a failed build keeps the last good table: serving
--   the last configuration beats refusing traffic (the same rule gwsyncd follows).
-- * Every condition is reported once when it starts (self.state), never per request.
-- * The logger and the pace are passed in, so this file runs under plain luajit too (tests
--   call refresh() and table() directly).
local lmdb = require "gwsync.lmdb"
local contract = require "gwsync.contract"
local items = require "gwsync.items"
local routes = require "gwsync.routes"
local changes = require "gwsync.changes"

local GROUPS = routes.GROUPS       -- PLUGIN, SELECTOR, RULE, DISCOVER_UPSTREAM
local GROUPSET = {}
for _, g in ipairs(GROUPS) do GROUPSET[g] = true end
local FORMAT = contract.FORMAT
local META = contract.META_DB
local CHANGES = contract.CHANGES_DB
local KEY_FORMAT = contract.KEY_FORMAT
local GENERATION = lmdb.key(contract.KEY_GENERATION) -- asked on every request: one MDB_val, made once

local M = {}
local Cache = {}
Cache.__index = Cache

-- a batch of more changed items than this is applied to a new table built off to the side
-- (in slices, the live table serving meanwhile), not to the live table in one step
M.BIG = 2000

local function default_log(level, msg)
    io.stderr:write("[", level, "] ", msg, "\n")
end

local function now_ms()
    if ngx and ngx.now then return ngx.now() * 1000 end
    return os.time() * 1000
end

-- new{ path = dir, log = fn(level, msg), pace = fn() | nil, now_ms = fn() | nil } -> cache
-- levels given to log: "notice", "warn", "error".
function M.new(opts)
    assert(opts and opts.path, "cache.new needs a path")
    return setmetatable({
        path = opts.path,
        log = opts.log or default_log,
        pace = opts.pace,
        now_ms = opts.now_ms or now_ms,
        big = opts.big or M.BIG,
        env = nil, reader = nil, treader = nil, meta = nil,
        tbl = nil,                 -- the live route table (gwsync.routes)
        generation = nil,          -- the generation last looked at (applied, refused or failed)
        built_generation = nil,    -- the generation self.tbl reflects
        need_full = false,         -- the next refresh reads everything (format came back...)
        failed_generation = nil,   -- a full build failed at this generation: wait for another
        state = nil,               -- the condition last reported
        stats = { full = 0, incremental = 0, items = 0 },
    }, Cache)
end

-- report(key, level, msg): log only when the condition changes.
function Cache:report(key, level, msg)
    if self.state ~= key then
        self.state = key
        self.log(level, "gwsync cache " .. self.path .. ": " .. msg)
    end
end

-- close(): every transaction on the env first (LMDB requires it): the cache's own and those
-- of the tables that follow it (`followers`, e.g. the sign table: each has release()).
function Cache:close()
    for _, f in ipairs(self.followers or {}) do f:release() end
    if self.reader then self.reader:close() end
    if self.treader then self.treader:close() end
    if self.env then self.env:close() end
    self.env, self.reader, self.treader, self.meta = nil, nil, nil, nil
end

-- Open the env and the meta database if not done yet. true | nil
function Cache:open()
    if not self.env then
        local env, err = lmdb.open(self.path)
        if not env then
            self:report("absent", "warn", "cannot open the environment (" .. err
                .. "); will retry" .. (self.tbl and ", serving the last routes" or ""))
            return nil
        end
        self.env, self.reader, self.treader = env, env:reader(), env:reader()
        self.identity = env:identity()
    end
    if not self.meta then
        local dbi, err, code = self.env:dbi(META)
        if not dbi then
            if code == lmdb.NOTFOUND then
                self:report("nometa", "warn", "no `meta` database yet (gwsyncd has written nothing)")
            else
                self:report("meta:" .. err, "error", "cannot open `meta`: " .. err)
            end
            return nil
        end
        self.meta = dbi
    end
    return true
end

-- The group databases and the change log that exist (missing groups are empty groups).
function Cache:open_dbis()
    local dbis = { meta = self.meta }
    for _, name in ipairs(GROUPS) do
        local dbi, err, code = self.env:dbi(name)
        if dbi then
            dbis[name] = dbi
        elseif code ~= lmdb.NOTFOUND then
            return nil, "cannot open `" .. name .. "`: " .. err
        end
    end
    local dbi, err, code = self.env:dbi(CHANGES)
    if dbi then
        dbis.changes = dbi
    elseif code ~= lmdb.NOTFOUND then
        return nil, "cannot open `" .. CHANGES .. "`: " .. err
    end
    return dbis
end

-- current() -> live table | nil, newer (the cache holds a generation the table does not
-- reflect yet). The per-request path: never reads more than `generation`.
function Cache:current()
    local env = self.env
    if not env or not self.meta then return self.tbl, self.tbl == nil end
    local r = self.reader
    local ok = r:begin()
    if not ok then return self.tbl, false end   -- the refresh reports read errors
    local gen = r:get(self.meta, GENERATION)
    r:reset()
    return self.tbl, gen ~= self.generation
end

---------------------------------------------------------------------------------------------
-- refresh
---------------------------------------------------------------------------------------------

---------------------------------------------------------------------------------------------
-- the garbage collector during a whole read or a table built aside
---------------------------------------------------------------------------------------------
-- A first load makes a worker's whole table (about 130 MB of Lua heap at 10,000 x 10), and
-- with the collector running each of its cycles walks all that is built so far: a third of
-- the load's time went to collecting tables that were all still in use. So the collector is
-- stopped (held) while a group is read whole or a table is built aside, and restarted when the
-- refresh ends, whatever its outcome; it then walks the new table once, in its ordinary
-- incremental steps. While a table is built aside the worker serves requests, whose garbage
-- waits meanwhile: if the heap grows by more than GC_HOLD_MAX (KB) past what it was when held,
-- the collector is restarted at once.
M.GC_HOLD_MAX = 256 * 1024

function Cache:gc_hold()
    if not self.gc_held then
        self.gc_held = collectgarbage("count")
        collectgarbage("stop")
    end
end

function Cache:gc_release()
    if self.gc_held then
        self.gc_held = false
        collectgarbage("restart")
    end
end

local function pace_of(self)
    local pace = self.pace or function() end
    return function()
        local held = self.gc_held
        if held and collectgarbage("count") > held + M.GC_HOLD_MAX then self:gc_release() end
        pace()
    end
end

-- The changes a refresh applies: three parallel lists (no table per change): group, key and
-- the compiled item (false: deleted).
local function new_list() return { n = 0, g = {}, k = {}, it = {} } end
local function add(list, g, k, it)
    local n = list.n + 1
    list.n = n
    list.g[n], list.k[n], list.it[n] = g, k, it
end

-- the changed value of (group, key) at p, n: compiled and added, unless the table holds an
-- item with the same digest -> whether the table holds an item for key.
-- compile: items.compile_raw (raises on a bug: the whole read is then done again with
-- items.compile_at, which catches it per item) or items.compile_at.
local function put(self, list, group, key, p, n, now, compile)
    local dg = items.digest_of(p, n)
    local old = self.tbl and self.tbl:get(group, key)
    if not old or old.digest ~= dg then
        add(list, group, key, compile(group, key, p, n, now, dg))
    end
    return old ~= nil
end

-- read a group whole and add what differs from the table (paced; values are compiled where
-- LMDB has them, in this transaction)
local function walk(self, list, txn, group, dbi, now, pace, compile)
    self:gc_hold()
    local tbl = self.tbl
    local seen = tbl and {} or nil
    local n, held = 0, 0
    if dbi then
        local cur, err = txn:cursor(dbi)
        if not cur then return nil, err end
        local k, p, len = cur:first_at()
        while k do
            if put(self, list, group, k, p, len, now, compile) then held = held + 1 end
            if seen then seen[k] = true end
            n = n + 1
            if n % 32 == 0 then pace() end
            k, p, len = cur:next_at()
        end
        cur:close()
        if p then return nil, p end    -- cursor_get's error message (k nil, p err)
    end
    if tbl and held < tbl.counts[group] then
        -- deleted: held by the table, not in the group
        tbl:each_item(group, function(key)
            if not seen[key] then add(list, group, key, false) end
        end)
    end
    return true
end

-- read_changes(txn, dbis, gen, now, pace, safe) -> list of changes (compiled), how | nil, err
-- safe: compile each item under its own pcall (else a bug raises out of the whole read)
function Cache:read_changes(txn, dbis, gen, now, pace, safe)
    local compile = safe and items.compile_at or items.compile_raw
    local list = new_list()
    local plan, why
    if self.tbl and not self.need_full and self.generation then
        plan, why = changes.read(txn, dbis, tonumber(self.generation) or 0, gen, GROUPSET)
    else
        why = self.tbl and "full read" or "first load"
    end
    if plan then
        local n = 0
        for _, group in ipairs(GROUPS) do
            local p = plan[group]
            local dbi = dbis[group]
            if p and p.replace then
                local ok, err = walk(self, list, txn, group, dbi, now, pace, compile)
                if not ok then return nil, "reading `" .. group .. "`: " .. tostring(err) end
            elseif p then
                for key in pairs(p.keys) do
                    local v, len
                    if dbi then
                        v, len = txn:get_at(dbi, key)
                        if v == nil and len then return nil, "reading `" .. group .. "`: " .. len end
                    end
                    if v == nil then
                        if self.tbl:get(group, key) then add(list, group, key, false) end
                    else
                        put(self, list, group, key, v, len, now, compile)
                    end
                    n = n + 1
                    if n % 32 == 0 then
                        if n > self.big then self:gc_hold() end -- a table built aside follows
                        pace()
                    end
                end
            end
        end
        return list, "change log"
    end
    for _, group in ipairs(GROUPS) do
        local ok, err = walk(self, list, txn, group, dbis[group], now, pace, compile)
        if not ok then return nil, "reading `" .. group .. "`: " .. tostring(err) end
    end
    return list, why
end

-- The groups marked stale (snapshot data not yet confirmed by an admin), from meta.
local function stale_groups(txn, meta)
    local out = {}
    for _, name in ipairs(GROUPS) do
        local v = txn:get(meta, name)
        if v and v:find('"stale"%s*:%s*true') then out[#out + 1] = name end
    end
    return out
end

-- apply in place: one step, no yield
local function apply_live(tbl, list, gen)
    local g, k, its = list.g, list.k, list.it
    for i = 1, list.n do
        tbl:set(g[i], k[i], its[i] or nil)
    end
    tbl:finish()
    tbl.generation = gen
end

-- a new table: the live one's items (those not changed) plus the changes (paced)
local function build_aside(self, list, pace)
    self:gc_hold()
    local t = routes.new()
    local g, k, its = list.g, list.k, list.it
    local n = 0
    if self.tbl then
        local changed = {}
        for _, group in ipairs(GROUPS) do changed[group] = {} end
        for i = 1, list.n do changed[g[i]][k[i]] = true end
        for _, group in ipairs(GROUPS) do
            local ch = changed[group]
            self.tbl:each_item(group, function(key, it)
                if not ch[key] then t:set(group, key, it) end
                n = n + 1
                if n % 128 == 0 then pace() end
            end)
        end
    end
    for i = 1, list.n do
        if its[i] then t:set(g[i], k[i], its[i]) end
        if i % 128 == 0 then pace() end
    end
    local m = 0
    t:finish(function()
        m = m + 1
        if m % 8 == 0 then pace() end
    end)
    return t
end

local function summary(list)
    local per, order = {}, {}
    for i = 1, list.n do
        local g = list.g[i]
        if not per[g] then per[g] = 0; order[#order + 1] = g end
        per[g] = per[g] + 1
    end
    local out = {}
    for i, g in ipairs(order) do out[i] = g .. " " .. per[g] end
    return #out > 0 and table.concat(out, ", ") or "none"
end

-- refresh() -> true when the table changed. Reads and applies what changed since the table's
-- generation; keeps the last good table on any failure (logged once). The collector, if held
-- during the refresh, runs again when it returns (or raises).
function Cache:refresh()
    local ok, res = pcall(self.refresh_held, self)
    self:gc_release()
    if not ok then error(res, 0) end
    return res
end

-- replaced() -> true when <path>/data.mdb is no longer the file the open env maps (it was
-- removed, or removed and written afresh); the env is then closed and the state reset so that
-- open() takes the new one and the refresh reads it whole. Logged once per change.
function Cache:replaced()
    if not self.env or not self.identity then return false end
    local now = lmdb.identity(self.path .. "/data.mdb")
    if now == self.identity then return false end
    if not now then
        self:report("gone:" .. self.identity, "warn", "data.mdb was removed (the environment is"
            .. " being replaced?); serving the last routes until a new one appears")
        return false
    end
    self:report("replaced:" .. now, "warn", "the environment was replaced (data.mdb is another"
        .. " file: " .. self.identity .. " -> " .. now .. "); reopening it and reading it whole")
    self:close()
    self.identity, self.resized = nil, nil
    self.generation, self.failed_generation, self.need_full = nil, nil, true
    return true
end

function Cache:refresh_held()
    self:replaced()
    if not self:open() then return false end
    local pace = pace_of(self)
    local txn = self.treader
    local ok, berr = txn:begin()
    if not ok then
        self:report("txn:" .. berr, "error", "read transaction failed: " .. berr
            .. (self.tbl and "; serving the last routes" or ""))
        return false
    end
    if (self.env.resized or 0) ~= (self.resized or 0) then
        self.resized = self.env.resized
        self.log("notice", "gwsync cache " .. self.path .. ": the writer grew the map (MDB_MAP_RESIZED);"
            .. " adopted the new size")
    end
    local gen, gerr = txn:get(self.meta, GENERATION)
    if gerr then
        txn:reset()
        self:report("gen:" .. gerr, "error", "reading `generation` failed: " .. gerr)
        return false
    end
    if gen == self.generation and not (self.need_full and gen ~= self.failed_generation) then
        txn:reset()
        return false
    end
    -- group handles first: a transaction begun before their commit could not use them
    txn:reset()
    local dbis, derr = self:open_dbis()
    if not dbis then
        self:report("groups:" .. derr, "error", derr .. (self.tbl and "; serving the last routes" or ""))
        return false
    end
    ok, berr = txn:begin()
    if not ok then
        self:report("txn:" .. berr, "error", "read transaction failed: " .. berr)
        return false
    end
    gen = txn:get(self.meta, GENERATION)
    local format = txn:get(self.meta, KEY_FORMAT)
    if format ~= FORMAT then
        txn:reset()
        self.generation = gen
        self.need_full = true
        self:report("format:" .. tostring(format), "error",
            "refusing the environment: meta `format` is " .. (format and ("'" .. format .. "'") or "missing")
            .. ", this reader understands only " .. FORMAT
            .. (self.tbl and "; serving the last routes" or "; no routes"))
        return false
    end
    local gnum = tonumber(gen)
    if self.generation and gnum and tonumber(self.generation) and gnum < tonumber(self.generation) then
        self.need_full = true  -- the cache went back (a new environment): read it whole
    end
    local t0 = self.now_ms()
    -- items are compiled while they are read, in place; a compile that raises (a bug, or data
    -- nothing foresaw) fails the read, which is then done again catching it per item (a pcall
    -- per item would keep LuaJIT from compiling the read)
    local ok_read, list, how = pcall(self.read_changes, self, txn, dbis, gnum or 0, t0, pace)
    if not ok_read then
        ok_read, list, how = pcall(self.read_changes, self, txn, dbis, gnum or 0, t0, pace, true)
        if not ok_read then list, how = nil, list end
    end
    local stale = list and stale_groups(txn, self.meta)
    txn:reset()
    if not list then
        self:report("read:" .. tostring(how), "error", tostring(how) .. "; serving the last routes")
        return false
    end
    local live = self.tbl
    local full = not live or self.need_full or list.n > self.big
    local tbl = live
    if full then
        local pok, t = pcall(build_aside, self, list, pace)
        if not pok then
            self.generation, self.failed_generation, self.need_full = gen, gen, true
            self:report("build:" .. tostring(gen), "error", "building the route table failed for generation "
                .. tostring(gen) .. " (" .. tostring(t) .. "); "
                .. (live and ("keeping generation " .. tostring(self.built_generation)) or "no routes"))
            return false
        end
        tbl = t
        t.generation = gen
        self.tbl = t
        self.stats.full = self.stats.full + 1
    else
        local pok, err = pcall(apply_live, live, list, gen)
        if not pok then
            -- the live table may be half updated: the next refresh builds a new one
            self.generation, self.need_full, self.failed_generation = nil, true, nil
            self:report("apply:" .. tostring(gen), "error", "applying generation " .. tostring(gen)
                .. " failed (" .. tostring(err) .. "); rebuilding the table")
            return false
        end
        self.stats.incremental = self.stats.incremental + 1
    end
    self.stats.items = self.stats.items + list.n
    self.generation, self.built_generation = gen, gen
    self.need_full, self.failed_generation = false, nil
    local ms = self.now_ms() - t0
    self:report("built:" .. tostring(gen), "notice", "routes built from generation " .. tostring(gen)
        .. " (" .. tbl:counts_text() .. "); " .. (full and "whole table" or "in place")
        .. " from " .. how .. ", changed " .. summary(list)
        .. string.format(" in %.0f ms", ms)
        .. (#stale > 0 and ("; stale snapshot data in " .. table.concat(stale, ", ")) or ""))
    local nw = 0
    for i = 1, list.n do
        local it = list.it[i]
        local w = it and tbl:warnings_of(list.g[i], it)
        if w then
            for _, line in ipairs(w) do
                nw = nw + 1
                if nw <= 20 then
                    self.log("warn", "gwsync route table generation " .. tostring(gen) .. ": " .. line)
                end
            end
        end
    end
    if nw > 20 then
        self.log("warn", "gwsync route table generation " .. tostring(gen) .. ": " .. (nw - 20) .. " more warnings")
    end
    return true
end

-- table() -> the current route table | nil: refresh() first when the cache changed (plain
-- luajit, tests; nginx uses current() and refreshes from a timer)
function Cache:table()
    self:refresh()
    return self.tbl
end

return M
