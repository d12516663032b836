-- gwsync.cache: one nginx worker's view of the gwsync LMDB cache (docs/lmdb-cache.md).
--
-- Per request the gateway asks cache:table(); that costs one renewed read transaction and
-- one mdb_get of meta/generation (with a key and value buffer made once: no cdata, no
-- system call, no lock per request). Only when the generation differs from the one the
-- worker last looked at are PLUGIN, SELECTOR, RULE and DISCOVER_UPSTREAM read, all in that
-- same transaction (one consistent state of every group), and handed to router.build; the
-- parsed table is then reused by every request until the next change, so no request
-- parses JSON.
--
-- Why it is built this way:
-- * The environment is opened lazily, in the worker (an LMDB env must not cross fork(),
--   and init_by_lua runs in the master); if it is absent it is tried again on the next
--   request, so nginx may start before gwsyncd has written anything.
-- * A failed build, a refused `format` or a read error keeps the last good table: serving
--   the last configuration beats refusing traffic (the same rule gwsyncd follows).
-- * Every condition is reported once when it starts (self.state), never per request.
-- * The router and the logger are passed in, so this file runs under plain luajit too.
local lmdb = require "gwsync.lmdb"

local GROUPS = { "PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM" }
local FORMAT = "1"                 -- GW_CACHE_FORMAT
local META = "meta"
local GENERATION = lmdb.key("generation")   -- asked on every request: one MDB_val, made once

local M = {}
local Cache = {}
Cache.__index = Cache

local function default_log(level, msg)
    io.stderr:write("[", level, "] ", msg, "\n")
end

-- new{ path = dir, router = router module (build), log = fn(level, msg) } -> cache
-- levels given to log: "notice", "warn", "error".
function M.new(opts)
    assert(opts and opts.path, "cache.new needs a path")
    return setmetatable({
        path = opts.path,
        router = opts.router or require "gwsync.router",
        log = opts.log or default_log,
        env = nil, reader = nil, meta = nil,
        tbl = nil,                 -- the last good route table
        generation = nil,          -- the generation last looked at (built, refused or failed)
        built_generation = nil,    -- the generation self.tbl was built from
        state = nil,               -- the condition last reported
    }, Cache)
end

-- report(key, level, msg): log only when the condition changes.
function Cache:report(key, level, msg)
    if self.state ~= key then
        self.state = key
        self.log(level, "gwsync cache " .. self.path .. ": " .. msg)
    end
end

function Cache:close()
    if self.reader then self.reader:close() end
    if self.env then self.env:close() end
    self.env, self.reader, self.meta = nil, nil, nil
end

-- Open the env and the meta database if not done yet. true | nil
function Cache:open()
    if not self.env then
        local env, err = lmdb.open(self.path)
        if not env then
            self:report("absent", "warn", "cannot open the environment (" .. err
                .. "); will retry on each request"
                .. (self.tbl and ", serving the last routes" or ""))
            return nil
        end
        self.env, self.reader = env, env:reader()
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

-- Open the group databases that exist (missing ones are empty groups).
function Cache:open_groups()
    local dbis = {}
    for _, name in ipairs(GROUPS) do
        local dbi, err, code = self.env:dbi(name)
        if dbi then
            dbis[name] = dbi
        elseif code ~= lmdb.NOTFOUND then
            return nil, "cannot open `" .. name .. "`: " .. err
        end
    end
    return dbis
end

-- Read every group in the reader's (begun) transaction. groups, counts | nil, err
function Cache:read_groups(dbis)
    local groups, counts = {}, {}
    for _, name in ipairs(GROUPS) do
        local values = {}
        if dbis[name] then
            local err
            values, err = self.reader:walk(dbis[name])
            if not values then
                self.env:forget(name)
                return nil, "reading `" .. name .. "`: " .. err
            end
        end
        groups[name] = values
        counts[#counts + 1] = name .. " " .. #values
    end
    return groups, table.concat(counts, ", ")
end

-- The groups marked stale (snapshot data not yet confirmed by an admin), from meta.
function Cache:stale_groups()
    local out = {}
    for _, name in ipairs(GROUPS) do
        local v = self.reader:get(self.meta, name)
        if v and v:find('"stale"%s*:%s*true') then out[#out + 1] = name end
    end
    return out
end

function Cache:rebuild()
    -- group handles first: a transaction begun before their commit could not use them
    self.reader:reset()
    local dbis, err = self:open_groups()
    if not dbis then
        self:report("groups:" .. err, "error", err .. "; serving the last routes")
        return
    end
    local ok, berr = self.reader:begin()
    if not ok then
        self:report("txn:" .. berr, "error", "read transaction failed: " .. berr)
        return
    end
    local gen = self.reader:get(self.meta, "generation")
    local format = self.reader:get(self.meta, "format")
    if format ~= FORMAT then
        self.generation = gen
        self:report("format:" .. tostring(format), "error",
            "refusing the environment: meta `format` is " .. (format and ("'" .. format .. "'") or "missing")
            .. ", this reader understands only " .. FORMAT
            .. (self.tbl and "; serving the last routes" or "; no routes"))
        return
    end
    local groups, counts = self:read_groups(dbis)
    if not groups then
        self:report("read:" .. counts, "error", counts .. "; serving the last routes")
        return
    end
    local stale = self:stale_groups()
    self.generation = gen
    local pok, tbl, bad = pcall(self.router.build, groups)
    if not pok or not tbl then
        local why = pok and tostring(bad) or ("error: " .. tostring(tbl))
        self:report("build:" .. tostring(gen), "error", "router.build failed for generation "
            .. tostring(gen) .. " (" .. why .. "); "
            .. (self.tbl and ("keeping generation " .. tostring(self.built_generation)) or "no routes"))
        return
    end
    self.tbl, self.built_generation = tbl, gen
    self:report("built:" .. tostring(gen), "notice", "routes built from generation " .. tostring(gen)
        .. " (" .. counts .. ")" .. (#stale > 0 and ("; stale snapshot data in " .. table.concat(stale, ", ")) or ""))
    local warnings = tbl.warnings or {}
    for i = 1, math.min(#warnings, 20) do
        self.log("warn", "gwsync route table generation " .. tostring(gen) .. ": " .. tostring(warnings[i]))
    end
    if #warnings > 20 then
        self.log("warn", "gwsync route table generation " .. tostring(gen) .. ": "
            .. (#warnings - 20) .. " more warnings")
    end
end

-- table() -> the current route table | nil (none yet). One read transaction per call.
function Cache:table()
    if not self:open() then return self.tbl end
    local ok, err = self.reader:begin()
    if not ok then
        self:report("txn:" .. err, "error", "read transaction failed: " .. err
            .. (self.tbl and "; serving the last routes" or ""))
        return self.tbl
    end
    if (self.env.resized or 0) ~= (self.resized or 0) then
        self.resized = self.env.resized
        self.log("notice", "gwsync cache " .. self.path .. ": the writer grew the map (MDB_MAP_RESIZED);"
            .. " adopted the new size")
    end
    local gen, gerr = self.reader:get(self.meta, GENERATION)
    if gerr then
        self.reader:reset()
        self:report("gen:" .. gerr, "error", "reading `generation` failed: " .. gerr)
        return self.tbl
    end
    if gen ~= self.generation then
        self:rebuild()
    end
    self.reader:reset()
    return self.tbl
end

return M
