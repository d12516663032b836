-- gwsync.conditions: ShenYu's condition judges and match strategies (DIVIDE-SEMANTICS §1, §3).
--
-- compile(conditionData) turns one admin condition into a small table with its judge function
-- prepared (paramValue trimmed, regex / AntPath / PathPattern / date compiled) so that judging
-- per request is a realData lookup plus one comparison. The order of checks is ShenYu's:
-- realData is built first (AbstractMatchStrategy passes it as an argument, so an unknown
-- paramType fails even under a blank operator), then PredicateJudgeFactory: blank operator ->
-- false, unknown operator -> IllegalArgumentException "<op> name is error" (HTTP 400), blank
-- realData -> false unless the operator is isBlank, then the judge.
-- Errors ShenYu raises at request time are raised here at judge time too (gwsync.errors), even
-- when they could be seen at build time, because only requests that reach them fail in ShenYu.
local antpath = require "gwsync.antpath"
local pathpattern = require "gwsync.pathpattern"
local regex = require "gwsync.regex"
local errors = require "gwsync.errors"
local JSON_NULL = require("cjson.safe").null
local new_tab = require "table.new"

local M = {}

local byte, sub, find = string.byte, string.sub, string.find
local ffi = require "ffi"
pcall(ffi.cdef, "int memcmp(const void *s1, const void *s2, size_t n);")
local memcmp, cast, CHARP = ffi.C.memcmp, ffi.cast, ffi.typeof("const char *")

---------------------------------------------------------------------------------------------
-- Java String.trim() and commons-lang3 StringUtils.isBlank()
---------------------------------------------------------------------------------------------
function M.java_trim(s)
    local i, j = 1, #s
    while i <= j and byte(s, i) <= 32 do i = i + 1 end
    while j >= i and byte(s, j) <= 32 do j = j - 1 end
    return sub(s, i, j)
end

-- Character.isWhitespace code points outside ASCII (no-break spaces are not whitespace)
local UNICODE_WS = { [0x1680] = true, [0x2000] = true, [0x2001] = true, [0x2002] = true,
    [0x2003] = true, [0x2004] = true, [0x2005] = true, [0x2006] = true, [0x2008] = true,
    [0x2009] = true, [0x200A] = true, [0x2028] = true, [0x2029] = true, [0x205F] = true,
    [0x3000] = true }

local function ascii_ws(c)
    return c == 32 or (c >= 9 and c <= 13) or (c >= 28 and c <= 31)
end

function M.is_blank(s)
    if s == nil then return true end
    -- the common case, a first byte that is not blank, answers without entering the loop
    -- (a loop left by a return on its first pass makes LuaJIT abort the caller's traces)
    local c1 = byte(s, 1)
    if c1 == nil then return true end
    if c1 > 32 and (c1 < 0xE1 or c1 > 0xE3) then return false end
    local i, n = 1, #s
    while i <= n do
        local c = byte(s, i)
        if ascii_ws(c) then
            i = i + 1
        elseif c >= 0xE1 and c <= 0xE3 and i + 2 <= n then
            local cp = (c - 0xE0) * 4096 + (byte(s, i + 1) - 0x80) * 64 + (byte(s, i + 2) - 0x80)
            if not UNICODE_WS[cp] then return false end
            i = i + 3
        else
            return false
        end
    end
    return true
end

---------------------------------------------------------------------------------------------
-- DateUtils.parseLocalDateTime: "yyyy-MM-dd HH:mm:ss", ResolverStyle.SMART (a day past the
-- month's end is clamped to its last day: 2024-02-30 -> 2024-02-29; day 32 is an error).
---------------------------------------------------------------------------------------------
local function is_leap(y) return (y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0 end
local MDAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

-- parse_datetime(s) -> {y, mo, d, h, mi, s} | nil
function M.parse_datetime(s)
    if not s then return nil end
    local y, mo, d, h, mi, se = s:match("^(%d%d%d%d%d?%d?%d?%d?%d?)%-(%d%d)%-(%d%d) (%d%d):(%d%d):(%d%d)$")
    if not y then return nil end
    y, mo, d, h, mi, se = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(se)
    if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or se > 59 then return nil end
    local dim = MDAYS[mo] + ((mo == 2 and is_leap(y)) and 1 or 0)
    if d > dim then d = dim end
    return { y, mo, d, h, mi, se }
end

local function dt_key(t) -- a number ordered like the LocalDateTime
    return ((((t[1] * 12 + t[2]) * 31 + t[3]) * 24 + t[4]) * 60 + t[5]) * 60 + t[6]
end

local function dt_epoch(t) -- the LocalDateTime in the server's time zone, as epoch seconds
    return os.time({ year = t[1], month = t[2], day = t[3], hour = t[4], min = t[5], sec = t[6],
                     isdst = nil })
end

---------------------------------------------------------------------------------------------
-- judges: fn(realData, req, cond) -> bool (realData is non-blank unless op is isBlank)
---------------------------------------------------------------------------------------------
local function contains(rd, pv) return find(rd, pv, 1, true) ~= nil end

local function need_pv(c)
    if c.pv == nil then errors.raise_internal("paramValue is null") end -- pv.trim() -> NPE
end

-- A judge is chosen once per compiled condition (make(c), which also prepares what the judge
-- reads on the condition) and called as fn(rd, req, c): every judge is shared by all the
-- conditions of its kind, none is a closure per condition (LuaJIT does not compile the
-- making of closures, and a table of 100,000 rules has as many conditions).
local JUDGES = {}

-- c.ant: the AntPathMatcher pattern (antpath.compile), made on first need for the patterns
-- whose tokens are all literals (the router's fast path decides most paths without it)
local function ant_of(c)
    local P = c.ant
    if not P then
        P = antpath.compile(c.pv)
        c.ant = P
    end
    return P
end
M.ant_of = ant_of

local function j_equals(rd, _, c) need_pv(c); return rd == c.pv end
local function j_contains(rd, _, c) need_pv(c); return contains(rd, c.pv) end
local function j_not_contains(rd, _, c) need_pv(c); return not contains(rd, c.pv) end
local function j_ant(rd, req, c)
    return antpath.matches(ant_of(c), rd, rd == req.path and req:ant_tokens() or nil)
end
local function j_not_ant(rd, req, c)
    return not antpath.matches(ant_of(c), rd, rd == req.path and req:ant_tokens() or nil)
end
local function j_pp(rd, req, c) return c.pp(rd, rd == req.path and req:path_container() or nil) end
local function j_regex(rd, _, c) return c.re(rd) end
local function j_need_pv(_, _, c) need_pv(c) end
local function j_regex_bad(_, _, c) errors.raise_bad_request(c.compile_error) end -- PatternSyntaxException -> 400
-- String.startsWith / endsWith by comparing bytes in place: a sub() per test made (and
-- interned) a new string for every rule a request tried, most of a routed request's garbage
local function starts(s, p)
    local n = #p
    return n <= #s and (n == 0 or memcmp(s, p, n) == 0)
end
local function ends(s, p)
    local n, ls = #p, #s
    return n <= ls and (n == 0 or memcmp(cast(CHARP, s) + (ls - n), p, n) == 0)
end
M.starts, M.ends = starts, ends
local function j_starts(rd, _, c) need_pv(c); return starts(rd, c.pv) end
local function j_ends(rd, _, c) need_pv(c); return ends(rd, c.pv) end
M.j_starts = j_starts -- gwsync.fastpath knows a uri startsWith by it
local function j_is_blank(rd) return M.is_blank(rd) end

JUDGES["equals"] = function() return j_equals end

-- The uri `match` / `exclude` patterns: what the fast path needs (gwsync.fastpath) is kept on
-- the condition: lit1, lit_path (antpath.analyse), and c.ant when a token is not a literal.
local function ant_prepare(c)
    local lit1, _, lit_path, P = antpath.analyse(c.pv)
    c.lit1, c.lit_path, c.ant = lit1, lit_path, P
end

JUDGES["match"] = function(c)
    if c.ptype == "uri" and c.pv then
        ant_prepare(c)
        return j_ant
    end
    return j_contains
end

JUDGES["exclude"] = function(c)
    if c.ptype == "uri" and c.pv then
        ant_prepare(c)
        return j_not_ant
    end
    return j_not_contains
end

JUDGES["pathPattern"] = function(c)
    if c.ptype == "uri" and c.pv then
        local m, err, info = pathpattern.compile(c.pv)
        c.compile_error = err
        c.pp, c.pp_info = m, info
        return j_pp
    end
    return j_contains
end

JUDGES["regex"] = function(c)
    if not c.pv then return j_need_pv end
    local m, err = regex.compile(c.pv)
    if not m then
        c.compile_error = err
        return j_regex_bad
    end
    c.re = m
    return j_regex
end

JUDGES["contains"] = function() return j_contains end
JUDGES["startsWith"] = function() return j_starts end
JUDGES["endsWith"] = function() return j_ends end
JUDGES["isBlank"] = function() return j_is_blank end

-- TimeBefore: paramName null or "" -> now < pv; else parse(realData) < pv.
-- TimeAfter: paramName null only -> now > pv; else parse(realData) > pv.
-- An unparseable date throws DateTimeParseException -> 500.
local function j_time(rd, req, c)
    need_pv(c)
    local t = c.date
    if not t then errors.raise_internal("unparseable date " .. c.pv) end
    local before = c.before
    if c.use_now then
        local now = req.raw.now or os.time()
        if before then return now < dt_epoch(t) end
        return now > dt_epoch(t)
    end
    local r = M.parse_datetime(rd)
    if not r then errors.raise_internal("unparseable date " .. rd) end
    if before then return dt_key(r) < dt_key(t) end
    return dt_key(r) > dt_key(t)
end

local function time_judge(c, before)
    c.date = c.pv and M.parse_datetime(c.pv) or false
    c.before = before
    if before then c.use_now = c.pname == nil or c.pname == "" else c.use_now = c.pname == nil end
    return j_time
end
JUDGES["TimeBefore"] = function(c) return time_judge(c, true) end
JUDGES["TimeAfter"] = function(c) return time_judge(c, false) end

M.OPERATORS = JUDGES

---------------------------------------------------------------------------------------------
-- compile / judge
---------------------------------------------------------------------------------------------
-- A condition's String field as the gateway's Gson (GsonUtils.getGson, which the http sync
-- uses) reads it: its StringTypeAdapter turns a JSON null into "" (an absent key stays null).
-- So "paramName": null is "" (TimeAfter then compares realData, not now) and
-- "paramValue": null is "" (every judge compares against "").
local function str_or_nil(v)
    if type(v) == "string" then return v end
    if v == JSON_NULL then return "" end
    if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
    return nil
end

local NULL_COND = { null = true } -- a JSON null in the list: buildRealData(null) -> NullPointerException

-- compile_fields(ptype, pname, op, pv) -> compiled condition, from the four fields as
-- str_or_nil reads them (never fails: errors are kept for judge time).
-- compiled.compile_error is set when the pattern is invalid (for build warnings).
local function compile_fields(ptype, pname, op, pv)
    -- sized for what compile and the fast path's prepare put on a uri condition: no table
    -- grown field by field (LuaJIT rehashes a table each time it outgrows its size)
    local c = new_tab(0, 8)
    c.ptype, c.pname, c.op, c.pv = ptype, pname, op, pv and M.java_trim(pv) or nil
    if op == nil or M.is_blank(op) then
        c.blank_op = true
        return c
    end
    local name = op == "=" and "equals" or op
    local make = JUDGES[name]
    if not make then
        c.bad_op = op .. " name is error"
        c.compile_error = c.bad_op
        return c
    end
    if name == "isBlank" then c.is_blank_judge = true end
    c.fn = make(c)
    return c
end

-- compile(cond_table) -> compiled condition
function M.compile(cond)
    if type(cond) ~= "table" then return NULL_COND end
    return compile_fields(str_or_nil(cond.paramType), str_or_nil(cond.paramName),
        str_or_nil(cond.operator), str_or_nil(cond.paramValue))
end

-- judge(c, req) -> bool (raises ShenYu's request-time errors)
local function judge(c, req)
    if c.null then errors.raise_internal("null condition") end
    local rd = req:real_data(c.ptype, c.pname)
    if c.blank_op then return false end
    if c.bad_op then errors.raise_bad_request(c.bad_op) end
    if not c.is_blank_judge and M.is_blank(rd) then return false end
    return c.fn(rd, req, c)
end
M.judge = judge

-- MatchStrategyFactory: matchMode 1 = or (anyMatch), anything else = and (allMatch); both
-- short-circuit in list order. Empty list: and -> true, or -> false.
function M.match(mode, list, req)
    if mode == 1 then
        for i = 1, #list do
            if judge(list[i], req) then return true end
        end
        return false
    end
    for i = 1, #list do
        if not judge(list[i], req) then return false end
    end
    return true
end

-- Compiled conditions are shared by every item that has the same condition (paramType,
-- operator, paramName, paramValue): a compiled condition is never modified once made (but for
-- what it makes on first need, always the same: c.ant above, the fast path's test), and real
-- tables repeat conditions a lot (`req_method = GET`, a tenant header), so this saves most of
-- the compiling and memory of a large table. uri conditions are not shared: each rule has its
-- own path, so sharing them would keep one entry per rule in the pool (which the collector
-- then walks in every cycle, in one step: issue 19's GC pauses) and save nothing.
-- The pool is nested by field (no key string made per condition), weak at its last level:
-- a condition no item uses any more goes with the next garbage collection.
local NONE = {}   -- the key of an absent field
local WEAK_V = { __mode = "v" }
local pool = {}

local function level(t, k)
    local n = t[k]
    if not n then n = {}; t[k] = n end
    return n
end

-- compile_shared(cond_table) -> compile(cond_table), the same object for equal conditions
function M.compile_shared(cond)
    if type(cond) ~= "table" then return NULL_COND end
    local pt, op = str_or_nil(cond.paramType), str_or_nil(cond.operator)
    local pn, pv = str_or_nil(cond.paramName), str_or_nil(cond.paramValue)
    if pt == "uri" then return compile_fields(pt, pn, op, pv) end
    local l = level(level(level(pool, pt or NONE), op or NONE), pn or NONE)
    if getmetatable(l) == nil then setmetatable(l, WEAK_V) end
    local k = pv or NONE
    local c = l[k]
    if not c then
        c = compile_fields(pt, pn, op, pv)
        l[k] = c
    end
    return c
end

-- compile_list(json_list) -> list of compiled conditions, list of compile errors | nil
local EMPTY = {}
function M.compile_list(list)
    if type(list) ~= "table" then return {}, EMPTY end
    local n = #list
    local out, errs = new_tab(n, 0), nil
    for i = 1, n do
        local c = M.compile_shared(list[i])
        out[i] = c
        if c.compile_error then
            errs = errs or {}
            errs[#errs + 1] = c.compile_error
        end
    end
    return out, errs or EMPTY
end

return M
