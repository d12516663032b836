-- gwsync.signbody: a request body as version 1 of ShenYu's sign plugin signs it
-- (VersionOneSignProvider.getParams, SIGN-SEMANTICS.md §5): JsonUtils.jsonToMap(body), then
-- each value through Objects.toString, i.e. Java's rendering of what Jackson decoded.
--
-- parse(text) -> { name = rendered value, ... } | nil, "null" (the body is the JSON literal
-- null: Jackson returns a null map and ShenYu fails with a NullPointerException, HTTP 500).
-- A body that is not a JSON object (an array, a number, invalid JSON, blanks) gives an empty
-- map, as jsonToMap's caught IOException does.
--
-- Why a parser of its own and not lua-cjson: the signed text is made of Java's renderings of
-- Jackson's values, which depend on the number's literal (an integer stays exact at any size,
-- as Jackson's int/long/BigInteger; a fraction is a double printed by Double.toString) and on
-- Java's Map/List toString for nested values ("{a=1, b=[x, y]}"); lua-cjson decodes every
-- number to a double and keeps no literal. Objects nest at most MAX_DEPTH deep (Jackson's own
-- limit); anything deeper is an error, which gives the empty map as Jackson's does.
local M = {}

local byte, sub, find, char, format = string.byte, string.sub, string.find, string.char, string.format
local concat = table.concat

M.MAX_DEPTH = 1000

local fail -- raise a parse error (caught by parse)
do
    local FAIL = {}
    fail = function() error(FAIL, 0) end
    M._FAIL = FAIL
end

local function skip_ws(s, i)
    local _, e = find(s, "^[ \t\r\n]*", i)
    return e + 1
end

-- UTF-8 of a code point; a lone surrogate becomes "?" as Java's getBytes(UTF_8) writes it
local function utf8(cp)
    if cp < 0x80 then return char(cp) end
    if cp < 0x800 then return char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
    if cp >= 0xD800 and cp <= 0xDFFF then return "?" end
    if cp < 0x10000 then
        return char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
    end
    return char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
        0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

local ESC = { [34] = '"', [92] = "\\", [47] = "/", [98] = "\b", [102] = "\f", [110] = "\n",
              [114] = "\r", [116] = "\t" }

local function hex4(s, i)
    local h = sub(s, i, i + 3)
    if not find(h, "^%x%x%x%x$") then fail() end
    return tonumber(h, 16)
end

-- a string starting after its opening quote at i -> value, next index. Unescaped control
-- characters are allowed (JsonUtils enables ALLOW_UNESCAPED_CONTROL_CHARS).
local function parse_string(s, i)
    local out, n = {}, 0
    while true do
        local j = find(s, '["\\]', i)
        if not j then fail() end
        n = n + 1; out[n] = sub(s, i, j - 1)
        if byte(s, j) == 34 then return concat(out, "", 1, n), j + 1 end
        local e = byte(s, j + 1)
        if e == 117 then -- \uXXXX, a surrogate pair joined
            local cp = hex4(s, j + 2)
            i = j + 6
            if cp >= 0xD800 and cp <= 0xDBFF and sub(s, i, i + 1) == "\\u" then
                local lo = tonumber(sub(s, i + 2, i + 5), 16)
                if lo and lo >= 0xDC00 and lo <= 0xDFFF then
                    cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
                    i = i + 6
                end
            end
            n = n + 1; out[n] = utf8(cp)
        else
            local c = e and ESC[e]
            if not c then fail() end
            n = n + 1; out[n] = c
            i = j + 2
        end
    end
end

-- Double.toString (JDK 19+: the shortest decimal that reads back as the same double)
local function java_double(v)
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    if v == 0 then return (1 / v < 0) and "-0.0" or "0.0" end
    local s
    for p = 0, 16 do
        s = format("%." .. p .. "e", v)
        if tonumber(s) == v then break end
    end
    local sign, d1, frac, ex = s:match("^(-?)(%d)%.?(%d*)e([-+]%d+)$")
    local digits = (d1 .. frac):gsub("0+$", "")
    if digits == "" then digits = "0" end
    local e = tonumber(ex)
    local a = math.abs(v)
    if a >= 1e-3 and a < 1e7 then
        local point = e + 1 -- digits before the decimal point
        local int, fr
        if point <= 0 then
            int, fr = "0", string.rep("0", -point) .. digits
        elseif point >= #digits then
            int, fr = digits .. string.rep("0", point - #digits), "0"
        else
            int, fr = sub(digits, 1, point), sub(digits, point + 1)
        end
        return sign .. int .. "." .. fr
    end
    local fr = sub(digits, 2)
    if fr == "" then fr = "0" end
    return sign .. sub(digits, 1, 1) .. "." .. fr .. "E" .. tostring(e)
end
M.java_double = java_double

local parse_value

-- a number at i -> its Java rendering, next index (JSON's grammar, as Jackson reads it)
local function parse_number(s, i)
    local a, b = find(s, "^-?%d+", i)
    if not a then fail() end
    local int = sub(s, a, b)
    if find(int, "^-?0%d") then fail() end -- leading zeros: Jackson refuses them
    local j = b + 1
    local _, fe = find(s, "^%.%d+", j)
    local _, ee = find(s, "^[eE][-+]?%d+", fe and fe + 1 or j)
    if not fe and not ee then
        if find(int, "^-0+$") then return "0", j end -- an int 0
        return int, j
    end
    local last = ee or fe
    return java_double(tonumber(sub(s, a, last))), last + 1
end

-- Java's AbstractMap.toString / AbstractCollection.toString of nested values
local function parse_object(s, i, depth)
    if depth > M.MAX_DEPTH then fail() end
    local keys, vals, n = {}, {}, 0
    i = skip_ws(s, i)
    if byte(s, i) == 125 then return keys, vals, 0, i + 1 end
    while true do
        if byte(s, i) ~= 34 then fail() end
        local k
        k, i = parse_string(s, i + 1)
        i = skip_ws(s, i)
        if byte(s, i) ~= 58 then fail() end
        local v
        v, i = parse_value(s, skip_ws(s, i + 1), depth)
        local at = nil
        for x = 1, n do if keys[x] == k then at = x break end end -- a duplicate: last value wins
        if at then vals[at] = v else n = n + 1; keys[n] = k; vals[n] = v end
        i = skip_ws(s, i)
        local c = byte(s, i)
        if c == 125 then return keys, vals, n, i + 1 end
        if c ~= 44 then fail() end
        i = skip_ws(s, i + 1)
    end
end

parse_value = function(s, i, depth)
    local c = byte(s, i)
    if c == 34 then return parse_string(s, i + 1) end
    if c == 123 then
        local keys, vals, n, j = parse_object(s, i + 1, depth + 1)
        local parts = {}
        for x = 1, n do parts[x] = keys[x] .. "=" .. vals[x] end
        return "{" .. concat(parts, ", ") .. "}", j
    end
    if c == 91 then
        if depth + 1 > M.MAX_DEPTH then fail() end
        local parts, n = {}, 0
        i = skip_ws(s, i + 1)
        if byte(s, i) == 93 then return "[]", i + 1 end
        while true do
            local v
            v, i = parse_value(s, i, depth + 1)
            n = n + 1; parts[n] = v
            i = skip_ws(s, i)
            local d = byte(s, i)
            if d == 93 then return "[" .. concat(parts, ", ", 1, n) .. "]", i + 1 end
            if d ~= 44 then fail() end
            i = skip_ws(s, i + 1)
        end
    end
    if sub(s, i, i + 3) == "true" then return "true", i + 4 end
    if sub(s, i, i + 4) == "false" then return "false", i + 5 end
    if sub(s, i, i + 3) == "null" then return "null", i + 4 end -- String.join writes "null"
    return parse_number(s, i)
end

local function parse_top(s)
    local i = skip_ws(s, 1)
    if sub(s, i, i + 3) == "null" and not find(s, "^[%w_]", i + 4) then return nil, "null" end
    if byte(s, i) ~= 123 then return {} end
    local keys, vals, n = parse_object(s, i + 1, 1)
    local map = {}
    for x = 1, n do map[keys[x]] = vals[x] end
    return map -- what follows the object is not read (Jackson's default)
end

function M.parse(text)
    local ok, map, why = pcall(parse_top, text)
    if ok then return map, why end
    if map == M._FAIL then return {} end
    error(map, 0)
end

return M
