-- gwsync.jsonscan: the few fields of a cache item that routing reads, taken from its JSON text
-- without decoding the rest, in place (an LMDB value is scanned where LMDB maps it).
--
-- Why not lua-cjson alone: a worker's first load decodes every item (120,000 at 10,000
-- selectors), and cjson.decode costs about 8 us for a 430-byte rule: it makes a Lua string of
-- every key and value and a table of every object, through the Lua C API (which LuaJIT cannot
-- compile). A rule needs ten fields. This scanner walks the text once in code LuaJIT compiles
-- (memchr finds the end of each string), makes strings only for the fields asked for, and
-- reuses its tables.
--
-- It must give exactly what cjson gives, so it takes only what it is sure of:
--   scan(p, n, want, out) -> true, with out filled, or false: "ask cjson" (the caller then
--   decodes the text with cjson.decode, which decides: a value, or an error).
-- It answers false on anything outside the plain JSON grammar (cjson accepts more: "01",
-- "1.", Infinity, hex numbers), on a NUL byte anywhere (cjson takes one for the end of the
-- text), on an escaped key, and on nesting deeper than MAX_DEPTH. Escapes are decoded here
-- as cjson decodes them (\" \\ \/ \b \f \n \r \t, \uXXXX to UTF-8); a \u surrogate, or any
-- other escape, is left to cjson itself on the string literal alone, which gives its value or
-- refuses it (and a refused escape in a field nobody asked for still makes the whole text
-- invalid, as a whole decode would).
-- Fields asked for (want[key] ~= nil) get cjson's value: JSON null is cjson.null, numbers are
-- doubles (tonumber of the literal: both are correctly rounded), arrays and objects tables;
-- a duplicate key keeps its last value. An array asked for with a set of keys gets objects
-- with only those keys (the caller reads no other), in tables this module reuses on the next
-- scan: the caller must not keep `out` or those tables (nested values asked for whole are
-- fresh tables it may keep).
-- tests/lua/test_jsonscan.lua compares it with cjson on random and mutated documents.
--
-- The scan's state (text, length, next backslash) is kept in this module's upvalues for the
-- time of one scan(): scan() is not re-entered (nothing it calls scans).
local ffi = require "ffi"
local cjson = require "cjson.safe"
local strbuf = require "string.buffer"

pcall(ffi.cdef, "void *memchr(const void *s, int c, size_t n);")
pcall(ffi.cdef, "int memcmp(const void *s1, const void *s2, size_t n);")

local M = {}

local NULL = cjson.null
local decode = cjson.decode
local fstr, cast = ffi.string, ffi.cast
local memchr, memcmp = ffi.C.memchr, ffi.C.memcmp
local clear = require "table.clear"
local tonumber = tonumber

local u8p = ffi.typeof("const uint8_t *")
M.u8p = u8p

M.MAX_DEPTH = 32

local QUOTE, BSLASH, COMMA, COLON = 34, 92, 44, 58
local LBRACE, RBRACE, LBRACK, RBRACK = 123, 125, 91, 93

-- the scan's state
local P, N = nil, 0      -- the text and its length
local BS = 0             -- the offset of the first backslash not yet passed (N: none)
local buf = strbuf.new()

-- The last string with escapes that was decoded, as its literal (quotes included) and its
-- value: items repeat such strings (a rule handle, an upstream's props: JSON text in a
-- string, its quotes escaped), and one compare of the bytes tells the string's end and value
-- without walking its escapes again. LAST_AT: where it was last found (for str_value).
local LAST_LIT, LAST_LEN, LAST_VAL, LAST_AT = "", 0, nil, -1

local function is_ws(c) return c == 32 or c == 10 or c == 13 or c == 9 end

-- whitespace as JSON (and cjson) has it. Compact text has none, and Python's has one blank
-- after "," and ":": those are passed without entering a loop (a loop left on its first
-- pass makes LuaJIT abort the traces around it)
local function ws(i)
    if i >= N then return i end
    local c = P[i]
    if c > 32 or not is_ws(c) then return i end
    i = i + 1
    if i >= N then return i end
    c = P[i]
    if c > 32 or not is_ws(c) then return i end
    while i < N and is_ws(P[i]) do i = i + 1 end
    return i
end

-- P[i] is '"': -> the offset of the closing quote, whether the string has escapes | -1
local function str_end(i)
    local q = memchr(P + i + 1, QUOTE, N - i - 1)
    if q == nil then return -1, false end
    local j = cast(u8p, q) - P
    if BS > j then return j, false end
    -- a backslash before that quote: the last escaped string again, or walk this one
    local ll = LAST_LEN
    if ll > 0 and i + ll <= N and memcmp(P + i, LAST_LIT, ll) == 0 then
        local k = i + ll - 1
        LAST_AT = i
        local b = memchr(P + k + 1, BSLASH, N - k - 1)
        BS = b == nil and N or (cast(u8p, b) - P)
        return k, true
    end
    local k = i + 1
    while k < N do
        local c = P[k]
        if c == QUOTE then break end
        if c == BSLASH then k = k + 2 else k = k + 1 end
    end
    if k >= N then return -1, true end
    local b = memchr(P + k + 1, BSLASH, N - k - 1)
    BS = b == nil and N or (cast(u8p, b) - P)
    return k, true
end

local function hex(c)
    if c >= 48 and c <= 57 then return c - 48 end
    if c >= 97 and c <= 102 then return c - 87 end
    if c >= 65 and c <= 70 then return c - 55 end
    return nil
end

local ESC = { [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f", [110] = "\n",
    [114] = "\r", [116] = "\t" }

-- the string with escapes between the quotes at i and j, decoded as cjson does | nil (a
-- surrogate or a bad escape: cjson decides)
local function unescape(i, j)
    buf:reset()
    local k, run = i + 1, i + 1
    while k < j do
        if P[k] == BSLASH then
            if k > run then buf:putcdata(P + run, k - run) end
            local e = P[k + 1]
            local s = ESC[e]
            if s then
                buf:put(s)
                k = k + 2
            elseif e == 117 and k + 5 < j then
                local a, b, c, d = hex(P[k + 2]), hex(P[k + 3]), hex(P[k + 4]), hex(P[k + 5])
                if not (a and b and c and d) then return nil end
                local cp = ((a * 16 + b) * 16 + c) * 16 + d
                if cp >= 0xD800 and cp <= 0xDFFF then return nil end
                if cp < 0x80 then
                    buf:put(string.char(cp))
                elseif cp < 0x800 then
                    buf:put(string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64))
                else
                    buf:put(string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64,
                        0x80 + cp % 64))
                end
                k = k + 6
            else
                return nil
            end
            run = k
        else
            k = k + 1
        end
    end
    if k > run then buf:putcdata(P + run, k - run) end
    return buf:tostring()
end

-- Strings with escapes, by their literal: items repeat them (a rule handle is JSON text in a
-- string, its quotes escaped, the same in many rules). Emptied when it grows past 512.
local unescaped, nunescaped = {}, 0

-- the string whose quotes are at i and j -> value | nil (cjson refuses the literal)
local function str_value(i, j, esc)
    if not esc then return fstr(P + i + 1, j - i - 1) end
    if LAST_AT == i then return LAST_VAL end
    local lit = fstr(P + i, j - i + 1)
    local v = unescaped[lit]
    if v then
        LAST_LIT, LAST_LEN, LAST_VAL, LAST_AT = lit, #lit, v, i
        return v
    end
    v = unescape(i, j)
    if not v then
        v = decode(lit)
        if type(v) ~= "string" then return nil end
    end
    if nunescaped >= 512 then clear(unescaped); nunescaped = 0 end
    unescaped[lit] = v
    nunescaped = nunescaped + 1
    LAST_LIT, LAST_LEN, LAST_VAL, LAST_AT = lit, #lit, v, i
    return v
end

local function digit(c) return c >= 48 and c <= 57 end

-- the JSON number at i -> value, next offset | nil, -1. Integers of up to 15 digits are
-- added up here (exact); others go through tonumber.
local function number(i)
    local s = i
    local c = P[i]
    local neg = c == 45
    if neg then
        i = i + 1
        if i >= N then return nil, -1 end
        c = P[i]
    end
    local v = 0
    if c == 48 then
        i = i + 1
    elseif c >= 49 and c <= 57 then
        v = c - 48
        i = i + 1
        while i < N do
            c = P[i]
            if c < 48 or c > 57 then break end
            v = v * 10 + (c - 48)
            i = i + 1
        end
    else
        return nil, -1
    end
    local simple = true
    if i < N and P[i] == 46 then -- fraction: one digit at least
        simple = false
        i = i + 1
        if i >= N or not digit(P[i]) then return nil, -1 end
        while i < N and digit(P[i]) do i = i + 1 end
    end
    if i < N and (P[i] == 101 or P[i] == 69) then -- exponent
        simple = false
        i = i + 1
        if i < N and (P[i] == 43 or P[i] == 45) then i = i + 1 end
        if i >= N or not digit(P[i]) then return nil, -1 end
        while i < N and digit(P[i]) do i = i + 1 end
    end
    if simple and i - s <= 15 then
        if neg then return -v, i end
        return v, i
    end
    local x = tonumber(fstr(P + s, i - s))
    if x == nil then return nil, -1 end
    return x, i
end

-- true / false / null at i -> value, next offset | nil, -1
local function literal(i)
    local c = P[i]
    if c == 116 then
        if i + 3 < N and P[i + 1] == 114 and P[i + 2] == 117 and P[i + 3] == 101 then return true, i + 4 end
    elseif c == 102 then
        if i + 4 < N and P[i + 1] == 97 and P[i + 2] == 108 and P[i + 3] == 115 and P[i + 4] == 101 then
            return false, i + 5
        end
    elseif c == 110 then
        if i + 3 < N and P[i + 1] == 117 and P[i + 2] == 108 and P[i + 3] == 108 then return NULL, i + 4 end
    end
    return nil, -1
end

local value -- value(i, depth) -> v, next | nil, -1 (a whole value, in fresh tables)

local function object(i, depth, t)
    i = ws(i + 1)
    if i < N and P[i] == RBRACE then return i + 1 end
    while true do
        if i >= N or P[i] ~= QUOTE then return -1 end
        local j, esc = str_end(i)
        if j < 0 or esc then return -1 end
        local key = fstr(P + i + 1, j - i - 1)
        i = ws(j + 1)
        if i >= N or P[i] ~= COLON then return -1 end
        local v
        v, i = value(ws(i + 1), depth)
        if i < 0 then return -1 end
        t[key] = v
        i = ws(i)
        if i >= N then return -1 end
        local c = P[i]
        if c == RBRACE then return i + 1 end
        if c ~= COMMA then return -1 end
        i = ws(i + 1)
    end
end

local function array(i, depth, t)
    i = ws(i + 1)
    if i < N and P[i] == RBRACK then return i + 1 end
    local k = 0
    while true do
        local v
        v, i = value(i, depth)
        if i < 0 then return -1 end
        k = k + 1
        t[k] = v
        i = ws(i)
        if i >= N then return -1 end
        local c = P[i]
        if c == RBRACK then return i + 1 end
        if c ~= COMMA then return -1 end
        i = ws(i + 1)
    end
end

function value(i, depth)
    if i >= N then return nil, -1 end
    local c = P[i]
    if c == QUOTE then
        local j, esc = str_end(i)
        if j < 0 then return nil, -1 end
        local s = str_value(i, j, esc)
        if s == nil then return nil, -1 end
        return s, j + 1
    elseif c == LBRACE or c == LBRACK then
        if depth >= M.MAX_DEPTH then return nil, -1 end
        local t = {}
        local e
        if c == LBRACE then e = object(i, depth + 1, t) else e = array(i, depth + 1, t) end
        if e < 0 then return nil, -1 end
        return t, e
    elseif c == 45 or digit(c) then
        return number(i)
    end
    return literal(i)
end

-- skip(i, depth) -> the offset after the value at i | -1 (checked, nothing made)
local function skip(i, depth)
    if i >= N then return -1 end
    local c = P[i]
    if c == QUOTE then
        local j, esc = str_end(i)
        if j < 0 then return -1 end
        if esc and str_value(i, j, true) == nil then return -1 end
        return j + 1
    elseif c == LBRACE then
        if depth >= M.MAX_DEPTH then return -1 end
        i = ws(i + 1)
        if i < N and P[i] == RBRACE then return i + 1 end
        while true do
            if i >= N or P[i] ~= QUOTE then return -1 end
            local j, esc = str_end(i)
            if j < 0 then return -1 end
            if esc and str_value(i, j, true) == nil then return -1 end
            i = ws(j + 1)
            if i >= N or P[i] ~= COLON then return -1 end
            i = skip(ws(i + 1), depth + 1)
            if i < 0 then return -1 end
            i = ws(i)
            if i >= N then return -1 end
            c = P[i]
            if c == RBRACE then return i + 1 end
            if c ~= COMMA then return -1 end
            i = ws(i + 1)
        end
    elseif c == LBRACK then
        if depth >= M.MAX_DEPTH then return -1 end
        i = ws(i + 1)
        if i < N and P[i] == RBRACK then return i + 1 end
        while true do
            i = skip(i, depth + 1)
            if i < 0 then return -1 end
            i = ws(i)
            if i >= N then return -1 end
            c = P[i]
            if c == RBRACK then return i + 1 end
            if c ~= COMMA then return -1 end
            i = ws(i + 1)
        end
    elseif c == 45 or digit(c) then
        local _, e = number(i)
        return e
    end
    local _, e = literal(i)
    return e
end

-- the key at i (P[i] is '"') if `keys` wants it -> key | nil, the closing quote's offset | -1
local function wanted_key(i, keys)
    local j, esc = str_end(i)
    if j < 0 or esc then return nil, -1 end
    local klen = j - i - 1
    if klen > 0 and keys[klen * 256 + P[i + 1]] then
        local key = fstr(P + i + 1, klen)
        if keys[key] then return key, j end
    end
    return nil, j
end

-- members of the object at i ('{') into t: those `keys` wants (their values whole; or, for a
-- key mapped to a key set, an array of objects cut to those keys) -> next offset | -1
local lists = {}
local objs = {}
local nobj = 0

local members

local function pooled_obj()
    nobj = nobj + 1
    local t = objs[nobj]
    if t then clear(t) else t = {}; objs[nobj] = t end
    return t
end

-- an array at i whose object elements keep only `keys`, into list (cleared) -> next | -1
local function cut_array(i, keys, list)
    clear(list)
    i = ws(i + 1)
    if i < N and P[i] == RBRACK then return i + 1 end
    local k = 0
    while true do
        if i >= N then return -1 end
        local v
        if P[i] == LBRACE then
            v = pooled_obj()
            i = members(i, 2, keys, v)
        else
            v, i = value(i, 2)
        end
        if i < 0 then return -1 end
        k = k + 1
        list[k] = v
        i = ws(i)
        if i >= N then return -1 end
        local c = P[i]
        if c == RBRACK then return i + 1 end
        if c ~= COMMA then return -1 end
        i = ws(i + 1)
    end
end

function members(i, depth, keys, t)
    i = ws(i + 1)
    if i < N and P[i] == RBRACE then return i + 1 end
    while true do
        if i >= N or P[i] ~= QUOTE then return -1 end
        local key, j = wanted_key(i, keys)
        if j < 0 then return -1 end
        i = ws(j + 1)
        if i >= N or P[i] ~= COLON then return -1 end
        i = ws(i + 1)
        if key then
            local spec = keys[key]
            if spec ~= true and i < N and P[i] == LBRACK then
                local list = lists[key]
                if not list then list = {}; lists[key] = list end
                i = cut_array(i, spec, list)
                if i < 0 then return -1 end
                t[key] = list
            else
                local v
                v, i = value(i, depth)
                if i < 0 then return -1 end
                t[key] = v
            end
        else
            i = skip(i, depth)
            if i < 0 then return -1 end
        end
        i = ws(i)
        if i >= N then return -1 end
        local c = P[i]
        if c == RBRACE then return i + 1 end
        if c ~= COMMA then return -1 end
        i = ws(i + 1)
    end
end

-- keys(names) -> a key set: name -> true, plus (length * 256 + first byte) -> true, which
-- lets a key nobody wants be passed over without making a string of it
function M.keys(names)
    local set = {}
    for _, name in ipairs(names) do
        set[name] = true
        set[#name * 256 + name:byte(1)] = true
    end
    return set
end

-- want(spec) -> a key set for scan(): spec maps each key to true (its value whole) or to a
-- list of names (an array whose objects keep only those keys)
function M.want(spec)
    local names = {}
    for name in pairs(spec) do names[#names + 1] = name end
    local w = M.keys(names)
    for name, v in pairs(spec) do
        if type(v) == "table" then w[name] = M.keys(v) end
    end
    return w
end

-- scan(p, n, want, out) -> true (out holds the wanted top-level fields present) | false
function M.scan(p, n, want, out)
    clear(out)
    if memchr(p, 0, n) ~= nil then return false end
    P, N, nobj, LAST_AT = p, n, 0, -1
    local b = memchr(p, BSLASH, n)
    BS = b == nil and n or (cast(u8p, b) - p)
    local i = ws(0)
    local ok = false
    if i < n and p[i] == LBRACE then
        i = members(i, 1, want, out)
        ok = i >= 0 and ws(i) == n
    end
    P = nil
    return ok
end

return M
