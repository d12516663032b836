-- gwsync.fastpath: the router's fast path, compiled at build time: condition tests that never
-- raise, and the selector index that skips selectors which provably cannot match.
--
-- Why it exists: ShenYu throws from matching (an unknown operator, a bad pattern, ...), and
-- gwsync.conditions reproduces that with error(), which needs a pcall around routing; its
-- judges are generic (a realData lookup by paramType, then the operator's function). LuaJIT
-- compiles neither well: a trace that returns through a pcall frame aborts, and generic
-- table-driven code gives polymorphic traces. So each condition is also compiled here into a
-- closure test(req) -> true | false | nil specialised for its paramType and operator, where
-- nil means "ShenYu might throw here": router.route() then routes the request again with the
-- plain, raising evaluation under pcall. Errors therefore keep their exact semantics (the
-- plain evaluation decides them), and the common request needs no pcall at all.
-- A test returns nil only where the plain evaluation could raise; it may do so more often
-- than needed in rare cases (TimeBefore/TimeAfter, bad patterns, a null paramValue), which
-- costs those requests a second evaluation, never a different answer.
--
-- The index (gwsync.index) needs to know, per selector or rule, which paths its test can
-- answer other than false for: list_test() says where to file it (place()). ShenYu evaluates
-- every selector; the ones the index skips would have answered false without raising.
local conditions = require "gwsync.conditions"

local M = {}

local byte, find, lower = string.byte, string.find, string.lower
local is_blank = conditions.is_blank
local SLASH = 47

local function TRUE() return true end
local function FALSE() return false end
local function ERR() return nil end
M.TRUE = TRUE

-- ParameterDataFactory.builderData for one paramType and paramName, as a function(req) that
-- never raises: the realData (nil when absent), or false where the plain evaluation raises
-- (ip: an X-Forwarded-For entry that is not an IP literal). nil: this paramType always raises.
local function getter(ptype, pname)
    if ptype == "uri" then return function(req) return req.path end end
    if ptype == "req_method" then return function(req) return req.method end end
    if ptype == "header" then
        if pname == nil then return function() return "" end end
        local lname = lower(pname)
        return function(req) return req:header_lc(lname) or "" end
    end
    if ptype == "query" then
        if pname == nil then return function() return nil end end
        return function(req) return req:query_param(pname) end
    end
    if ptype == "cookie" then
        if pname == nil then return function() return "" end end
        return function(req) return req:cookie(pname) or "" end
    end
    if ptype == "ip" then return function(req) return req:client_ip_or_false() end end
    if ptype == "host" then return function(req) return req:client_host() end end
    if ptype == "domain" then return function(req) return req:domain() end end
    if ptype == "post" then
        if pname == "startDateTime" or pname == "serialVersionUID" then return nil end
        return function(req) return req:context_field(pname) end
    end
    return nil
end

-- A judge that may raise once realData is non-blank (a null paramValue, a bad regex or
-- pattern, a date): answer false for blank realData as ShenYu does, else leave it to the
-- plain evaluation.
local function unsafe_test(get)
    return function(req)
        local rd = get(req)
        if rd == false then return nil end
        if is_blank(rd) then return false end
        return nil
    end
end

-- realData, the blank check, then the judge (which cannot raise here)
local function generic_test(get, fn, c)
    return function(req)
        local rd = get(req)
        if rd == false then return nil end
        if is_blank(rd) then return false end
        return fn(rd, req, c)
    end
end

local function uri_match_test(c)
    local m, info = c.ant, c.ant_info
    local lit1 = info.lit1
    if info.prefix then
        -- "/lit1/**": a path starting with "/" is not blank, and matches iff its first token
        -- is lit1 (no token list, no matcher)
        return function(req)
            return byte(req.path, 1) == SLASH and req:ant_key() == lit1
        end
    end
    local lit_path = info.lit_path
    if lit_path then
        -- "/a/b/**": a prefix test on the path text; a token list only for paths with "//"
        local after = #lit_path + 1
        return function(req)
            if req:ant_key() ~= lit1 then return false end
            local p = req.path
            if find(p, lit_path, 1, true) == 1 then
                local ch = byte(p, after)
                if ch == nil or ch == SLASH then return true end
            end
            if not find(p, "//", 1, true) then return false end
            if is_blank(p) then return false end
            return m(p, req:ant_tokens())
        end
    end
    if lit1 then
        return function(req)
            if req:ant_key() ~= lit1 then return false end
            local p = req.path
            if is_blank(p) then return false end
            return m(p, req:ant_tokens())
        end
    end
    return function(req)
        local p = req.path
        if is_blank(p) then return false end
        return m(p, req:ant_tokens())
    end
end

local function uri_exclude_test(c)
    local m, lit1 = c.ant, c.ant_info.lit1
    return function(req)
        local p = req.path
        if is_blank(p) then return false end
        if lit1 and req:ant_key() ~= lit1 then return true end
        return not m(p, req:ant_tokens())
    end
end

local function uri_pathpattern_test(c)
    local m, lit1 = c.pp, c.pp_info.lit1
    return function(req)
        local p = req.path
        if is_blank(p) then return false end
        if lit1 then
            local k = req:pp_key()
            if k and k ~= lit1 then return false end
        end
        local pc = req:path_container_or_false()
        if not pc then return nil end -- the path does not parse: ShenYu's 400
        return m(p, pc)
    end
end

local function equals_test(c, get)
    local pv = c.pv
    if c.ptype == "header" and c.pname ~= nil then
        local lname = lower(c.pname)
        return function(req) return req:header_lc(lname) == pv end
    end
    if c.ptype == "uri" then return function(req) return req.path == pv end end
    if c.ptype == "req_method" then return function(req) return req.method == pv end end
    return function(req)
        local rd = get(req)
        if rd == false then return nil end
        return rd == pv
    end
end

-- test(c) -> test function, may_raise (the test can answer nil)
-- c is a compiled condition of gwsync.conditions; the order of checks is conditions.judge's.
-- Made once per compiled condition (which is shared by equal conditions, and never changes)
-- and kept on it.
local make_test
function M.test(c)
    local t = c._test
    if t then return t, c._may_raise end
    local may_raise
    t, may_raise = make_test(c)
    c._test, c._may_raise = t, may_raise
    return t, may_raise
end

function make_test(c)
    if c.null then return ERR, true end
    local get = getter(c.ptype, c.pname)
    if not get then return ERR, true end
    local may_raise = c.ptype == "ip"
    if c.blank_op then
        if may_raise then
            return function(req)
                if get(req) == false then return nil end
                return false
            end, true
        end
        return FALSE, false
    end
    if c.bad_op then return ERR, true end
    local op = c.op == "=" and "equals" or c.op
    if op == "isBlank" then
        return function(req)
            local rd = get(req)
            if rd == false then return nil end
            return is_blank(rd)
        end, may_raise
    end
    if op == "TimeBefore" or op == "TimeAfter" or c.pv == nil then
        return unsafe_test(get), true
    end
    if c.ptype == "uri" then
        if op == "match" or op == "exclude" then
            if c.ant_info.raises then return unsafe_test(get), true end
            if op == "match" then return uri_match_test(c), false end
            return uri_exclude_test(c), false
        end
        if op == "pathPattern" then
            if not c.pp_info or c.pp_info.raises then return unsafe_test(get), true end
            return uri_pathpattern_test(c), true -- a path that does not parse raises
        end
    end
    if op == "regex" and c.compile_error then return unsafe_test(get), true end
    if op == "equals" then
        -- realData == a non-blank paramValue is itself non-blank; a blank one never equals
        -- a non-blank realData
        if is_blank(c.pv) then
            if not may_raise then return FALSE, false end
            return function(req) -- ip: only whether it raises matters
                if get(req) == false then return nil end
                return false
            end, true
        end
        return equals_test(c, get), may_raise
    end
    return generic_test(get, c.fn, c), may_raise
end

-- all(list) / any(list): MatchStrategyFactory's AND / OR over tests, short-circuiting in
-- list order, nil (might raise) passed on. Unrolled for up to three conditions: a loop that
-- leaves on its first pass makes LuaJIT abort the traces that run it.
local function all(t)
    local n = #t
    if n == 0 then return TRUE end
    if n == 1 then return t[1] end
    local a, b, c = t[1], t[2], t[3]
    if n == 2 then
        return function(req)
            local r = a(req)
            if not r then return r end
            return b(req)
        end
    end
    if n == 3 then
        return function(req)
            local r = a(req)
            if not r then return r end
            r = b(req)
            if not r then return r end
            return c(req)
        end
    end
    return function(req)
        for i = 1, n do
            local r = t[i](req)
            if not r then return r end
        end
        return true
    end
end

local function any(t)
    local n = #t
    if n == 0 then return FALSE end
    if n == 1 then return t[1] end
    local a, b, c = t[1], t[2], t[3]
    if n == 2 then
        return function(req)
            local r = a(req)
            if r ~= false then return r end
            return b(req)
        end
    end
    if n == 3 then
        return function(req)
            local r = a(req)
            if r ~= false then return r end
            r = b(req)
            if r ~= false then return r end
            return c(req)
        end
    end
    return function(req)
        for i = 1, n do
            local r = t[i](req)
            if r ~= false then return r end
        end
        return false
    end
end

-- Where a condition files its item in the router's index (gwsync.index): a description of
-- the paths it can be true for, or nil when it says nothing about the path.
--   { kind = "exact", value = pv }             uri `=`: the path is pv
--   { kind = "prefix", segs = {..}, part = s }  uri `startsWith`: the path's first #segs
--                                               "/"-separated pieces (empty ones counted)
--                                               are segs, each followed by "/", and the next
--                                               piece starts with part
--   { kind = "ant", segs = {..} }               uri `match`: the path's first Ant tokens
--   { kind = "pp", segs = {..} }                uri `pathPattern`: the path's first
--                                               PathContainer segments
-- The test answers false (without raising) for every path outside the description, except
-- that a pathPattern test raises for a path that does not parse (pp_risky: the index gives
-- such paths to the plain evaluation whenever it holds a pp_risky item).
local function split_prefix(pv)
    local segs, i = {}, 1
    while true do
        local j = find(pv, "/", i, true)
        if not j then break end
        segs[#segs + 1] = pv:sub(i, j - 1)
        i = j + 1
    end
    return segs, pv:sub(i)
end

-- place(c) -> descriptor | nil, usable (the condition's test can be skipped for paths outside
-- the descriptor), pp_risky
local function place(c)
    if c.ptype ~= "uri" or c.null or c.blank_op or c.bad_op or c.pv == nil then
        return nil, false, false
    end
    local op = c.op
    if op == "=" or op == "equals" then
        return { kind = "exact", value = c.pv }, true, false
    end
    if op == "startsWith" then
        local segs, part = split_prefix(c.pv)
        if #segs == 0 and part == "" then return nil, true, false end
        return { kind = "prefix", segs = segs, part = part }, true, false
    end
    if op == "match" and c.ant_info and not c.ant_info.raises then
        local lits = c.ant_info.lits
        if #lits == 0 then return nil, true, false end
        return { kind = "ant", segs = lits }, true, false
    end
    if op == "pathPattern" and c.pp_info and not c.pp_info.raises and not c.compile_error then
        local lits = c.pp_info.lits
        if #lits == 0 then return nil, true, true end
        return { kind = "pp", segs = lits }, true, true
    end
    return nil, false, false
end
M.place = place

-- list_test(match_mode, compiled_conditions) -> test(req) -> true | false | nil, key, places,
-- pp_risky
-- key (kept for the tests of the first index): the literal first Ant token the list's match
-- needs, or nil.
-- places: where the router's index files the item (a list of descriptors), or nil (always
-- evaluated). AND (or OR of one condition): the first condition with a descriptor among the
-- leading conditions whose tests cannot raise (a condition that might raise ends the search:
-- ShenYu would evaluate it for every path). OR of several: one descriptor per condition when
-- every condition has one (the item is a candidate when any of them admits the path).
function M.list_test(mode, conds)
    local tests, key, keyable = {}, nil, mode ~= 1 or #conds == 1
    local places, risky = nil, false
    local searching = keyable
    for i = 1, #conds do
        local c = conds[i]
        local t, may_raise = M.test(c)
        tests[i] = t
        if keyable and key == nil then
            if c.op == "match" and c.ptype == "uri" and c.ant_info and not c.ant_info.raises
                and c.ant_info.lit1 and not c.blank_op and not c.bad_op then
                key = c.ant_info.lit1
            elseif may_raise then
                keyable = false
            end
        end
        if searching then
            local d, usable, pp = place(c)
            if pp then risky = true end
            if d then
                places = { d }
                searching = false
            elseif not usable and may_raise then
                searching = false
            end
        end
    end
    if not keyable then key = nil end
    if mode == 1 and #conds > 1 then
        places, risky = {}, false
        for i = 1, #conds do
            local d, _, pp = place(conds[i])
            if not d then places = nil break end
            places[i] = d
            if pp then risky = true end
        end
    end
    if not places then risky = false end
    return (mode == 1) and any(tests) or all(tests), key, places, risky
end

return M
