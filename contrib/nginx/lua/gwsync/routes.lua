-- gwsync.routes: the route table as state that is changed item by item.
--
-- A table holds the compiled form of every item of PLUGIN, SELECTOR, RULE and
-- DISCOVER_UPSTREAM by its cache key (gwsync.items), and what routing derives from them:
--   * the divide plugin's `enabled` (the PLUGIN item named divide with the greatest key);
--   * one node per usable divide selector (S), in `selectors` sorted by (sort, key): ShenYu's
--     stable sort by `sort`, ties in cache key order, the only order the cache has;
--   * per selector node: its upstream list (the DISCOVER_UPSTREAM entry naming its id, else
--     its own handle's), its rules (the compiled RULE items themselves) sorted the same way,
--     the enabled ones, and, for a selector with many, a rule index;
--   * the selector index (gwsync.index) over the selectors that can be candidates.
-- set(group, key, item) records one item's change and marks what depends on it; finish()
-- then updates exactly that: a rule change re-sorts that rule's selector's rules; a
-- DISCOVER_UPSTREAM change gives the selectors of that id a new upstream list (nothing else:
-- no rule is touched); a selector change refreshes that node, its index entry and its place
-- in `selectors`; a PLUGIN change recomputes `enabled`. Nothing is done per item of the whole
-- table: a change costs what depends on it.
--
-- Consistency: the nginx worker calls set() and finish() for one batch of changes without
-- yielding, so a request (which runs between yields) sees the table before or after the
-- batch, never half of it. A large batch is applied to a new table built off to the side
-- (gwsync.cache), sharing the compiled items (they are never modified), and swapped in.
-- What route() hands a request (a rule item, a selector node's upstream list) is never
-- modified either: a change makes new ones, and a request in flight keeps what it was routed
-- with (its balancer retries use it).
--
-- Where several items claim the same thing (two SELECTOR items with the same id, two
-- DISCOVER_UPSTREAM items for one selector, two PLUGIN items named divide) the one with the
-- greatest cache key wins: the last one in key order, as a table built from a walk of the
-- cache in key order would keep.
--
-- Memory and the garbage collector (issue 19): a table of 100,000 rules holds 100,000 compiled
-- rules and nothing else per rule (no node, no result object). The map from cache key to item
-- is cut into SHARDS small tables: LuaJIT's collector traverses a table in one step, and
-- traverses again, in its atomic phase, every table written to since it was marked, so one
-- flat map of 100,000 keys written by every change made a pause of milliseconds per cycle
-- (tests/lua/bench_pauses.lua). Maps by selector id hold one entry per selector.
local items = require "gwsync.items"
local index = require "gwsync.index"
local handle = require "gwsync.handle"
local fastpath = require "gwsync.fastpath"

local M = {}

local ffi = require "ffi"
local bit = require "bit"
local byte = string.byte
local new_tab = require "table.new"
local cast = ffi.cast
local bxor, band, rol, rshift = bit.bxor, bit.band, bit.rol, bit.rshift
local u8p = ffi.typeof("const uint8_t *")

-- a selector with at least this many enabled rules gets a rule index (below it, a scan of
-- its sorted rules costs less than walking an index)
M.RULE_INDEX_MIN = 16
-- more selector moves than this in one batch: `selectors` is re-sorted whole
local RESORT_MIN = 32

local PLUGIN = items.PLUGIN
local GROUPS = { "PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM" }
M.GROUPS = GROUPS

-- the rule of a selector with `continued: false` (no rule is evaluated; ShenYu's default rule)
M.DEFAULT_RULE = { id = "default_rule", handle = handle.DEFAULT }

---------------------------------------------------------------------------------------------
-- sharded maps: key -> value in SHARDS tables, by a hash of the key's last 16 bytes
---------------------------------------------------------------------------------------------
local SHARDS = 64
M.SHARDS = SHARDS

local u32p = ffi.typeof("const uint32_t *")

-- the shard of a key: its last 8 bytes read as two 32-bit words and mixed (no loop: this runs
-- inside the build's traces); keys shorter than 8 bytes by their bytes
local function shard(map, key)
    local n = #key
    local h
    if n >= 8 then
        local w = cast(u32p, cast(u8p, key) + (n - 8))
        h = bxor(w[0], rol(w[1], 13), n)
    else
        h = n
        for i = 1, n do h = bxor(rol(h, 5), byte(key, i)) end
    end
    h = bxor(h, rshift(h, 15))
    h = bxor(h, rshift(h, 7))
    return map[band(h, SHARDS - 1) + 1]
end

local function new_shards()
    local m = {}
    for i = 1, SHARDS do m[i] = {} end
    return m
end

-- each(map, fn): fn(key, value) for every entry (in no order)
local function each(map, fn)
    for i = 1, SHARDS do
        for k, v in pairs(map[i]) do fn(k, v) end
    end
end
M.each = each

local Routes = {}
Routes.__index = Routes

-- new(opts): opts.flat = true: no index (every selector and rule evaluated; for tests)
function M.new(opts)
    local flat = opts and opts.flat or nil
    local t = setmetatable({
        flat = flat,
        enabled = false,
        items = {}, counts = {},
        plugins = {},          -- key -> PLUGIN item named divide
        nodes = {},            -- selector key -> S
        sel_claims = {},       -- selector id -> { key -> S }
        by_id = {},            -- selector id -> the S rules attach to (greatest key)
        rules_of = {},         -- selector id -> { key -> usable RULE item }
        disc_claims = {},      -- selector id -> { key -> divide DISCOVER_UPSTREAM item }
        disc = {},             -- selector id -> the winning DISCOVER_UPSTREAM item
        selectors = {},        -- every S, sorted by (sort, key)
        index = index.new(flat), -- the S that can be candidates
        by_key = nil,          -- the index, when it files anything (a flag for tests)
        -- the batch being applied: selector ids whose winner, rules or upstreams may have
        -- changed; nodes to refresh; nodes that move in (or leave, or join) `selectors`
        dirty_ids = {}, rules_dirty = {}, ups_dirty = {}, dirty_nodes = {},
        touched = {}, ntouched = 0, plugin_dirty = true,
        _cands = nil,
        -- the route cache (gwsync.routecache): its entries (dropped by every set() and
        -- finish()), and how many items the router can evaluate read more than the path:
        -- usable selectors that do, plus the rules that do of every selector id a usable
        -- selector claims (rc_np: selector id -> such rules, claimed or not)
        rc = nil, rc_other = 0, rc_np = {},
    }, Routes)
    for _, g in ipairs(GROUPS) do
        t.items[g] = new_shards()
        t.counts[g] = 0
    end
    return t
end

local function lt(sa, ka, sb, kb)
    if sa ~= sb then return sa < sb end
    return ka < kb
end
local function node_lt(a, b) return lt(a.sort, a.key, b.sort, b.key) end
M.node_lt = node_lt

-- sort_nodes(list, n): list[1..n] in (sort, key) order. Not table.sort: it calls a Lua
-- comparator from C, a call LuaJIT cannot compile, about 0.1 us each; a first load sorts
-- 10,000 rule lists and the selectors (half a million comparisons at 10,000 x 10). Here the
-- comparison is compiled inline: insertion for short lists (a selector's rules), a bottom-up
-- merge for long ones. Keys are unique, so the order is total and stability moot.
local function sort_nodes(list, n)
    if n <= 24 then
        for i = 2, n do
            local x = list[i]
            local xs, xk = x.sort, x.key
            local j = i - 1
            while j >= 1 do
                local y = list[j]
                if not lt(xs, xk, y.sort, y.key) then break end
                list[j + 1] = y
                j = j - 1
            end
            list[j + 1] = x
        end
        return
    end
    local src, dst = list, new_tab(n, 0)
    local width = 1
    while width < n do
        local lo = 1
        while lo <= n do
            local mid, hi = lo + width, lo + 2 * width
            if mid > n + 1 then mid = n + 1 end
            if hi > n + 1 then hi = n + 1 end
            local i, j, k = lo, mid, lo
            while i < mid and j < hi do
                local a, b = src[i], src[j]
                if lt(b.sort, b.key, a.sort, a.key) then
                    dst[k] = b; j = j + 1
                else
                    dst[k] = a; i = i + 1
                end
                k = k + 1
            end
            while i < mid do dst[k] = src[i]; i = i + 1; k = k + 1 end
            while j < hi do dst[k] = src[j]; j = j + 1; k = k + 1 end
            lo = hi
        end
        src, dst = dst, src
        width = width * 2
    end
    if src ~= list then
        for i = 1, n do list[i] = src[i] end
    end
end
M.sort_nodes = sort_nodes

-- the greatest key of a claims table { key -> x }
local function winner(claims)
    if not claims then return nil end
    local bk, bv
    for k, v in pairs(claims) do
        if bk == nil or k > bk then bk, bv = k, v end
    end
    return bv
end

local function claim(map, id, key, v)
    local c = map[id]
    if not c then c = {}; map[id] = c end
    c[key] = v
end

local function unclaim(map, id, key)
    local c = map[id]
    if not c then return end
    c[key] = nil
    if next(c) == nil then map[id] = nil end
end

-- the route cache's count (gwsync.routecache): a rule reading more than the path counts while
-- a selector claims its id; a selector claims an id from its first claim to its last
local function rc_rule(t, sid, d)
    local n = (t.rc_np[sid] or 0) + d
    t.rc_np[sid] = n ~= 0 and n or nil
    if t.sel_claims[sid] then t.rc_other = t.rc_other + d end
end

local function sel_claim(t, id, key, S)
    if not t.sel_claims[id] then t.rc_other = t.rc_other + (t.rc_np[id] or 0) end
    claim(t.sel_claims, id, key, S)
    if S.item.reads_other then t.rc_other = t.rc_other + 1 end
end

local function sel_unclaim(t, id, key, S)
    if S.item.reads_other then t.rc_other = t.rc_other - 1 end
    unclaim(t.sel_claims, id, key)
    if not t.sel_claims[id] then t.rc_other = t.rc_other - (t.rc_np[id] or 0) end
end

-- S moves in `selectors`, or goes, or comes (fixed in finish())
local function touch(t, S)
    if not t.touched[S] then
        t.touched[S] = true
        t.ntouched = t.ntouched + 1
    end
end

-- get(group, key) -> the item the table holds for key | nil
function Routes:get(group, key)
    return shard(self.items[group], key)[key]
end

-- each_item(group, fn): fn(key, item) for every item of group (in no order)
function Routes:each_item(group, fn)
    each(self.items[group], fn)
end

-- set(group, key, item | nil): record one item's new compiled form (nil: deleted)
function Routes:set(group, key, it)
    local store = shard(self.items[group], key)
    local old = store[key]
    if old == it then return end
    self.rc = nil -- the route cache answers for the table as it was (gwsync.routecache)
    store[key] = it
    if old == nil then self.counts[group] = self.counts[group] + 1 end
    if it == nil then self.counts[group] = self.counts[group] - 1 end

    if group == "RULE" then
        if old and old.valid then
            local sid = old.selector_id
            local rs = self.rules_of[sid]
            if rs then
                rs[key] = nil
                if next(rs) == nil then self.rules_of[sid] = nil end
            end
            self.rules_dirty[sid] = true
            if old.reads_other then rc_rule(self, sid, -1) end
        end
        if it and it.valid then
            local sid = it.selector_id
            if it.reads_other then rc_rule(self, sid, 1) end
            local rs = self.rules_of[sid]
            if not rs then rs = {}; self.rules_of[sid] = rs end
            rs[key] = it
            self.rules_dirty[sid] = true
        end
    elseif group == "DISCOVER_UPSTREAM" then
        if old and old.divide then
            unclaim(self.disc_claims, old.selector_id, key)
            self.ups_dirty[old.selector_id] = true
        end
        if it and it.divide then
            claim(self.disc_claims, it.selector_id, key, it)
            self.ups_dirty[it.selector_id] = true
        end
    elseif group == "SELECTOR" then
        -- the node's fields (S.sort, S.id...) stay those of its last finish() until the next
        -- one: finish() finds it in `selectors` by them
        local S = self.nodes[key]
        if S then
            touch(self, S)
            sel_unclaim(self, S.item.id, key, S)
            self.dirty_ids[S.item.id] = true
            if it and it.valid then
                S.item = it
                sel_claim(self, it.id, key, S)
                self.dirty_ids[it.id] = true
                self.dirty_nodes[S] = true
            else
                self.nodes[key] = nil
                self.index:remove(S)
                S.indexed = nil
                S.dead = true
                self.dirty_nodes[S] = nil
            end
        elseif it and it.valid then
            S = { key = key, item = it, id = it.id, rules = {}, active_rules = {}, rpack = {}, in_list = false }
            self.nodes[key] = S
            touch(self, S)
            sel_claim(self, it.id, key, S)
            self.dirty_ids[it.id] = true
            self.dirty_nodes[S] = true
        end
    elseif group == "PLUGIN" then
        if old and old.divide then self.plugins[key] = nil end
        if it and it.divide then self.plugins[key] = it end
        self.plugin_dirty = true
    end
end

-- S's upstream list: its DISCOVER_UPSTREAM entry's, else its own handle's
local function upstreams_of(t, S)
    local d = t.disc[S.id]
    return d and d.list or items.handle_list(S.item)
end

-- S's rules, sorted; the enabled ones; the rule index when many
local function rebuild_rules(t, S)
    local list, n = {}, 0
    if t.by_id[S.id] == S then
        local rs = t.rules_of[S.id]
        if rs then
            for _, it in pairs(rs) do
                n = n + 1
                list[n] = it
            end
        end
    end
    if n > 1 then sort_nodes(list, n) end
    local active, na = {}, 0
    for i = 1, n do
        if list[i].enabled then na = na + 1; active[na] = list[i] end
    end
    S.rules, S.active_rules = list, active
    S.rpack = fastpath.pack(active, na) -- what the router's fast path scans (gwsync.fastpath)
    if na >= M.RULE_INDEX_MIN then
        local ix = index.new(t.flat)
        for i = 1, na do
            local it = active[i]
            items.compile_conds(it) -- the index files a rule by its compiled conditions
            ix:add(it, fastpath.places(it.match_mode, it.conds))
        end
        S.rule_index = ix
    else
        S.rule_index = nil
    end
end

-- refresh one selector node from its item and what it depends on
local function refresh(t, S)
    if S.indexed then t.index:remove(S) end
    local it = S.item
    S.id, S.enabled, S.type, S.sort = it.id, it.enabled, it.type, it.sort
    S.match_mode, S.conds, S.test = it.match_mode, it.conds, it.test
    S.f1, S.f2 = nil, nil
    fastpath.flatten(S)
    S.has_conditions, S.score, S.continued = it.has_conditions, it.score, it.continued
    S.upstreams = upstreams_of(t, S)
    S.ix_multi = nil
    rebuild_rules(t, S)
    if S.enabled and (S.type ~= 1 or S.has_conditions) then
        local places, risky
        if S.type == 1 then places, risky = fastpath.places(S.match_mode, S.conds) end
        t.index:add(S, places, risky)
        S.indexed = true
    else
        S.indexed = nil
    end
end

-- position of the first node not less than (sort, key) in `selectors`
local function lower_bound(list, sort, key)
    local lo, hi = 1, #list + 1
    while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        local x = list[mid]
        if lt(x.sort, x.key, sort, key) then lo = mid + 1 else hi = mid end
    end
    return lo
end

-- finish(pace): update everything the set() calls since the last finish() marked. pace, when
-- given, is called between selectors (a table not in use yet may yield there).
function Routes:finish(pace)
    self.rc = nil
    if self.plugin_dirty then
        local p = winner(self.plugins)
        self.enabled = p and p.enabled or false
        self.plugin_dirty = false
    end
    local dirty_nodes = self.dirty_nodes
    -- which node of an id rules attach to (the greatest key)
    for id in pairs(self.dirty_ids) do
        local w = winner(self.sel_claims[id])
        local old = self.by_id[id]
        if old ~= w then
            self.by_id[id] = w
            if old and not old.dead then dirty_nodes[old] = true end
            if w then self.rules_dirty[id] = true end
        end
    end
    self.dirty_ids = {}
    -- new upstream lists: every node of that id takes its new list (nothing else changes)
    for id in pairs(self.ups_dirty) do
        self.disc[id] = winner(self.disc_claims[id])
        local claims = self.sel_claims[id]
        if claims then
            for _, S in pairs(claims) do
                if not dirty_nodes[S] then S.upstreams = upstreams_of(self, S) end
            end
        end
    end
    self.ups_dirty = {}
    -- moved and removed nodes leave `selectors` first, found by their fields as they are
    -- until refresh() (a few: binary search; many: the list is sorted anew below)
    local sels = self.selectors
    local few = self.ntouched <= RESORT_MIN
    if few then
        for S in pairs(self.touched) do
            if S.in_list then
                local i = lower_bound(sels, S.sort, S.key)
                if sels[i] == S then table.remove(sels, i) end
                S.in_list = false
            end
        end
    end
    for S in pairs(dirty_nodes) do
        if not S.dead then
            refresh(self, S)
            if pace then pace() end
        end
    end
    -- new rule lists: the node rules attach to (unless refreshed above)
    for id in pairs(self.rules_dirty) do
        local S = self.by_id[id]
        if S and not dirty_nodes[S] then
            rebuild_rules(self, S)
            if pace then pace() end
        end
    end
    self.rules_dirty = {}
    self.dirty_nodes = {}
    if few then
        for S in pairs(self.touched) do
            if not S.dead then
                table.insert(sels, lower_bound(sels, S.sort, S.key), S)
                S.in_list = true
            end
        end
    else
        local out, n = {}, 0
        for _, S in pairs(self.nodes) do
            n = n + 1
            out[n] = S
            S.in_list = true
        end
        sort_nodes(out, n)
        self.selectors = out
        for S in pairs(self.touched) do
            if S.dead then S.in_list = false end
        end
    end
    self.touched, self.ntouched = {}, 0
    local ix = self.index
    self.by_key = (ix.count > #ix.always) and ix or nil
end

-- warnings_of(group, item) -> the warnings an item gives in this table: a bad JSON text
-- always; a divide plugin, selector or discovery entry's own; a rule's only when it belongs
-- to a divide selector (as ShenYu reads a rule only through its selector)
function Routes:warnings_of(group, it)
    local w = it.warnings
    if not w then return nil end
    if group == "RULE" and not it.decode_error then
        if not (it.selector_id and self.by_id[it.selector_id]) then return nil end
    end
    return w
end

-- all_warnings() -> every warning of the table, by group (PLUGIN, DISCOVER_UPSTREAM,
-- SELECTOR, RULE) and key order
function Routes:all_warnings()
    local out = {}
    for _, g in ipairs(items.GROUPS) do
        local keys, its = {}, {}
        each(self.items[g], function(k, it)
            keys[#keys + 1] = k
            its[k] = it
        end)
        table.sort(keys)
        for _, k in ipairs(keys) do
            local w = self:warnings_of(g, its[k])
            if w then
                for _, line in ipairs(w) do out[#out + 1] = line end
            end
        end
    end
    return out
end

-- counts_text() -> "PLUGIN 1, SELECTOR 12, RULE 40, DISCOVER_UPSTREAM 12"
function Routes:counts_text()
    local out = {}
    for i, g in ipairs(GROUPS) do out[i] = g .. " " .. self.counts[g] end
    return table.concat(out, ", ")
end

return M
