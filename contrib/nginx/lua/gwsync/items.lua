-- gwsync.items: one cache item (group, key, JSON text) -> its decoded and compiled form.
--
-- The route table (gwsync.routes) keeps one compiled item per (group, key) and, on a change,
-- compiles only the items whose text changed. So everything that depends on one item alone
-- is done here, once: reading the fields routing needs, ShenYu's required-field checks,
-- condition compilation (regex / AntPath / PathPattern, the fast path's tests), the rule
-- handle, upstream lists. What depends on several items (which selector a rule belongs to, a
-- selector's upstreams from DISCOVER_UPSTREAM, ranking) is the table's job.
--
-- A compiled item is never modified after compile() (but for what is made on first need and
-- always the same: a selector's handle upstream list, a rule's compiled conditions, a
-- pattern's matcher, and the index's marks, gwsync.index): a table being built off to the side may share it with the live one,
-- and a compiled rule is itself what route() answers for it.
-- It keeps only what routing and the debug headers read, and the text's digest
-- (gwsync.digest) to tell an unchanged item at a whole read of its group. A table of 100,000
-- rules holds 100,000 of these, so they are kept small: a rule is one table of a dozen fields
-- plus its own conditions (issue 19: about 1 KB a rule, where the decoded document and the
-- text were 3 KB).
--
-- The text is read by gwsync.jsonscan (only the fields below, in place: an LMDB value is
-- never copied into a Lua string), or by lua-cjson when the scanner is not sure (escaped keys,
-- numbers outside JSON's grammar, deep nesting); both give the same fields.
--
-- Items ShenYu would accept but then fail on with a NullPointerException (HTTP 500) for every
-- request that reaches them (missing required fields, a missing or unparseable rule handle)
-- are compiled as `valid = false` with a warning, and left out by the table. All of that is
-- decided at build; a rule's conditions alone are compiled on first use (M.compile_conds).
--
-- An item's text longer than MAX_BYTES (256 KiB: about 3,000 conditions, or 1,500 upstreams)
-- is left out the same way, unread: a selector of a million conditions (80 MB of JSON) would
-- hold the worker for seconds in one compile (no item is compiled in slices) and every request
-- reaching it for tens of ms, so it is refused before any byte of it is scanned or hashed
-- (contrib/nginx/README.md, "What a request can cost"). Requests route as if it were absent.
local ffi = require "ffi"
local cjson = require "cjson.safe"
local jsonscan = require "gwsync.jsonscan"
local digest = require "gwsync.digest"
local conditions = require "gwsync.conditions"
local fastpath = require "gwsync.fastpath"
local upstreams = require "gwsync.upstreams"
local handle = require "gwsync.handle"
local routecache = require "gwsync.routecache"

local M = {}
local new_tab = require "table.new"
local lazy_test -- (below)

local PLUGIN = "divide"
M.PLUGIN = PLUGIN

M.MAX_BYTES = 256 * 1024

-- digest_of(p, n) -> the digest the table keeps of an item's text (gwsync.digest), or, for a
-- text over MAX_BYTES, -n: such a text is not hashed (nor read), and one of another length
-- is another digest (an unchanged length leaves it out unchanged, as it should)
function M.digest_of(p, n)
    if n > M.MAX_BYTES then return -n end
    return digest.of(p, n)
end

local function is_bool(v) return type(v) == "boolean" end
local function as_num(v)
    if type(v) == "number" then return v end
    if type(v) == "string" then return tonumber(v) end
    return nil
end
local function nonempty_string(v) return type(v) == "string" and v ~= "" end

-- Each group's compile: (key, decoded object, now_ms, digest) -> item, made in one table
-- constructor (its size known at once: no table grown field by field).
local function plugin(_, obj, _, dg)
    if obj.name ~= PLUGIN then return { digest = dg } end
    if is_bool(obj.enabled) then return { digest = dg, divide = true, enabled = obj.enabled } end
    return { digest = dg, divide = true, enabled = false,
             warnings = { "PLUGIN divide: no enabled (ShenYu would fail with HTTP 500), skipped" } }
end

local function discover(_, obj, now_ms, dg)
    if obj.pluginName ~= PLUGIN or not nonempty_string(obj.selectorId) then return { digest = dg } end
    return { digest = dg, divide = true, selector_id = obj.selectorId,
             list = upstreams.from_discovery(obj, now_ms) }
end

local function selector(_, obj, now_ms, dg)
    if obj.pluginName ~= PLUGIN then return { digest = dg } end
    local id = obj.id
    if not nonempty_string(id) then
        return { digest = dg, divide = true, warnings = { "SELECTOR without id skipped" } }
    end
    local list = obj.conditionList
    local typ, sort, mode = as_num(obj.type), as_num(obj.sort), as_num(obj.matchMode)
    local missing
    if not is_bool(obj.enabled) then missing = "enabled"
    elseif not typ then missing = "type"
    elseif not sort then missing = "sort"
    elseif not is_bool(obj.logged) then missing = "logged"
    elseif typ == 1 and not mode and type(list) == "table" and #list > 0 then
        missing = "matchMode"
    end
    if missing then
        return { digest = dg, divide = true, warnings = { "SELECTOR " .. id .. ": no " .. missing
            .. " (ShenYu would fail with HTTP 500), skipped" } }
    end
    local conds, cerrs = conditions.compile_list(list)
    local warnings
    for i = 1, #cerrs do
        warnings = warnings or {}
        warnings[#warnings + 1] = "SELECTOR " .. id .. ": condition fails at request time: " .. cerrs[i]
    end
    local has = type(list) == "table" and #list > 0
    -- reads more than the path (gwsync.routecache: the route cache is bypassed while any does)
    local other = nil
    for i = 1, #conds do
        local c = conds[i]
        if c.null or not routecache.path_only(c.ptype, c.op) then other = true end
    end
    -- ranking score: conditionList.size() for AND (matchMode 0), 0 otherwise; a null
    -- conditionList on an AND selector makes the ranking throw (NPE): score nil
    local score = 0
    if mode == 0 then score = type(list) == "table" and #list or nil end
    -- the upstreams of admins before 2.6, used only when no DISCOVER_UPSTREAM entry names the
    -- selector: parsed on first need (M.handle_list), which 2.6+ admins' selectors never have
    local h, hobj = obj.handle, nil
    if type(h) == "table" then hobj = h end
    if type(h) ~= "string" or h == "" then h = nil end
    return {
        digest = dg, divide = true, valid = true, id = id, warnings = warnings,
        enabled = obj.enabled, type = typ, sort = sort, match_mode = mode, conds = conds,
        -- full flow (type 0): conditions ignored
        test = typ == 1 and fastpath.item_test(mode, conds) or fastpath.TRUE,
        has_conditions = has, score = score,
        continued = obj.continued ~= false, -- null counts as true
        handle = h, handle_obj = hobj, now_ms = (h or hobj) and now_ms or nil,
        reads_other = other,
    }
end

-- handle_list(selector_item) -> the upstream list of the selector's own handle. Made once
-- and kept on the item (the same list for the same item, whoever asks first).
local NO_UPSTREAMS = {}
function M.handle_list(it)
    local l = it.handle_list
    if not l then
        if it.handle or it.handle_obj then
            l = upstreams.from_selector_handle(it.handle or it.handle_obj, it.now_ms)
        else
            l = NO_UPSTREAMS
        end
        it.handle_list = l
    end
    return l
end

-- A rule's conditions are compiled the first time a request reaches its selector, not at
-- build (issue 29: a first build of 10,000 x 10 spent a third of its CPU compiling the rules'
-- path patterns, most of which no request may ever need). At build a rule is read and checked
-- whole (every field ShenYu requires, its handle), so an item ShenYu would fail on is still
-- left out, with its warning, when the table is built; only what cannot make ShenYu refuse
-- the rule (its conditions: one that fails to compile fails at request time, as ShenYu's
-- does) waits. The condition objects are copied (the scanner's are reused), four strings
-- each. compile_conds(it) compiles them once, on the item (the same result whoever asks
-- first: shared items stay as good as unmodified), and logs their warnings then.
local ABSENT, NOT_OBJECT = {}, {} -- a field that is absent; an element that is no object
local function copy_conds(list)
    local n = #list
    local out = new_tab(4 * n, 0) -- one flat table: four values a condition
    local j = 0
    for i = 1, n do
        local c = list[i]
        if type(c) == "table" then
            local pt, op, pn, pv = c.paramType, c.operator, c.paramName, c.paramValue
            if pt == nil then pt = ABSENT end
            if op == nil then op = ABSENT end
            if pn == nil then pn = ABSENT end
            if pv == nil then pv = ABSENT end
            out[j + 1], out[j + 2], out[j + 3], out[j + 4] = pt, op, pn, pv
        else
            out[j + 1], out[j + 2], out[j + 3], out[j + 4] = NOT_OBJECT, c, ABSENT, ABSENT
        end
        j = j + 4
    end
    return out
end

-- the condition list copy_conds read, as the scanner gave it
local function absent(v) if v == ABSENT then return nil end return v end
local function uncopy_conds(raw)
    local n = #raw / 4
    local list = new_tab(n, 0)
    for i = 1, n do
        local j = 4 * (i - 1)
        if raw[j + 1] == NOT_OBJECT then
            list[i] = raw[j + 2]
        else
            list[i] = { paramType = absent(raw[j + 1]), operator = absent(raw[j + 2]),
                        paramName = absent(raw[j + 3]), paramValue = absent(raw[j + 4]) }
        end
    end
    return list
end

-- where compile_conds reports a rule's condition errors (nginx's log in a worker)
M.log_warning = function(line)
    if ngx and ngx.log then ngx.log(ngx.WARN, "gwsync: ", line) end
end

-- compile_conds(it): a rule item's conditions compiled, its test set (once)
function M.compile_conds(it)
    local raw = it.raw_conds
    if not raw then return end
    local conds, cerrs = conditions.compile_list(uncopy_conds(raw))
    it.conds = conds
    it.test = fastpath.item_test(it.match_mode, conds)
    fastpath.flatten(it)
    it.raw_conds = nil
    for i = 1, #cerrs do
        M.log_warning("RULE " .. it.id .. ": condition fails at request time: " .. cerrs[i])
    end
end
local compile_conds = M.compile_conds

-- a rule's test until its conditions are compiled: compiles them, then tests with them (the
-- first request only; later ones call the compiled test directly, no branch on the path)
lazy_test = function(it, req)
    compile_conds(it)
    return it.test(it, req)
end

local function rule(key, obj, _, dg)
    local sid = obj.selectorId
    if type(sid) ~= "string" then return { digest = dg } end
    local id = obj.id
    if not nonempty_string(id) then
        return { digest = dg, selector_id = sid, warnings = { "RULE without id skipped" } }
    end
    local list = obj.conditionDataList
    local sort, mode = as_num(obj.sort), as_num(obj.matchMode)
    local missing
    if not is_bool(obj.enabled) then missing = "enabled"
    elseif not sort then missing = "sort"
    elseif not is_bool(obj.loged) then missing = "loged"
    elseif not mode then missing = "matchMode"
    elseif type(list) ~= "table" then missing = "conditionDataList"
    end
    if missing then
        return { digest = dg, selector_id = sid, warnings = { "RULE " .. id .. ": no " .. missing
            .. " (ShenYu would fail with HTTP 500), skipped" } }
    end
    local h, lb_error = handle.parse(obj.handle)
    if not h then
        return { digest = dg, selector_id = sid, warnings = { "RULE " .. id .. ": " .. lb_error
            .. " (ShenYu would fail with HTTP 500), skipped" } }
    end
    local warnings
    if lb_error then
        warnings = { "RULE " .. id .. ": loadBalance fails at request time: " .. lb_error.message }
    end
    -- reads more than the path (gwsync.routecache), told from the fields as read
    local other = nil
    for i = 1, #list do
        local c = list[i]
        if type(c) ~= "table" or not routecache.path_only(c.paramType, c.operator) then other = true end
    end
    -- the conditions are compiled on first use (M.compile_conds): kept as read until then
    return {
        digest = dg, selector_id = sid, valid = true, key = key, id = id, warnings = warnings,
        enabled = obj.enabled, sort = sort, match_mode = mode,
        raw_conds = copy_conds(list), conds = nil, test = lazy_test,
        score = (mode == 0) and #list or 0,
        handle = h, lb_error = lb_error, reads_other = other,
    }
end

local COMPILE = { PLUGIN = plugin, DISCOVER_UPSTREAM = discover, SELECTOR = selector, RULE = rule }
M.GROUPS = { "PLUGIN", "DISCOVER_UPSTREAM", "SELECTOR", "RULE" }

-- the fields each group's compile reads (jsonscan.want): a condition list's objects are read
-- for their four fields only, an upstream list's for the upstream's
local COND = { "paramType", "operator", "paramName", "paramValue" }
local WANT = {
    PLUGIN = jsonscan.want({ name = true, enabled = true }),
    DISCOVER_UPSTREAM = jsonscan.want({ pluginName = true, selectorId = true,
        upstreamDataList = { "url", "protocol", "status", "weight", "dateCreated", "props" } }),
    SELECTOR = jsonscan.want({ pluginName = true, id = true, type = true, sort = true,
        matchMode = true, enabled = true, logged = true, conditionList = COND,
        continued = true, handle = true }),
    RULE = jsonscan.want({ selectorId = true, id = true, sort = true, matchMode = true,
        enabled = true, loged = true, conditionDataList = COND, handle = true }),
}

local u8p = jsonscan.u8p
local scan = jsonscan.scan
local scratch = {}
local cast, fstr = ffi.cast, ffi.string

-- compile_raw(group, key, p, n, now_ms, dg) -> item, from the n bytes of JSON text at p (a
-- pointer that stays valid during the call: an LMDB value in an open read transaction, or a
-- Lua string). dg: the text's digest (digest.of(p, n)). Raises on a bug (or data nothing here
-- foresaw): compile_at() catches it per item, gwsync.cache per batch of items (a pcall per
-- item would keep LuaJIT from compiling the build: a trace cannot return through a pcall).
-- Fields: digest; divide (it is the divide plugin's); valid (a usable selector or rule);
-- warnings (list of strings or nil); decode_error; and per group what gwsync.routes reads.
local function compile_raw(group, key, p, n, now_ms, dg)
    if n > M.MAX_BYTES then
        return { digest = dg, decode_error = true,
                 warnings = { group .. " item " .. key .. ": " .. n .. " bytes, over the "
                     .. M.MAX_BYTES .. " an item may have here; skipped (routed as if absent)" } }
    end
    local want = WANT[group]
    local obj
    if want and scan(p, n, want, scratch) then
        obj = scratch
    else
        obj = cjson.decode(fstr(p, n))
    end
    if type(obj) ~= "table" then
        return { digest = dg, decode_error = true,
                 warnings = { group .. " item " .. key .. ": not a JSON object, skipped" } }
    end
    local f = COMPILE[group]
    if f then return f(key, obj, now_ms, dg) end
    return { digest = dg }
end
M.compile_raw = compile_raw

-- failed(group, key, dg, err) -> the item of a text whose compile raised: left out, said so
function M.failed(group, key, dg, err)
    return { digest = dg, decode_error = true,
             warnings = { group .. " item " .. key .. ": cannot be compiled (" .. tostring(err)
                 .. "), skipped" } }
end

-- compile_at(group, key, p, n, now_ms, dg) -> item (as compile_raw; never raises)
function M.compile_at(group, key, p, n, now_ms, dg)
    dg = dg or M.digest_of(p, n)
    local ok, it = pcall(compile_raw, group, key, p, n, now_ms, dg)
    if ok then return it end
    return M.failed(group, key, dg, it)
end

-- compile(group, key, text, now_ms) -> item. Never raises on bad data: an item that is not a
-- JSON object, or that belongs to another plugin, is compiled to an item the table ignores.
function M.compile(group, key, text, now_ms)
    return M.compile_at(group, key, cast(u8p, text), #text, now_ms, M.digest_of(text, #text))
end

-- decode(text) -> the whole decoded item (lua-cjson): for tools and tests
M.decode = cjson.decode

return M
