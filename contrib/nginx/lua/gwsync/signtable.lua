-- gwsync.signtable: what ShenYu's `sign` plugin knows in one nginx worker, changed item by item:
-- the plugin's `enabled` (PLUGIN `sign`), its selectors and rules (SELECTOR / RULE items whose
-- pluginName is `sign`), and the apps (APP_AUTH, by appKey: SignAuthDataCache).
--
-- set(group, key, text | nil) records one cache item's change (nil: deleted); finish() then
-- updates what depends on it. Apps are looked up by appKey at once (a changed app replaces
-- its entry in place: a disabled app or a rotated secret is in force for the next request
-- the worker answers after the change); the plugin's selectors and rules, a handful in any
-- real configuration, are ranked again whole when one of them changes.
--
-- match(req) picks the sign plugin's selector and rule for a request exactly as
-- AbstractShenyuPlugin.execute does for every plugin (DIVIDE-SEMANTICS.md §3-4, the same
-- conditions code as divide): nil when the plugin lets the request through unchecked (plugin
-- absent or off, no selector, no rule), the rule otherwise (the selector's `default_rule` for
-- `continued: false`), or an error result where ShenYu's matching throws (HTTP 400/500).
-- Each selector and rule is tried first with the fast path's tests, which never raise
-- (gwsync.fastpath); a "might raise" answer evaluates the plugin again with the raising
-- conditions under pcall (gwsync.errors), so errors are ShenYu's exactly.
--
-- Where several items claim the same thing (two APP_AUTH items with one appKey, two PLUGIN
-- items named sign, two selectors with one id) the greatest cache key wins, as in the route
-- table (gwsync.routes). An app's secret is kept here and given to gwsync.signalg only:
-- nothing in this file logs an app's fields.
local cjson = require "cjson.safe"
local conditions = require "gwsync.conditions"
local fastpath = require "gwsync.fastpath"
local antpath = require "gwsync.antpath"
local errors = require "gwsync.errors"

local M = {}

local PLUGIN = "sign"
M.PLUGIN = PLUGIN
M.GROUPS = { "PLUGIN", "SELECTOR", "RULE", "APP_AUTH" }


local function is_bool(v) return type(v) == "boolean" end
local function as_num(v)
    if type(v) == "number" then return v end
    if type(v) == "string" then return tonumber(v) end
    return nil
end
local function str(v) if type(v) == "string" then return v end return nil end

-- a Java Boolean as Gson reads it: true/false, a string by Boolean.parseBoolean, else null
local function jbool(v)
    if type(v) == "boolean" then return v end
    if type(v) == "string" then return v:lower() == "true" end
    return nil
end

---------------------------------------------------------------------------------------------
-- compiling one item
---------------------------------------------------------------------------------------------

-- the fields ShenYu dereferences while matching (null: NullPointerException, HTTP 500 for
-- every request that reaches the item): such items are left out, as gwsync.items does
local function missing_field(obj, fields)
    for _, f in ipairs(fields) do
        local name, check = f[1], f[2]
        if not check(obj[name]) then return name end
    end
    return nil
end
local SELECTOR_REQUIRED = { { "enabled", is_bool }, { "type", as_num }, { "sort", as_num },
                            { "logged", is_bool } }
local RULE_REQUIRED = { { "enabled", is_bool }, { "sort", as_num }, { "loged", is_bool },
                        { "matchMode", as_num },
                        { "conditionDataList", function(v) return type(v) == "table" end } }

local function compile_conds(mode, list)
    local conds, cerrs = conditions.compile_list(type(list) == "table" and list or nil)
    return conds, fastpath.item_test(mode, conds), cerrs
end

local function selector(key, obj)
    local id = str(obj.id)
    if not id or id == "" then return { warning = "sign SELECTOR without id skipped" } end
    local miss = missing_field(obj, SELECTOR_REQUIRED)
    local typ, mode, list = as_num(obj.type), as_num(obj.matchMode), obj.conditionList
    local has = type(list) == "table" and #list > 0
    if not miss and typ == 1 and not mode and has then miss = "matchMode" end
    if miss then
        return { warning = "sign SELECTOR " .. id .. ": no " .. miss
            .. " (ShenYu would fail with HTTP 500), skipped" }
    end
    local conds, test = compile_conds(mode, list)
    local score = 0
    if mode == 0 then score = type(list) == "table" and #list or nil end
    return {
        valid = true, key = key, id = id, enabled = obj.enabled, type = typ, sort = as_num(obj.sort),
        match_mode = mode, conds = conds, has_conditions = has, score = score,
        test = typ == 1 and test or fastpath.TRUE,
        continued = obj.continued ~= false, -- null counts as true
    }
end

-- SignRuleHandler from the rule's handle (Gson; SignPluginDataHandler.handlerRule): a handle
-- that is not a JSON object, or has no true `signRequestBody`, signs no body
local function sign_body(handle)
    if type(handle) ~= "string" then return false end
    local h = cjson.decode(handle)
    if type(h) ~= "table" then return false end
    return jbool(h.signRequestBody) == true
end

local function rule(key, obj)
    local id, sid = str(obj.id), str(obj.selectorId)
    if not id or id == "" or not sid then return { warning = "sign RULE without id or selectorId skipped" } end
    local miss = missing_field(obj, RULE_REQUIRED)
    if miss then
        return { warning = "sign RULE " .. id .. ": no " .. miss .. " (ShenYu would fail with HTTP 500), skipped" }
    end
    local mode = as_num(obj.matchMode)
    local conds, test = compile_conds(mode, obj.conditionDataList)
    return {
        valid = true, key = key, id = id, selector_id = sid, enabled = obj.enabled,
        sort = as_num(obj.sort), match_mode = mode, conds = conds, test = test,
        score = (mode == 0) and #obj.conditionDataList or 0,
        sign_body = sign_body(obj.handle),
    }
end

-- AuthPathData list entries: { enabled = Boolean (nil: null), P = compiled Ant pattern |
-- false (null path) } ; false for a null entry (ShenYu: NullPointerException when reached)
local function paths_of(list)
    if type(list) ~= "table" then return nil end
    local out = {}
    for i = 1, #list do
        local p = list[i]
        if type(p) ~= "table" then
            out[i] = false
        else
            local path = str(p.path)
            out[i] = { enabled = jbool(p.enabled), P = path and antpath.compile(path) or false }
        end
    end
    return out
end

local function params_of(list)
    if type(list) ~= "table" then return nil end
    local out = {}
    for i = 1, #list do
        local p = list[i]
        out[i] = type(p) == "table" and { app_name = str(p.appName), app_param = str(p.appParam) } or false
    end
    return out
end

local function app_auth(key, obj)
    local ak = str(obj.appKey)
    if not ak then return { warning = "APP_AUTH item " .. key .. " without appKey skipped" } end
    return {
        valid = true, key = key, app_key = ak,
        secret = str(obj.appSecret),        -- nil: ShenYu fails the request (HTTP 500)
        enabled = jbool(obj.enabled),       -- nil (null, absent) counts as enabled
        open = jbool(obj.open),             -- only true checks pathDataList
        paths = paths_of(obj.pathDataList), -- nil: null or absent
        params = params_of(obj.paramDataList),
    }
end

local function plugin(_, obj)
    if obj.name ~= PLUGIN then return {} end
    if is_bool(obj.enabled) then return { valid = true, sign = true, enabled = obj.enabled } end
    return { sign = true, enabled = false,
             warning = "PLUGIN sign: no enabled (ShenYu would fail with HTTP 500), skipped" }
end

-- compile(group, key, text) -> item (never raises on bad data; .warning says why it is unused)
function M.compile(group, key, text)
    local obj = cjson.decode(text)
    if type(obj) ~= "table" then return { warning = group .. " item " .. key .. ": not a JSON object, skipped" } end
    if group == "APP_AUTH" then return app_auth(key, obj) end
    if group == "PLUGIN" then return plugin(key, obj) end
    if obj.pluginName ~= PLUGIN then return {} end
    if group == "SELECTOR" then return selector(key, obj) end
    if group == "RULE" then return rule(key, obj) end
    return {}
end

---------------------------------------------------------------------------------------------
-- the table
---------------------------------------------------------------------------------------------
local Table = {}
Table.__index = Table

function M.new()
    return setmetatable({
        items = { PLUGIN = {}, SELECTOR = {}, RULE = {}, APP_AUTH = {} },
        claims = {},        -- appKey -> { cache key -> app }
        apps = {},          -- appKey -> the app in force (greatest cache key)
        napps = 0,
        enabled = false,    -- the sign plugin is on
        selectors = {},     -- usable sign selectors sorted by (sort, key), each with .rules
        _cands = {},        -- match()'s scratch list
        dirty_plugin = false,
        warnings = nil,
    }, Table)
end

local function app_winner(claims)
    local best
    for k, a in pairs(claims) do
        if not best or k > best.key then best = a end
    end
    return best
end

-- set(group, key, item | nil): one item's change (item from compile(); nil: deleted)
function Table:set(group, key, it)
    local map = self.items[group]
    if not map then return end
    local old = map[key]
    map[key] = it
    if group == "APP_AUTH" then
        local touched = {}
        if old and old.app_key then touched[old.app_key] = true end
        if it and it.valid then touched[it.app_key] = true end
        for ak in pairs(touched) do
            local c = self.claims[ak] or {}
            c[key] = (it and it.valid and it.app_key == ak) and it or nil
            if next(c) then self.claims[ak] = c else self.claims[ak] = nil end
            local was = self.apps[ak]
            local now = self.claims[ak] and app_winner(self.claims[ak]) or nil
            self.apps[ak] = now
            if was and not now then self.napps = self.napps - 1 end
            if now and not was then self.napps = self.napps + 1 end
        end
    elseif (old and (old.valid or old.sign)) or (it and (it.valid or it.sign)) then
        self.dirty_plugin = true
    end
end

local function lt(a, b)
    if a.sort ~= b.sort then return a.sort < b.sort end
    return a.key < b.key
end

-- finish(): rank the plugin's selectors and rules again if one of them (or the plugin) changed
function Table:finish()
    if not self.dirty_plugin then return end
    self.dirty_plugin = false
    local pk
    for k, p in pairs(self.items.PLUGIN) do
        if p.sign and (not pk or k > pk) then pk = k end
    end
    self.enabled = pk ~= nil and self.items.PLUGIN[pk].enabled == true
    local by_id = {}
    for k, s in pairs(self.items.SELECTOR) do
        if s.valid then
            local cur = by_id[s.id]
            if not cur or k > cur.key then by_id[s.id] = s end
        end
    end
    local rules_of = {}
    for _, r in pairs(self.items.RULE) do
        if r.valid and by_id[r.selector_id] then
            local l = rules_of[r.selector_id] or {}
            l[#l + 1] = r
            rules_of[r.selector_id] = l
        end
    end
    local sels = {}
    for id, s in pairs(by_id) do
        local rules = rules_of[id] or {}
        table.sort(rules, lt)
        sels[#sels + 1] = { sel = s, rules = rules, key = s.key, sort = s.sort, score = s.score }
    end
    table.sort(sels, lt)
    self.selectors = sels
end

-- app(appKey) -> the app in force | nil
function Table:app(ak)
    return self.apps[ak]
end

---------------------------------------------------------------------------------------------
-- matching (AbstractShenyuPlugin.execute)
---------------------------------------------------------------------------------------------
-- the rule of a selector with `continued: false` (defaultRuleData: no handle, no body signing)
M.DEFAULT_RULE = { id = "default_rule", sign_body = false }

-- the winner among n candidates: max score, then min sort, then list order (the first);
-- a null score (AND with a null conditionList) among several makes ShenYu throw
local function pick(cands, n, plain)
    if n == 1 then return cands[1] end
    local best
    for i = 1, n do
        local c = cands[i]
        if c.score == nil then
            if plain then errors.raise_internal("conditionList is null") end
            return nil, true
        end
        if not best or c.score > best.score or (c.score == best.score and c.sort < best.sort) then
            best = c
        end
    end
    return best
end

-- one item's verdict: the fast test (nil: might raise) or, in the plain pass, the raising one
local function hit(it, req, plain)
    if plain then return conditions.match(it.match_mode, it.conds, req) end
    return it.test(it, req)
end

-- one selector's verdict: true, false, or nil (the fast pass gives up)
local function sel_hit(node, req, plain)
    local s = node.sel
    if not s.enabled then return false end
    if s.type ~= 1 then return true end -- full flow: conditions ignored
    if not s.has_conditions then return false end
    return hit(s, req, plain)
end

-- match_pass(tbl, req, plain) -> rule | nil (let through) | nil, true (the fast pass gave up)
-- Every selector is evaluated (a later one's error still counts). The first three are
-- tested without a loop: a loop entered and left on its first pass (one sign selector, the
-- common case) makes LuaJIT abort the trace of the request path it runs in (README,
-- Performance notes), and every request, protected or not, runs this.
local function match_pass(tbl, req, plain)
    local sels = tbl.selectors
    local ns = #sels
    local cands, n = tbl._cands, 0 -- scratch list reused (one request at a time per worker)
    local h = sel_hit(sels[1], req, plain)
    if h == nil then return nil, true end
    if h then n = 1; cands[1] = sels[1] end
    if ns >= 2 then
        h = sel_hit(sels[2], req, plain)
        if h == nil then return nil, true end
        if h then n = n + 1; cands[n] = sels[2] end
        if ns >= 3 then
            h = sel_hit(sels[3], req, plain)
            if h == nil then return nil, true end
            if h then n = n + 1; cands[n] = sels[3] end
            for i = 4, ns do
                h = sel_hit(sels[i], req, plain)
                if h == nil then return nil, true end
                if h then n = n + 1; cands[n] = sels[i] end
            end
        end
    end
    if n == 0 then return nil end
    local node, gave_up = pick(cands, n, plain)
    if gave_up then return nil, true end
    local s = node.sel
    if not s.continued then return M.DEFAULT_RULE end
    local rules = node.rules
    if #rules == 0 then return nil end
    if s.type == 0 then return rules[#rules] end -- full flow: the last rule, unchecked
    n = 0
    for i = 1, #rules do
        local r = rules[i]
        if r.enabled then
            local h = hit(r, req, plain)
            if h == nil then return nil, true end
            if h then n = n + 1; cands[n] = r end
        end
    end
    if n == 0 then return nil end
    return (pick(cands, n, plain))
end

-- match(req) -> rule | nil (the plugin lets the request through) | error result (action "error")
function Table:match(req)
    if not self.enabled or #self.selectors == 0 then return nil end
    local r, gave_up = match_pass(self, req, false)
    if not gave_up then return r end
    local ok, res = pcall(match_pass, self, req, true)
    if ok then return res end
    if errors.is_ours(res) then return errors.result(res.status, res.message) end
    error(res, 0)
end

return M
