-- gwsync.signcache: keeps one worker's sign table (gwsync.signtable) in step with the LMDB
-- cache, off the request path: the sign plugin's PLUGIN, SELECTOR and RULE items and every
-- APP_AUTH item.
--
-- It follows the environment the route cache (gwsync.cache) has opened, with a read
-- transaction of its own, and is refreshed by the same timer right after the route table
-- (gwsync.updater's follow()): a commit a request notices wakes both. Unlike the route table,
-- a small change (a few keys in the change log: an app disabled, a secret rotated) is also
-- applied by the request that notices it (catch_up()), before that request is checked: a
-- revoked app is refused from the first request the worker answers after the commit. Like
-- the route cache it
-- reads, in one read transaction, only the keys the change log says changed since the
-- generation it reflects; a group rewritten whole (`replace`), a gap, no log or the first load
-- read the four groups whole instead, and only items whose text changed (their digest,
-- gwsync.digest) are compiled again. So a disabled app or a rotated secret costs one lookup
-- and one small JSON decode, and is in force for the worker's next request.
--
-- While the sign plugin is off (or absent: most gateways) its selectors and rules are not
-- followed at all, so the route table's groups are never scanned for it; when the plugin is
-- switched on they are read whole once. Only the apps are always followed.
-- Most SELECTOR and RULE items belong to other plugins: an item whose text does not contain
-- `"sign"` (nor a `\u` escape that could spell it) cannot be the sign plugin's, and is passed
-- over without decoding (libc's memmem on the value in place), so a whole read of a 100,000-
-- rule table costs a scan, not a decode per rule.
--
-- Failures (a read error, a refused format) keep the last good sign table, logged once, as
-- the route cache does. Nothing logged here names an app's key or secret.
local ffi = require "ffi"
local lmdb = require "gwsync.lmdb"
local changes = require "gwsync.changes"
local digest = require "gwsync.digest"
local signtable = require "gwsync.signtable"

pcall(ffi.cdef, "void *memmem(const void *h, size_t hl, const void *n, size_t nl);")

local M = {}

local GROUPS = signtable.GROUPS
local GROUPSET = {}
for _, g in ipairs(GROUPS) do GROUPSET[g] = true end
local FILTERED = { SELECTOR = true, RULE = true, PLUGIN = true }
local GENERATION = lmdb.key("generation")
local FORMAT = "1"
local NEEDLE, ESCAPE = '"sign"', "\\u"

local fstr = ffi.string

local SC = {}
SC.__index = SC

-- new{ cache = the route cache (gwsync.cache), log = fn(level, msg) } -> signcache
function M.new(opts)
    return setmetatable({
        cache = opts.cache, log = opts.log or function() end, pace = nil,
        env = nil, txn = nil, generation = nil, need_full = true,
        loaded = false,     -- a table has been read once (requests wait for it: fail closed)
        unfollowed = true,  -- SELECTOR and RULE not followed (the plugin was off): read whole
        tbl = signtable.new(), reported = nil,
        stats = { refreshes = 0, items = 0, full = 0 },
    }, SC)
end

function SC:report(key, level, msg)
    if self.reported == key then return end
    self.reported = key
    self.log(level, "gwsync sign table: " .. msg)
end

-- could the text at p (n bytes) be the sign plugin's item?
local function maybe_sign(p, n)
    return ffi.C.memmem(p, n, NEEDLE, #NEEDLE) ~= nil or ffi.C.memmem(p, n, ESCAPE, #ESCAPE) ~= nil
end

-- one changed value (p, n: nil when the key is absent) -> applied to the table unless unchanged
local function put(self, group, key, p, n)
    local tbl = self.tbl
    local old = tbl.items[group][key]
    if not p then
        if old then tbl:set(group, key, nil); return 1 end
        return 0
    end
    if FILTERED[group] and not maybe_sign(p, n) then
        if old then tbl:set(group, key, nil); return 1 end
        return 0
    end
    local dg = digest.of(p, n)
    if old and old.digest == dg then return 0 end
    local it = signtable.compile(group, key, fstr(p, n))
    it.digest = dg
    tbl:set(group, key, it)
    if it.warning then self.log("warn", "gwsync sign table: " .. it.warning) end
    return 1
end

local function walk(self, txn, group, dbi)
    local seen, n, changed = {}, 0, 0
    local held = self.tbl.items[group]
    if dbi then
        local cur, err = txn:cursor(dbi)
        if not cur then return nil, err end
        local k, p, len = cur:first_at()
        while k do
            changed = changed + put(self, group, k, p, len)
            if held[k] then seen[k] = true end -- only what the table holds can be deleted
            n = n + 1
            if n % 256 == 0 and self.pace then self.pace() end
            k, p, len = cur:next_at()
        end
        cur:close()
        if p then return nil, p end
    end
    local gone = {}
    for key in pairs(self.tbl.items[group]) do
        if not seen[key] then gone[#gone + 1] = key end
    end
    for _, key in ipairs(gone) do self.tbl:set(group, key, nil) end
    return changed + #gone
end

function SC:dbis()
    local env = self.env
    local meta, err = env:dbi("meta")
    if not meta then return nil, err end
    local out = { meta = meta }
    for _, name in ipairs(GROUPS) do
        local d, e, code = env:dbi(name)
        if d then out[name] = d elseif code ~= lmdb.NOTFOUND then return nil, e end
    end
    local d, e, code = env:dbi("changes")
    if d then out.changes = d elseif code ~= lmdb.NOTFOUND then return nil, e end
    return out
end

-- is the sign plugin on in the table's PLUGIN items? (the greatest key named sign, as
-- signtable.finish decides)
local function plugin_on(tbl)
    local pk, on = nil, false
    for k, p in pairs(tbl.items.PLUGIN) do
        if p.sign and (not pk or k > pk) then pk, on = k, p.enabled == true end
    end
    return on
end

-- what catch_up() reads in a request at most: more is left to the timer
M.QUICK = { commits = 16, keys = 64 }

-- the keys a plan looks up, or nil when it rewrites a group whole (a `replace`)
local function plan_keys(plan)
    local n = 0
    for _, gp in pairs(plan) do
        if gp.replace then return nil end
        for _ in pairs(gp.keys) do n = n + 1 end
    end
    return n
end

local function refresh_body(self, quick)
    local env = self.cache and self.cache.env
    if not env then return false end
    if env ~= self.env then -- first use, or the route cache reopened the environment
        if self.txn then self.txn:close() end
        self.env, self.txn, self.generation, self.need_full = env, env:reader(), nil, true
    end
    local dbis, derr = self:dbis()
    if not dbis then
        self:report("dbis", "error", "cannot open the groups (" .. tostring(derr) .. "); keeping the last sign table")
        return false
    end
    local txn = self.txn
    local ok, berr = txn:begin()
    if not ok then
        self:report("txn", "error", "read transaction failed: " .. tostring(berr))
        return false
    end
    local gen = txn:get(dbis.meta, GENERATION)
    if gen == nil or gen == self.generation then txn:reset(); return false end
    if txn:get(dbis.meta, "format") ~= FORMAT then
        txn:reset()
        self.need_full = true
        self:report("format", "error", "refusing the environment's format; keeping the last sign table")
        return false
    end
    local gnum = tonumber(gen) or 0
    local plan, why
    if quick and (self.need_full or not self.generation
                  or gnum - (tonumber(self.generation) or 0) > M.QUICK.commits) then
        txn:reset()
        return false
    end
    if not self.need_full and self.generation and gnum > tonumber(self.generation) then
        plan, why = changes.read(txn, dbis, tonumber(self.generation), gnum, GROUPSET)
    end
    if quick then -- only a few keys through the change log (no whole read in a request)
        local n = not self.unfollowed and plan and plan_keys(plan)
        if not n or n > M.QUICK.keys then txn:reset(); return false end
    end
    local rok, changed, err = pcall(function()
        local total = 0
        for _, group in ipairs(GROUPS) do
            local gp = plan and plan[group]
            local whole = not plan or (gp and gp.replace)
            if FILTERED[group] and group ~= "PLUGIN" then
                -- the plugin's selectors and rules are followed only while it is on (ShenYu
                -- skips an off plugin): a gateway without the sign plugin never scans the
                -- route table's groups; switched on, they are read whole
                if not plugin_on(self.tbl) then
                    self.unfollowed = true
                    gp, whole = nil, false
                elseif self.unfollowed then
                    whole = true
                end
            end
            if whole then
                local c, e = walk(self, txn, group, dbis[group])
                if not c then return nil, "reading `" .. group .. "`: " .. tostring(e) end
                total = total + c
            elseif gp then
                for key in pairs(gp.keys) do
                    local p, n = nil, nil
                    if dbis[group] then
                        p, n = txn:get_at(dbis[group], key)
                        if p == nil and n then return nil, "reading `" .. group .. "`: " .. tostring(n) end
                    end
                    total = total + put(self, group, key, p, n)
                end
            end
        end
        if plugin_on(self.tbl) then self.unfollowed = false end
        return total
    end)
    txn:reset()
    if not rok or not changed then
        self.need_full = true
        self:report("read", "error", tostring(rok and err or changed) .. "; keeping the last sign table")
        return false
    end
    self.tbl:finish()
    self.generation, self.need_full, self.loaded = gen, false, true
    self.stats.refreshes = self.stats.refreshes + 1
    self.stats.items = self.stats.items + changed
    if not plan then self.stats.full = self.stats.full + 1 end
    if quick then self.stats.quick = (self.stats.quick or 0) + 1 end
    if changed > 0 or not plan then
        self.reported = nil
        self.log("notice", string.format("gwsync sign table from generation %s (%s): plugin %s, %d selectors, %d apps; changed %d items",
            tostring(gen), plan and "change log" or (why or "whole read"),
            self.tbl.enabled and "on" or "off", #self.tbl.selectors, self.tbl.napps, changed))
    end
    return changed > 0
end

-- refresh() -> true when the sign table changed. The timer's (gwsync.updater); one at a time:
-- a refresh that yields (pace(), during a whole read) holds the transaction meanwhile.
function SC:refresh(quick)
    if self.busy then return false end
    self.busy = true
    local ok, res = pcall(refresh_body, self, quick)
    self.busy = false
    if not ok then error(res, 0) end
    return res
end

-- release(): close the read transaction on the environment this table follows. Call it
-- before that environment is closed (LMDB requires every transaction of an environment to be
-- closed first): the next refresh opens a reader on whatever environment the route cache
-- then has, and reads it whole. The table keeps serving meanwhile (`loaded` stays true).
function SC:release()
    if self.txn then self.txn:close() end
    self.env, self.txn, self.generation, self.need_full = nil, nil, nil, true
end

-- catch_up(): in the request that notices a newer generation (gwsync.gateway), apply the
-- change at once when it is a few keys read through the change log (an app disabled or
-- rotated: one lookup, one small decode), so that this very request is checked against it;
-- anything larger (a whole read, a long gap, a refresh already running) is left to the
-- timer, which the request has woken. Never yields, never raises.
function SC:catch_up()
    if self.busy or not self.generation then return false end
    local ok, res = pcall(self.refresh, self, true)
    return ok and res
end

return M
