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
local antpath = require "gwsync.antpath"

local M = {}

local byte, find, lower = string.byte, string.find, string.lower
local is_blank, starts = conditions.is_blank, conditions.starts
local new_tab = require "table.new"
local ant_of = conditions.ant_of
local matches = antpath.matches
local SLASH = 47

-- Every test is a function shared by all the conditions (or items) of its kind, called as
-- t(c, req) with what it needs on c: no closure per condition or item. LuaJIT does not compile
-- code that makes closures, so closures would leave a table's build in the interpreter, and
-- each closure with its upvalues costs a few hundred bytes of a worker's table.

-- ParameterDataFactory.builderData for one paramType, as get(req, c) that never raises: the
-- realData (nil when absent), or false where the plain evaluation raises (ip: an
-- X-Forwarded-For entry that is not an IP literal). No getter: this paramType always raises.
local GET = {
    uri = function(req) return req.path end,
    req_method = function(req) return req.method end,
    header = function(req, c)
        local ln = c.lname
        if ln == nil then return "" end
        return req:header_lc(ln) or ""
    end,
    query = function(req, c)
        local pn = c.pname
        if pn == nil then return nil end
        return req:query_param(pn)
    end,
    cookie = function(req, c)
        local pn = c.pname
        if pn == nil then return "" end
        return req:cookie(pn) or ""
    end,
    ip = function(req) return req:client_ip_or_false() end,
    host = function(req) return req:client_host() end,
    domain = function(req) return req:domain() end,
    post = function(req, c) return req:context_field(c.pname) end,
}

local function TRUE() return true end
local function FALSE() return false end
local function ERR() return nil end
M.TRUE = TRUE

-- a blank operator on `ip`: only whether realData raises matters
local function t_blank_ip(c, req)
    if c.get(req, c) == false then return nil end
    return false
end

local function t_is_blank(c, req)
    local rd = c.get(req, c)
    if rd == false then return nil end
    return is_blank(rd)
end

-- A judge that may raise once realData is non-blank (a null paramValue, a bad regex or
-- pattern, a date): answer false for blank realData as ShenYu does, else leave it to the
-- plain evaluation.
local function t_unsafe(c, req)
    local rd = c.get(req, c)
    if rd == false then return nil end
    if is_blank(rd) then return false end
    return nil
end

-- realData, the blank check, then the judge (which cannot raise here)
local function t_generic(c, req)
    local rd = c.get(req, c)
    if rd == false then return nil end
    if is_blank(rd) then return false end
    return c.fn(rd, req, c)
end

-- "/lit1/**": a path starting with "/" is not blank, and matches iff its first token is lit1
-- (no token list, no matcher)
local function t_ant_prefix(c, req)
    return byte(req.path, 1) == SLASH and req:ant_key() == c.lit1
end

-- "/a/b/**": a prefix test on the path text; a token list only for paths with "//"
local function t_ant_lit_path(c, req)
    if req:ant_key() ~= c.lit1 then return false end
    local p = req.path
    local lp = c.lit_path
    if starts(p, lp) then
        local ch = byte(p, #lp + 1)
        if ch == nil or ch == SLASH then return true end
    end
    if not find(p, "//", 1, true) then return false end
    if is_blank(p) then return false end
    return matches(ant_of(c), p, req:ant_tokens())
end

local function t_ant_lit1(c, req)
    if req:ant_key() ~= c.lit1 then return false end
    local p = req.path
    if is_blank(p) then return false end
    return matches(ant_of(c), p, req:ant_tokens())
end

local function t_ant_any(c, req)
    local p = req.path
    if is_blank(p) then return false end
    return matches(ant_of(c), p, req:ant_tokens())
end

local function t_ant_exclude(c, req)
    local p = req.path
    if is_blank(p) then return false end
    local lit1 = c.lit1
    if lit1 and req:ant_key() ~= lit1 then return true end
    return not matches(ant_of(c), p, req:ant_tokens())
end

local function t_pp(c, req)
    local p = req.path
    if is_blank(p) then return false end
    local lit1 = c.pp_info.lit1
    if lit1 then
        local k = req:pp_key()
        if k and k ~= lit1 then return false end
    end
    local pc = req:path_container_or_false()
    if not pc then return nil end -- the path does not parse: ShenYu's 400
    return c.pp(p, pc)
end

local function t_eq_header(c, req) return req:header_lc(c.lname) == c.pv end
local function t_eq_uri(c, req) return req.path == c.pv end
local function t_eq_method(c, req) return req.method == c.pv end
local function t_eq_generic(c, req)
    local rd = c.get(req, c)
    if rd == false then return nil end
    return rd == c.pv
end

-- the test of condition c (a compiled condition of gwsync.conditions), in the order of checks
-- of conditions.judge -> test, may_raise (the test can answer nil)
local function make_test(c)
    if c.null then return ERR, true end
    local get = GET[c.ptype]
    if c.ptype == "post" and (c.pname == "startDateTime" or c.pname == "serialVersionUID") then
        get = nil
    end
    if not get then return ERR, true end
    c.get = get
    if c.ptype == "header" and c.pname ~= nil then c.lname = lower(c.pname) end
    local may_raise = c.ptype == "ip"
    if c.blank_op then
        if may_raise then return t_blank_ip, true end
        return FALSE, false
    end
    if c.bad_op then return ERR, true end
    local op = c.op == "=" and "equals" or c.op
    if op == "isBlank" then return t_is_blank, may_raise end
    if op == "TimeBefore" or op == "TimeAfter" or c.pv == nil then return t_unsafe, true end
    if c.ptype == "uri" then
        c.get = nil -- the uri tests read req.path
        if op == "match" or op == "exclude" then
            if c.ant and c.ant.raises then
                c.get = get
                return t_unsafe, true
            end
            if op == "exclude" then return t_ant_exclude, false end
            local lit1, lp = c.lit1, c.lit_path
            if lp then
                if #lp == #lit1 + 1 then return t_ant_prefix, false end
                return t_ant_lit_path, false
            end
            if lit1 then return t_ant_lit1, false end
            return t_ant_any, false
        end
        if op == "pathPattern" then
            if not c.pp_info or c.pp_info.raises then
                c.get = get
                return t_unsafe, true
            end
            return t_pp, true -- a path that does not parse raises
        end
        c.get = get
    end
    if op == "regex" and c.compile_error then return t_unsafe, true end
    if op == "equals" then
        -- realData == a non-blank paramValue is itself non-blank; a blank one never equals
        -- a non-blank realData
        if is_blank(c.pv) then
            if not may_raise then return FALSE, false end
            return t_blank_ip, true -- ip: only whether it raises matters
        end
        if c.ptype == "header" and c.pname ~= nil then return t_eq_header, may_raise end
        if c.ptype == "uri" then return t_eq_uri, may_raise end
        if c.ptype == "req_method" then return t_eq_method, may_raise end
        return t_eq_generic, may_raise
    end
    return t_generic, may_raise
end

-- prepare(c) -> may_raise: give compiled condition c its test (c.t, and c.may_raise when it
-- can answer nil). Made once per compiled condition (which is shared by equal conditions,
-- and never changes otherwise) and kept on it.
function M.prepare(c)
    if c.t == nil then
        local t, may_raise = make_test(c)
        c.t = t
        if may_raise then c.may_raise = true end
    end
    return c.may_raise == true
end

-- test(c) -> fn(req), may_raise: c's test as a function of the request alone (for tests and
-- tools; the router calls c.t(c, req))
function M.test(c)
    local may_raise = M.prepare(c)
    local t = c.t
    return function(req) return t(c, req) end, may_raise
end

-- The test of an item (a selector or rule, or a node that has the item's `conds`):
-- MatchStrategyFactory's AND / OR over its conditions, short-circuiting in list order, nil
-- (might raise) passed on. Called as e.test(e, req). Unrolled for up to three conditions: a
-- loop that leaves on its first pass makes LuaJIT abort the traces that run it.
local function all1(e, req)
    local a = e.conds[1]
    return a.t(a, req)
end
local function all2(e, req)
    local cs = e.conds
    local a = cs[1]
    local r = a.t(a, req)
    if not r then return r end
    local b = cs[2]
    return b.t(b, req)
end
local function all3(e, req)
    local cs = e.conds
    local a = cs[1]
    local r = a.t(a, req)
    if not r then return r end
    local b = cs[2]
    r = b.t(b, req)
    if not r then return r end
    local c = cs[3]
    return c.t(c, req)
end
local function alln(e, req)
    local cs = e.conds
    for i = 1, #cs do
        local c = cs[i]
        local r = c.t(c, req)
        if not r then return r end
    end
    return true
end
local function any2(e, req)
    local cs = e.conds
    local a = cs[1]
    local r = a.t(a, req)
    if r ~= false then return r end
    local b = cs[2]
    return b.t(b, req)
end
local function any3(e, req)
    local cs = e.conds
    local a = cs[1]
    local r = a.t(a, req)
    if r ~= false then return r end
    local b = cs[2]
    r = b.t(b, req)
    if r ~= false then return r end
    local c = cs[3]
    return c.t(c, req)
end
local function anyn(e, req)
    local cs = e.conds
    for i = 1, #cs do
        local c = cs[i]
        local r = c.t(c, req)
        if r ~= false then return r end
    end
    return false
end
local ALL = { [0] = TRUE, all1, all2, all3 }
local ANY = { [0] = FALSE, all1, any2, any3 }

-- item_test(match_mode, conds) -> the item's test, called as test(e, req) with e.conds = conds
-- (every condition prepared)
function M.item_test(mode, conds)
    local n = #conds
    for i = 1, n do M.prepare(conds[i]) end
    if mode == 1 then return ANY[n] or anyn end
    return ALL[n] or alln
end

-- flatten(e): an item of one uri condition of the commonest kinds gets a test that reads the
-- condition's literal from the item itself (e.f1, e.f2) instead of through e.conds[1]: a
-- request tries every rule of its selector, and in nginx, where the network stack evicts the
-- route table from the CPU caches between requests, each table touched per rule is a cache
-- miss (the conditions list and the condition, two of a rule's four). The answers are the
-- condition's own test's: the same checks in the same order, and the rare case (a path with
-- "//" for an Ant pattern) calls that test. e.test is left as it was for any other item.
local function i_ant_prefix(e, req)
    return byte(req.path, 1) == SLASH and req:ant_key() == e.f2
end

local function i_ant_lit_path(e, req)
    if req:ant_key() ~= e.f2 then return false end
    local p = req.path
    local lp = e.f1
    if starts(p, lp) then
        local ch = byte(p, #lp + 1)
        if ch == nil or ch == SLASH then return true end
    end
    if not find(p, "//", 1, true) then return false end
    local c = e.conds[1]
    return t_ant_lit_path(c, req)
end

local function i_uri_starts(e, req)
    local p = req.path
    if is_blank(p) then return false end
    return starts(p, e.f1)
end

function M.flatten(e)
    local conds = e.conds
    if e.test ~= all1 or type(conds) ~= "table" or #conds ~= 1 then return end
    local c = conds[1]
    local t = c.t
    if t == t_ant_prefix then
        e.test, e.f1, e.f2 = i_ant_prefix, nil, c.lit1
    elseif t == t_ant_lit_path then
        e.test, e.f1, e.f2 = i_ant_lit_path, c.lit_path, c.lit1
    elseif t == t_generic and c.ptype == "uri" and c.get == GET.uri and c.fn == conditions.j_starts
        and type(c.pv) == "string" then
        e.test, e.f1, e.f2 = i_uri_starts, c.pv, nil
    end
end

-- A selector's rules packed for the router's scan (routes.lua keeps S.rpack beside
-- S.active_rules): four array slots a rule, P[b] = fn, P[b + 1], P[b + 2] = the literals of
-- a flattened test, P[b + 3] = the rule, called as P[b](P, b, req). The scan then reads one
-- array per selector and the literal strings, not each rule's table (its hash part holds a
-- dozen fields): in nginx each of those is a cache miss. Same answers as e.test(e, req): the
-- packed functions are flatten()'s, reading the same literals from the array; any other rule
-- is called through its own test, and a rule not compiled yet (gwsync.items compiles a
-- rule's conditions on first use) is compiled by its first call, then packed again.
local function p_ant_prefix(P, b, req)
    return byte(req.path, 1) == SLASH and req:ant_key() == P[b + 2]
end

local function p_ant_lit_path(P, b, req)
    if req:ant_key() ~= P[b + 2] then return false end
    local p = req.path
    local lp = P[b + 1]
    if starts(p, lp) then
        local ch = byte(p, #lp + 1)
        if ch == nil or ch == SLASH then return true end
    end
    if not find(p, "//", 1, true) then return false end
    local e = P[b + 3]
    local c = e.conds[1]
    return t_ant_lit_path(c, req)
end

local function p_uri_starts(P, b, req)
    local p = req.path
    if is_blank(p) then return false end
    return starts(p, P[b + 1])
end

local function p_item(P, b, req)
    local e = P[b + 3]
    return e.test(e, req)
end

local pack_slot
local function p_lazy(P, b, req)
    local e = P[b + 3]
    local r = e.test(e, req) -- compiles the rule's conditions (and flattens it)
    pack_slot(P, b, e)
    return r
end

-- pack_slot(P, b, e): rule e's slots at P[b..b+3]
pack_slot = function(P, b, e)
    local t = e.test
    local fn, f1, f2 = p_item, false, false
    if e.raw_conds then
        fn = p_lazy
    elseif t == i_ant_prefix then
        fn, f2 = p_ant_prefix, e.f2
    elseif t == i_ant_lit_path then
        fn, f1, f2 = p_ant_lit_path, e.f1, e.f2
    elseif t == i_uri_starts then
        fn, f1 = p_uri_starts, e.f1
    end
    P[b], P[b + 1], P[b + 2], P[b + 3] = fn, f1, f2, e
end
M.pack_slot = pack_slot

-- pack(list, n) -> the packed array of rules list[1..n]
function M.pack(list, n)
    local P = new_tab(4 * n, 0)
    for i = 1, n do pack_slot(P, 4 * i - 3, list[i]) end
    return P
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
-- Descriptions are made when an item is filed (they are not kept on the items).
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
    if op == "match" and not (c.ant and c.ant.raises) then
        local lits = antpath.lits(c.pv)
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

-- places(match_mode, conds) -> places | nil, pp_risky
-- places: where the router's index files the item (a list of descriptors), or nil (always
-- evaluated). AND (or OR of one condition): the first condition with a descriptor among the
-- leading conditions whose tests cannot raise (a condition that might raise ends the search:
-- ShenYu would evaluate it for every path). OR of several: one descriptor per condition when
-- every condition has one (the item is a candidate when any of them admits the path).
-- pp_risky: the item's test raises for a path that does not parse.
function M.places(mode, conds)
    local n = #conds
    if mode == 1 and n > 1 then
        local places, risky = {}, false
        for i = 1, n do
            local d, _, pp = place(conds[i])
            if not d then return nil, false end
            places[i] = d
            if pp then risky = true end
        end
        return places, risky
    end
    local risky = false
    for i = 1, n do
        local c = conds[i]
        local d, usable, pp = place(c)
        if pp then risky = true end
        if d then return { d }, risky end
        if not usable and M.prepare(c) then break end
    end
    return nil, false
end

return M
