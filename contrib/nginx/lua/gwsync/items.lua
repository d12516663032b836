-- gwsync.items: one cache item (group, key, raw JSON) -> its decoded and compiled form.
--
-- The route table (gwsync.routes) keeps one compiled item per (group, key) and, on a change,
-- compiles only the items whose raw JSON changed. So everything that depends on one item
-- alone is done here, once: JSON decoding, ShenYu's required-field checks, condition
-- compilation (regex / AntPath / PathPattern, the fast path's tests and index places), the
-- rule handle, upstream lists. What depends on several items (which selector a rule belongs
-- to, a selector's upstreams from DISCOVER_UPSTREAM, ranking) is the table's job.
--
-- A compiled item is never modified after compile() (but for a selector's handle upstream
-- list, made on first need, always the same): a table being built off to the side may share it
-- with the live one (the raw JSON is kept in it to tell an unchanged item).
-- What it keeps of the decoded JSON is only what routing and the debug headers read (`data`:
-- id, name, pluginName, selectorId), not the whole object: the decoded document is most of
-- an item's memory and nothing needs it after compiling.
--
-- Items ShenYu would accept but then fail on with a NullPointerException (HTTP 500) for every
-- request that reaches them (missing required fields, a missing or unparseable rule handle)
-- are compiled as `valid = false` with a warning, and left out by the table.
local cjson = require "cjson.safe"
local conditions = require "gwsync.conditions"
local fastpath = require "gwsync.fastpath"
local upstreams = require "gwsync.upstreams"
local handle = require "gwsync.handle"

local M = {}

local PLUGIN = "divide"
M.PLUGIN = PLUGIN

local function is_bool(v) return type(v) == "boolean" end
local function as_num(v)
    if type(v) == "number" then return v end
    if type(v) == "string" then return tonumber(v) end
    return nil
end
local function nonempty_string(v) return type(v) == "string" and v ~= "" end
local function str(v) return type(v) == "string" and v or nil end

local function plugin(it, obj)
    if obj.name ~= PLUGIN then return end
    it.divide = true
    if is_bool(obj.enabled) then
        it.enabled = obj.enabled
    else
        it.enabled = false
        it.warnings = { "PLUGIN divide: no enabled (ShenYu would fail with HTTP 500), skipped" }
    end
end

local function discover(it, obj, now_ms)
    if obj.pluginName ~= PLUGIN or not nonempty_string(obj.selectorId) then return end
    it.divide = true
    it.selector_id = obj.selectorId
    it.list = upstreams.from_discovery(obj, now_ms)
end

local function selector(it, obj, now_ms)
    if obj.pluginName ~= PLUGIN then return end
    it.divide = true
    local id = obj.id
    if not nonempty_string(id) then
        it.warnings = { "SELECTOR without id skipped" }
        return
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
        it.warnings = { "SELECTOR " .. id .. ": no " .. missing
            .. " (ShenYu would fail with HTTP 500), skipped" }
        return
    end
    local conds, cerrs = conditions.compile_list(obj.conditionList)
    local warnings
    for _, e in ipairs(cerrs) do
        warnings = warnings or {}
        warnings[#warnings + 1] = "SELECTOR " .. id .. ": condition fails at request time: " .. e
    end
    it.warnings = warnings
    local test, places, risky = fastpath.TRUE, nil, false -- full flow: conditions ignored
    if typ == 1 then
        local _
        test, _, places, risky = fastpath.list_test(mode, conds)
    end
    it.valid = true
    it.id = id
    it.data = { id = id, name = str(obj.name), pluginName = PLUGIN }
    it.enabled, it.type, it.sort, it.match_mode = obj.enabled, typ, sort, mode
    it.conditions, it.test, it.places, it.risky = conds, test, places, risky or nil
    it.has_conditions = type(obj.conditionList) == "table" and #obj.conditionList > 0
    -- ranking score: conditionList.size() for AND (matchMode 0), 0 otherwise; a null
    -- conditionList on an AND selector makes the ranking throw (NPE): score nil
    it.score = 0
    if mode == 0 then
        it.score = type(obj.conditionList) == "table" and #obj.conditionList or nil
    end
    it.continued = obj.continued ~= false -- null counts as true
    -- the upstreams of admins before 2.6, used only when no DISCOVER_UPSTREAM entry names the
    -- selector: parsed on first need (M.handle_list), which 2.6+ admins' selectors never have
    it.handle = type(obj.handle) == "string" and obj.handle or nil
    it.handle_obj = type(obj.handle) == "table" and obj.handle or nil
    it.now_ms = now_ms
end

-- handle_list(selector_item) -> the upstream list of the selector's own handle. Made once
-- and kept on the item (the same list for the same item, whoever asks first).
function M.handle_list(it)
    local l = it.handle_list
    if not l then
        l = upstreams.from_selector_handle(it.handle or it.handle_obj, it.now_ms)
        it.handle_list = l
    end
    return l
end

local function rule(it, obj)
    local sid = obj.selectorId
    if type(sid) ~= "string" then return end
    it.selector_id = sid
    local id = obj.id
    if not nonempty_string(id) then
        it.warnings = { "RULE without id skipped" }
        return
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
        it.warnings = { "RULE " .. id .. ": no " .. missing .. " (ShenYu would fail with HTTP 500), skipped" }
        return
    end
    local h, lb_error = handle.parse(obj.handle)
    if not h then
        it.warnings = { "RULE " .. id .. ": " .. lb_error .. " (ShenYu would fail with HTTP 500), skipped" }
        return
    end
    local conds, cerrs = conditions.compile_list(obj.conditionDataList)
    local warnings
    for _, e in ipairs(cerrs) do
        warnings = warnings or {}
        warnings[#warnings + 1] = "RULE " .. id .. ": condition fails at request time: " .. e
    end
    if lb_error then
        warnings = warnings or {}
        warnings[#warnings + 1] = "RULE " .. id .. ": loadBalance fails at request time: " .. lb_error.message
    end
    it.warnings = warnings
    local test, _, places, risky = fastpath.list_test(mode, conds)
    it.valid = true
    it.data = { id = id, name = str(obj.name), selectorId = sid, pluginName = str(obj.pluginName) }
    it.enabled, it.sort, it.match_mode = obj.enabled, sort, mode
    it.conditions, it.test, it.places, it.risky = conds, test, places, risky or nil
    it.score = (mode == 0) and #obj.conditionDataList or 0
    it.handle, it.lb_error = h, lb_error
end

local COMPILE = { PLUGIN = plugin, DISCOVER_UPSTREAM = discover, SELECTOR = selector, RULE = rule }
M.GROUPS = { "PLUGIN", "DISCOVER_UPSTREAM", "SELECTOR", "RULE" }

-- compile(group, key, raw, now_ms) -> item. Never raises on bad data: an item that is not a
-- JSON object, or that belongs to another plugin, is compiled to an item the table ignores.
-- Fields: raw, group; divide (it is the divide plugin's); valid (a usable selector or rule);
-- warnings (list of strings or nil); and per group what gwsync.routes reads (few: a table of
-- 100,000 rules holds 100,000 of these).
function M.compile(group, key, raw, now_ms)
    local it = { raw = raw, group = group }
    local obj = cjson.decode(raw)
    if type(obj) ~= "table" then
        it.warnings = { group .. " item " .. key .. ": not a JSON object, skipped" }
        it.decode_error = true
        return it
    end
    local f = COMPILE[group]
    if f then
        local ok, err = pcall(f, it, obj, now_ms)
        if not ok then -- a bug, or data nothing above foresaw: leave the item out, say so
            it = { raw = raw, group = group, decode_error = true,
                   warnings = { group .. " item " .. key .. ": cannot be compiled (" .. tostring(err)
                       .. "), skipped" } }
        end
    end
    return it
end

return M
