-- gwsync.router: build a route table from the cache's groups, route one request with it.
--
-- build(groups) does all parsing once per cache generation: JSON decoding, condition
-- compilation (regex / AntPath / PathPattern), ShenYu's stable sort by `sort`, rule handles,
-- upstream lists, and the result table each rule answers with. route(tbl, req) then only
-- evaluates conditions (DIVIDE-SEMANTICS §4) and returns a prepared result (§5): no JSON
-- decoding and, for a proxied request, no allocation beyond the request's own caches.
--
-- route() has two evaluations of the same semantics. The fast one (route_fast) uses the
-- non-raising condition tests and the selector index of gwsync.fastpath, runs without a
-- pcall and is what LuaJIT compiles; when a test says "ShenYu might throw here" (rare: an
-- invalid condition, a bad X-Forwarded-For entry, an undecodable path under pathPattern) it
-- gives up and the plain evaluation (route_plain: every selector, conditions.match, errors
-- raised as ShenYu throws them) answers the request under pcall.
--
-- Order: ShenYu sorts selectors (per plugin) and rules (per selector) stably by `sort`, ties
-- kept in arrival order (the admin's list order). The cache gives us items in LMDB key order
-- (by id), the only order available, so ties are broken by key order.
-- Items that ShenYu would accept but then fail on with a NullPointerException (HTTP 500) for
-- every request that reaches them (missing required fields, missing or unparseable rule
-- handle) are left out with a warning in tbl.warnings, as documented in the lua API.
local cjson = require "cjson.safe"
local conditions = require "gwsync.conditions"
local fastpath = require "gwsync.fastpath"
local upstreams = require "gwsync.upstreams"
local handle = require "gwsync.handle"
local balance = require "gwsync.balance"
local errors = require "gwsync.errors"

local M = {}

local PLUGIN = "divide"

M.SKIP = { action = "skip" }
M.NO_SELECTOR = { action = "error", code = -107, plain_status = 404, http_status = 200,
    message = "divide:Can not find selector, please check your configuration!" }
M.NO_RULE = { action = "error", code = -102, plain_status = 404, http_status = 200,
    message = "divide:Rule not found!" }
M.NO_UPSTREAM = { action = "error", code = -119, plain_status = 503, http_status = 200,
    message = "Can not find healthy upstream url, please check your configuration!" }
M.HEADER_TOO_LARGE = { action = "error", code = 431, plain_status = 431, http_status = 200,
    message = "Request Header Fields Too Large" }
M.ENTITY_TOO_LARGE = { action = "error", code = 413, plain_status = 413, http_status = 200,
    message = "Request Entity Too Large" }

local function is_bool(v) return type(v) == "boolean" end
local function as_num(v)
    if type(v) == "number" then return v end
    if type(v) == "string" then return tonumber(v) end
    return nil
end
local function nonempty_string(v) return type(v) == "string" and v ~= "" end

-- decode(list, group, warnings) -> list of {obj, idx}
local function decode_all(list, group, warnings)
    local out = {}
    for i, text in ipairs(list or {}) do
        local obj = cjson.decode(text)
        if type(obj) == "table" then
            out[#out + 1] = obj
        else
            warnings[#warnings + 1] = group .. " item " .. i .. ": not a JSON object, skipped"
        end
    end
    return out
end

-- ShenYu's stable sort by `sort` (ties keep the given order)
local function stable_sort(list)
    for i, x in ipairs(list) do x._pos = i end
    table.sort(list, function(a, b)
        if a.sort ~= b.sort then return a.sort < b.sort end
        return a._pos < b._pos
    end)
end

local function proxy_result(sel, rule_data, h)
    return { action = "proxy", selector = sel.data, rule = rule_data, handle = h,
             upstreams = sel.upstreams }
end

local function build_selector(obj, discovered, now_ms, warnings)
    local id = obj.id
    if not nonempty_string(id) then
        warnings[#warnings + 1] = "SELECTOR without id skipped"
        return nil
    end
    local typ, sort, mode = as_num(obj.type), as_num(obj.sort), as_num(obj.matchMode)
    local missing
    if not is_bool(obj.enabled) then missing = "enabled"
    elseif not typ then missing = "type"
    elseif not sort then missing = "sort"
    elseif not is_bool(obj.logged) then missing = "logged"
    elseif typ == 1 and not mode and type(obj.conditionList) == "table" and #obj.conditionList > 0 then
        missing = "matchMode"
    end
    if missing then
        warnings[#warnings + 1] = "SELECTOR " .. id .. ": no " .. missing .. " (ShenYu would fail with HTTP 500), skipped"
        return nil
    end
    local conds, cerrs = conditions.compile_list(obj.conditionList)
    for _, e in ipairs(cerrs) do
        warnings[#warnings + 1] = "SELECTOR " .. id .. ": condition fails at request time: " .. e
    end
    local ups
    if discovered[id] then
        ups = upstreams.from_discovery(discovered[id], now_ms)
    else
        ups = upstreams.from_selector_handle(obj.handle, now_ms)
    end
    local test, key = fastpath.TRUE, nil -- full flow (and any type but 1): conditions ignored
    if typ == 1 then test, key = fastpath.list_test(mode, conds) end
    local sel = {
        id = id, data = obj, enabled = obj.enabled, type = typ, sort = sort, match_mode = mode,
        conditions = conds, test = test, key = key,
        has_conditions = type(obj.conditionList) == "table" and #obj.conditionList > 0,
        -- ranking score: conditionList.size() for AND (matchMode 0), 0 otherwise; a null
        -- conditionList on an AND selector makes the ranking throw (NPE) -> flagged
        score = 0,
        continued = obj.continued ~= false, -- null counts as true
        upstreams = ups,
        rules = {},
    }
    if mode == 0 then
        sel.score = type(obj.conditionList) == "table" and #obj.conditionList or nil
    end
    sel.default_result = proxy_result(sel, { id = "default_rule", selectorId = id,
        pluginName = PLUGIN }, handle.DEFAULT)
    return sel
end

local function build_rule(obj, sel, warnings)
    local id = obj.id
    if not nonempty_string(id) then
        warnings[#warnings + 1] = "RULE without id skipped"
        return nil
    end
    local sort, mode = as_num(obj.sort), as_num(obj.matchMode)
    local missing
    if not is_bool(obj.enabled) then missing = "enabled"
    elseif not sort then missing = "sort"
    elseif not is_bool(obj.loged) then missing = "loged"
    elseif not mode then missing = "matchMode"
    elseif type(obj.conditionDataList) ~= "table" then missing = "conditionDataList"
    end
    if missing then
        warnings[#warnings + 1] = "RULE " .. id .. ": no " .. missing .. " (ShenYu would fail with HTTP 500), skipped"
        return nil
    end
    local h, lb_error = handle.parse(obj.handle)
    if not h then
        warnings[#warnings + 1] = "RULE " .. id .. ": " .. lb_error .. " (ShenYu would fail with HTTP 500), skipped"
        return nil
    end
    local conds, cerrs = conditions.compile_list(obj.conditionDataList)
    for _, e in ipairs(cerrs) do
        warnings[#warnings + 1] = "RULE " .. id .. ": condition fails at request time: " .. e
    end
    if lb_error then
        warnings[#warnings + 1] = "RULE " .. id .. ": loadBalance fails at request time: " .. lb_error.message
    end
    return {
        id = id, data = obj, enabled = obj.enabled, sort = sort, match_mode = mode,
        conditions = conds, test = (fastpath.list_test(mode, conds)), score = (mode == 0) and #obj.conditionDataList or 0,
        handle = h, lb_error = lb_error, result = proxy_result(sel, obj, h),
    }
end

-- build(groups, opts) -> tbl   (opts.now_ms: clock for upstream timestamps, for tests)
function M.build(groups, opts)
    groups = groups or {}
    local warnings = {}
    local now_ms = (opts and opts.now_ms) or ((ngx and ngx.now) and ngx.now() * 1000 or os.time() * 1000)
    local tbl = { warnings = warnings, enabled = false, selectors = {}, by_id = {} }

    -- PLUGIN: ShenYu keeps one PluginData per name (the last one received wins)
    for _, p in ipairs(decode_all(groups.PLUGIN, "PLUGIN", warnings)) do
        if p.name == PLUGIN then
            if is_bool(p.enabled) then
                tbl.enabled = p.enabled
            else
                warnings[#warnings + 1] = "PLUGIN divide: no enabled (ShenYu would fail with HTTP 500), skipped"
                tbl.enabled = false
            end
        end
    end

    -- DISCOVER_UPSTREAM entries of the divide plugin, by selector id
    local discovered = {}
    for _, d in ipairs(decode_all(groups.DISCOVER_UPSTREAM, "DISCOVER_UPSTREAM", warnings)) do
        if d.pluginName == PLUGIN and nonempty_string(d.selectorId) then
            discovered[d.selectorId] = d
        end
    end

    for _, obj in ipairs(decode_all(groups.SELECTOR, "SELECTOR", warnings)) do
        if obj.pluginName == PLUGIN then
            local sel = build_selector(obj, discovered, now_ms, warnings)
            if sel then
                local sels = tbl.selectors
                sels[#sels + 1] = sel
                tbl.by_id[sel.id] = sel
            end
        end
    end
    stable_sort(tbl.selectors)

    -- RULE: ShenYu keys rules by selectorId only
    for _, obj in ipairs(decode_all(groups.RULE, "RULE", warnings)) do
        local sel = type(obj.selectorId) == "string" and tbl.by_id[obj.selectorId]
        if sel then
            local rule = build_rule(obj, sel, warnings)
            if rule then sel.rules[#sel.rules + 1] = rule end
        end
    end
    for _, sel in ipairs(tbl.selectors) do stable_sort(sel.rules) end

    -- for route_fast: the selectors that can be candidates (enabled; type 1 only with
    -- conditions), the enabled rules of each, and the selector index
    local active = {}
    for _, sel in ipairs(tbl.selectors) do
        if sel.enabled and (sel.type ~= 1 or sel.has_conditions) then active[#active + 1] = sel end
        local ar = {}
        for _, r in ipairs(sel.rules) do
            if r.enabled then ar[#ar + 1] = r end
        end
        sel.active_rules = ar
    end
    tbl.by_key, tbl.unfiled = fastpath.index(active)
    return tbl
end

---------------------------------------------------------------------------------------------
-- route
---------------------------------------------------------------------------------------------

-- pick(candidates, n) -> the winner by ShenYu's manyMatch*: max score, then min sort, then first
local function pick(cands, n)
    if n == 1 then return cands[1] end
    local best
    for i = 1, n do
        local c = cands[i]
        if c.score == nil then errors.raise_internal("conditionList is null") end
        if not best or c.score > best.score or (c.score == best.score and c.sort < best.sort) then
            best = c
        end
    end
    return best
end

local function header_bytes(req)
    local hs = req.raw.headers or {}
    local total = 0
    for i = 1, #hs do total = total + #hs[i][2] end
    return total
end

local function finish(rule_result, h, lb_error, sel, req)
    if h.header_max_size > 0 and header_bytes(req) > h.header_max_size then
        return M.HEADER_TOO_LARGE
    end
    if h.request_max_size > 0 and (req.raw.content_length or -1) > h.request_max_size then
        return M.ENTITY_TOO_LARGE
    end
    if #sel.upstreams == 0 then return M.NO_UPSTREAM end
    if lb_error and not balance.specified(sel.upstreams, req) then
        if lb_error.status == 400 then errors.raise_bad_request(lb_error.message) end
        errors.raise_internal(lb_error.message)
    end
    return rule_result
end

-- route_plain: ShenYu's evaluation as written, raising its errors (gwsync.errors)
local function route_plain(tbl, req, cands)
    local sels = tbl.selectors
    if #sels == 0 then return M.NO_SELECTOR end
    local n = 0
    for i = 1, #sels do -- every selector is evaluated: a later one's error still counts
        local s = sels[i]
        if s.enabled then
            local hit
            if s.type == 1 then
                hit = s.has_conditions and conditions.match(s.match_mode, s.conditions, req)
            else
                hit = true -- full flow (and any other type): conditions ignored
            end
            if hit then n = n + 1; cands[n] = s end
        end
    end
    if n == 0 then return M.NO_SELECTOR end
    local sel = pick(cands, n)

    if not sel.continued then
        return finish(sel.default_result, handle.DEFAULT, nil, sel, req)
    end
    local rules = sel.rules
    if #rules == 0 then return M.NO_RULE end
    local rule
    if sel.type == 0 then
        rule = rules[#rules] -- full flow: the last rule, its conditions and `enabled` unchecked
    else
        n = 0
        for i = 1, #rules do
            local r = rules[i]
            if r.enabled and conditions.match(r.match_mode, r.conditions, req) then
                n = n + 1; cands[n] = r
            end
        end
        if n == 0 then return M.NO_RULE end -- no backtracking to other selectors
        rule = pick(cands, n)
    end
    return finish(rule.result, rule.handle, rule.lb_error, sel, req)
end

-- pick, or nil where pick raises (a candidate's score is nil)
local function pick_fast(cands, n)
    local best = cands[1]
    if best.score == nil then return nil end
    for i = 2, n do
        local c = cands[i]
        if c.score == nil then return nil end
        if c.score > best.score or (c.score == best.score and c.sort < best.sort) then
            best = c
        end
    end
    return best
end

-- route_fast: route_plain's answer, or nil where route_plain might raise. Same steps, with
-- the selectors the index leaves for the request's first Ant token and each selector's and
-- rule's non-raising test (gwsync.fastpath).
local function route_fast(tbl, req, cands)
    local list = tbl.unfiled
    local by_key = tbl.by_key
    if by_key then list = by_key[req:ant_key()] or list end
    local n = 0
    for i = 1, #list do
        local s = list[i]
        local hit = s.test(req)
        if hit then
            n = n + 1; cands[n] = s
        elseif hit == nil then
            return nil
        end
    end
    if n == 0 then return M.NO_SELECTOR end
    local sel = cands[1]
    if n > 1 then
        sel = pick_fast(cands, n)
        if not sel then return nil end
    end

    if not sel.continued then
        return finish(sel.default_result, handle.DEFAULT, nil, sel, req)
    end
    local rules = sel.rules
    if #rules == 0 then return M.NO_RULE end
    local rule
    if sel.type == 0 then
        rule = rules[#rules] -- full flow: the last rule, its conditions and `enabled` unchecked
    else
        local ar = sel.active_rules
        n = 0
        for i = 1, #ar do
            local r = ar[i]
            local hit = r.test(req)
            if hit then
                n = n + 1; cands[n] = r
            elseif hit == nil then
                return nil
            end
        end
        if n == 0 then return M.NO_RULE end -- no backtracking to other selectors
        rule = cands[1]
        if n > 1 then rule = pick_fast(cands, n) end -- a rule's score is never nil
    end
    -- a load balancer that fails raises unless `specify-domain` names an upstream: leave
    -- that to route_plain (finish() without lb_error cannot raise)
    if rule.lb_error then return nil end
    return finish(rule.result, rule.handle, nil, sel, req)
end

-- route(tbl, req) -> result (see lua_api.md); req is a gwsync.request object
-- No pcall unless route_fast gives up: a trace that returns through a pcall frame aborts
-- ("NYI: return to lower frame"), so the common request must not run inside one.
function M.route(tbl, req)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands -- scratch list reused across requests (one request at a time)
    if not cands then cands = {}; tbl._cands = cands end
    local res = route_fast(tbl, req, cands)
    if res then return res end
    return M.route_plain(tbl, req)
end

-- route_plain(tbl, req) -> result: the plain evaluation alone (route() without its fast
-- path; the differential test compares the two)
function M.route_plain(tbl, req)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands
    if not cands then cands = {}; tbl._cands = cands end
    local ok, res = pcall(route_plain, tbl, req, cands)
    if ok then return res end
    if errors.is_ours(res) then return errors.result(res.status, res.message) end
    error(res, 0)
end

-- route_fast(tbl, req) -> result, or nil when the plain evaluation must decide (for tests)
function M.route_fast(tbl, req)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands
    if not cands then cands = {}; tbl._cands = cands end
    return route_fast(tbl, req, cands)
end

return M
