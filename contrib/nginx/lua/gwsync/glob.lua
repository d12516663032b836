-- gwsync.glob: Spring's segment glob -> regex translation, shared by antpath and pathpattern.
--
-- Both AntPathMatcher.AntPathStringMatcher and PathPattern's RegexPathElement scan a segment
-- with the same Java regex GLOB_PATTERN = \?|\*|\{((?:\{[^/]+?\}|[^/{}]|\\[{}])+?)\}
-- and emit "?" -> ".", "*" -> ".*", "{name}" -> a default group, "{name:re}" -> "(re)", the
-- text between them quoted. We reproduce that scan by hand (a tiny backtracking matcher for
-- the one regex) so the result is the same pattern text Spring would give to Pattern.compile.
local regex = require "gwsync.regex"

local M = {}

local byte, sub = string.byte, string.sub
local LB, RB, SLASH, BSL = 123, 125, 47, 92
local QMARK, STAR = 63, 42

-- End index of the "{...}" glob starting at s[i] == "{", or nil when GLOB_PATTERN's third
-- alternative does not match there. Lazy "+?" = after each unit try the closing "}" first.
local function var_end(s, i)
    local n = #s
    local function rec(pos, count)
        if pos > n then return nil end
        local c = byte(s, pos)
        if count > 0 and c == RB then return pos end
        if c == LB then -- \{[^/]+?\}
            local k = pos + 1
            while k <= n and byte(s, k) ~= SLASH do
                if k >= pos + 2 and byte(s, k) == RB then
                    local r = rec(k + 1, count + 1)
                    if r then return r end
                end
                k = k + 1
            end
        end
        if c ~= SLASH and c ~= LB and c ~= RB then -- [^/{}]
            local r = rec(pos + 1, count + 1)
            if r then return r end
        end
        if c == BSL and pos < n then -- \\[{}]
            local d = byte(s, pos + 1)
            if d == LB or d == RB then
                local r = rec(pos + 2, count + 1)
                if r then return r end
            end
        end
        return nil
    end
    return rec(i + 1, 0)
end

-- translate(text, default_var) -> regex_text | nil (nil: no glob at all, an exact string),
--                                 var_names (list)
function M.translate(text, default_var)
    local out, names = {}, {}
    local i, last, n, found = 1, 1, #text, false
    while i <= n do
        local c = byte(text, i)
        local j
        if c == QMARK or c == STAR then
            j = i
        elseif c == LB then
            j = var_end(text, i)
        end
        if j then
            found = true
            out[#out + 1] = regex.quote(sub(text, last, i - 1))
            if c == QMARK then
                out[#out + 1] = "."
            elseif c == STAR then
                out[#out + 1] = ".*"
            else
                local m = sub(text, i, j)
                local colon = m:find(":", 1, true)
                if not colon then
                    out[#out + 1] = default_var
                    names[#names + 1] = sub(m, 2, -2)
                else
                    out[#out + 1] = "(" .. sub(m, colon + 1, -2) .. ")"
                    names[#names + 1] = sub(m, 2, colon - 1)
                end
            end
            last = j + 1
            i = j + 1
        else
            i = i + 1
        end
    end
    if not found then return nil, names end
    out[#out + 1] = regex.quote(sub(text, last))
    return table.concat(out), names
end

return M
