-- gwsync.pathpattern: Spring 6.1 PathPattern (PathPatternParser.defaultInstance) as ShenYu's
-- `pathPattern` operator uses it on uri conditions (DIVIDE-SEMANTICS §1b).
--
-- compile(pattern) parses the pattern into Spring's chain of path elements (separator,
-- literal, "?"-wildcarded literal, "*", regex segment, {var}/{var:re} capture, trailing "/**"
-- and "/{*var}") exactly as InternalPathPatternParser (6.1) does, so parse errors are the same
-- patterns; the matcher walks the chain as PathElement.matches does, with
-- matchOptionalTrailingSeparator=false and case-sensitive literals.
-- The path side is PathContainer.parsePath(path) with HTTP_PATH options (parse_path()):
-- elements are separators and non-empty segments, each segment %-decoded (UTF-8) with its
-- ";params" removed. A malformed %-escape makes Spring throw IllegalArgumentException
-- (HTTP 400), so parse_path returns an error and the matcher raises it.
-- Errors ShenYu reports at request time (a bad pattern) are raised by the matcher, not by
-- compile(), because PathPatternParser.parse runs per request in ShenYu: compile returns a
-- matcher that raises, plus the error for the build log.
local glob = require "gwsync.glob"
local regex = require "gwsync.regex"
local errors = require "gwsync.errors"

local M = {}

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local SLASH, LB, RB, COLON, STAR, QMARK, BSL = 47, 123, 125, 58, 42, 63, 92

-- Spring 6 compiles segment regexes and {var:re} constraints with Pattern.DOTALL (so a decoded
-- %0A is matched by "*" and "."); 5.x did not. This matters only for paths with %0A/%0D.
local DOTALL = { dotall = true }

local SEP = false -- a separator element in a parsed path (segments are strings)

---------------------------------------------------------------------------------------------
-- The path: PathContainer.parsePath(path, HTTP_PATH)
---------------------------------------------------------------------------------------------
local function hexval(c)
    if c >= 48 and c <= 57 then return c - 48 end
    if c >= 65 and c <= 70 then return c - 55 end
    if c >= 97 and c <= 102 then return c - 87 end
    return nil
end

-- StringUtils.uriDecode: "%XX" -> byte, anything else kept; a bad or short escape is an error.
local function uri_decode(s)
    if not find(s, "%", 1, true) then return s end
    local out, n, i, len = {}, 0, 1, #s
    while i <= len do
        local c = byte(s, i)
        if c == 37 then
            if i + 2 > len then return nil, 'Invalid encoded sequence "' .. sub(s, i) .. '"' end
            local u, l = hexval(byte(s, i + 1)), hexval(byte(s, i + 2))
            if not u or not l then return nil, 'Invalid encoded sequence "' .. sub(s, i) .. '"' end
            n = n + 1; out[n] = char(u * 16 + l)
            i = i + 3
        else
            local j = find(s, "%", i, true) or len + 1
            n = n + 1; out[n] = sub(s, i, j - 1)
            i = j
        end
    end
    return table.concat(out, "", 1, n)
end

-- parse_path(path) -> elements (SEP or decoded segment text) | nil, err
function M.parse_path(path)
    local els, n, i, len = {}, 0, 1, #path
    if len == 0 then return els end
    if byte(path, 1) == SLASH then
        n = 1; els[1] = SEP; i = 2
    end
    while i <= len do
        local j = find(path, "/", i, true)
        local seg = sub(path, i, (j or len + 1) - 1)
        if seg ~= "" then
            local semi = find(seg, ";", 1, true)
            if semi then seg = sub(seg, 1, semi - 1) end
            local v, err = uri_decode(seg)
            if not v then return nil, err end
            n = n + 1; els[n] = v
        end
        if not j then break end
        n = n + 1; els[n] = SEP
        i = j + 1
    end
    return els
end

---------------------------------------------------------------------------------------------
-- The pattern: InternalPathPatternParser (Spring 6.1)
---------------------------------------------------------------------------------------------
-- Element kinds
local K_SEP, K_LIT, K_SCW, K_WILD, K_REGEX, K_CAPTURE, K_REST = 1, 2, 3, 4, 5, 6, 7

local function is_ident_start(c)
    return (c >= 65 and c <= 90) or (c >= 97 and c <= 122) or c == 95 or c == 36 or c >= 128
end
local function is_ident_part(c)
    return is_ident_start(c) or (c >= 48 and c <= 57)
end

local function parse(p)
    local len = #p
    local els = {}
    local names = {}
    local pos = 1
    local st -- per-element parser state
    local function reset()
        st = { start = nil, scw = 0, wildcard = false, inside = false, nvars = 0,
               rest = false, vstart = nil }
    end
    reset()
    local function perr(msg) error({ parse = true, msg = msg }, 0) end
    local function record(name)
        if names[name] then perr("Not allowed to capture '" .. name .. "' twice in the same pattern") end
        names[name] = true
    end
    local function push(el)
        if el.kind == K_REST and el.capture then
            -- "{*var}" replaces the separator before it
            if #els > 0 then
                if els[#els].kind ~= K_SEP then perr("Expected SeparatorPathElement") end
                els[#els] = nil
            end
        end
        els[#els + 1] = el
        reset()
    end
    local function element()
        if st.inside then perr("Expected close capture character after variable name }") end
        local text = sub(p, st.start, pos - 1)
        if st.nvars > 0 then
            if st.nvars == 1 and st.start == st.vstart and byte(p, pos - 1) == RB then
                if st.rest then
                    record(sub(text, 3, -2))
                    return { kind = K_REST, capture = true }
                end
                local colon = find(text, ":", 1, true)
                local el = { kind = K_CAPTURE }
                if colon then
                    el.name = sub(text, 2, colon - 1)
                    local re = sub(text, colon + 1, -2)
                    local fn, err, ncap = regex.compile_ex(re, DOTALL)
                    if not fn then perr(err) end
                    el.constraint, el.re = fn, re
                    el.groups = ncap > 0
                else
                    el.name = sub(text, 2, -2)
                end
                record(el.name)
                return el
            end
            if st.rest then perr("{*...} can only be preceded by a path separator") end
        elseif not st.wildcard then
            if st.scw > 0 then
                local rx = glob.translate(text, "(.*)")
                local fn, err = regex.compile(rx, { dotall = true })
                if not fn then perr(err) end
                return { kind = K_SCW, fn = fn }
            end
            return { kind = K_LIT, text = text }
        elseif pos - 1 == st.start then
            return { kind = K_WILD }
        end
        -- RegexPathElement: the glob as a Java regex
        local rx, vnames = glob.translate(text, "(.*)")
        local seen = {}
        for _, nm in ipairs(vnames) do
            if seen[nm] then perr("Not allowed to capture '" .. nm .. "' twice in the same pattern") end
            seen[nm] = true
        end
        local fn, err = regex.compile(rx or regex.quote(text), DOTALL)
        if not fn then perr(err) end
        for _, nm in ipairs(vnames) do record(nm) end
        return { kind = K_REGEX, fn = fn, nvars = #vnames }
    end
    local function skip_capture_regex()
        pos = pos + 1
        local rstart, depth, prev_bsl = pos, 0, false
        while pos <= len do
            local c = byte(p, pos)
            if c == BSL and not prev_bsl then
                pos = pos + 1
                prev_bsl = true
            else
                if c == LB and not prev_bsl then
                    depth = depth + 1
                elseif c == RB and not prev_bsl then
                    if depth == 0 then
                        if rstart == pos then perr("Missing regex constraint on capture") end
                        return
                    end
                    depth = depth - 1
                end
                if c == SLASH and not prev_bsl then
                    perr("Expected close capture character after variable name }")
                end
                pos = pos + 1
                prev_bsl = false
            end
        end
        perr("Expected close capture character after variable name }")
    end

    while pos <= len do
        local c = byte(p, pos)
        if c == SLASH then
            if st.start then push(element()) end
            -- peekDoubleWildcard: "/**" only as the very end of the pattern
            if pos + 2 <= len and byte(p, pos + 1) == STAR and byte(p, pos + 2) == STAR then
                if pos + 3 <= len and byte(p, pos + 3) == SLASH then
                    perr("No more pattern data allowed after {*...} or ** pattern element")
                end
            end
            if pos + 2 == len and byte(p, pos + 1) == STAR and byte(p, pos + 2) == STAR then
                push({ kind = K_REST })
                pos = pos + 2
            else
                push({ kind = K_SEP })
            end
        else
            if not st.start then st.start = pos end
            if c == QMARK then
                st.scw = st.scw + 1
            elseif c == LB then
                if st.inside then perr("Not allowed to nest variable captures") end
                st.inside = true
                st.vstart = pos
            elseif c == RB then
                if not st.inside then perr("Missing preceding open capture character before variable name{") end
                st.inside = false
                if st.rest and pos < len then
                    perr("No more pattern data allowed after {*...} or ** pattern element")
                end
                st.nvars = st.nvars + 1
            elseif c == COLON then
                if st.inside and not st.rest then
                    skip_capture_regex()
                    st.inside = false
                    st.nvars = st.nvars + 1
                end
            elseif c == STAR then
                if st.inside and st.vstart == pos - 1 then st.rest = true end
                st.wildcard = true
            end
            if st.inside then
                local first = st.vstart + 1 + (st.rest and 1 or 0)
                if first == pos and not is_ident_start(c) then
                    perr("Char '" .. char(c) .. "' not allowed at start of captured variable name")
                elseif pos > first and not is_ident_part(c) and c ~= 45 then
                    perr("Char '" .. char(c) .. "' is not allowed in a captured variable name")
                end
            end
        end
        pos = pos + 1
    end
    if st.start then push(element()) end
    return els
end

---------------------------------------------------------------------------------------------
-- Matching: PathElement.matches(pathIndex, context), 1-based here (index n+1 = "ran out")
---------------------------------------------------------------------------------------------
local match_from

local function finish(els, k, path, p)
    -- common tail of literal-like elements: p already advanced past the segment
    if k == #els then return p == #path + 1 end
    return match_from(els, k + 1, path, p)
end

match_from = function(els, k, path, p)
    local el = els[k]
    local kind = el.kind
    local n = #path
    if kind == K_SEP then
        if p <= n and path[p] == SEP then
            if k == #els then return p == n end
            return match_from(els, k + 1, path, p + 1)
        end
        return false
    elseif kind == K_LIT then
        if p > n then return false end
        local v = path[p]
        if v == SEP or v ~= el.text then return false end
        return finish(els, k, path, p + 1)
    elseif kind == K_SCW then
        if p > n then return false end
        local v = path[p]
        if v == SEP or not el.fn(v) then return false end
        return finish(els, k, path, p + 1)
    elseif kind == K_WILD then
        local seg
        if p <= n then
            seg = path[p]
            if seg == SEP then return false end
            p = p + 1
        end
        if k == #els then return p == n + 1 end
        if seg == nil or seg == "" then return false end
        return match_from(els, k + 1, path, p)
    elseif kind == K_REGEX then
        local v = (p <= n and path[p]) or ""
        if not el.fn(v) then return false end
        if k == #els then
            return p >= n and (el.nvars == 0 or #v > 0)
        end
        return match_from(els, k + 1, path, p + 1)
    elseif kind == K_CAPTURE then
        if p > n then return false end
        local v = path[p] or ""
        if v == "" then return false end
        if el.constraint then
            if el.groups then
                errors.raise_bad_request("No capture groups allowed in the constraint regex: " .. el.re)
            end
            if not el.constraint(v) then return false end
        end
        return finish(els, k, path, p + 1)
    else -- K_REST: "/**" or "/{*var}": the rest must be empty or start with a separator
        return not (p <= n and path[p] ~= SEP)
    end
end

-- compile(pattern) -> matcher(path_string, parsed_path?) -> bool, parse error (if any), info
-- The matcher of a bad pattern raises ShenYu's HTTP 400 when it is used.
-- info (good patterns only) describes the pattern for the router's fast path:
--   raises  a {var:re} constraint has capture groups: matching may raise HTTP 400
--   lit1    the pattern's elements start with a separator and a literal segment lit1: a
--           path matches only if its first element is a separator and its second the
--           segment lit1 (compared after %-decoding and dropping ";params")
--   lits    the literal segments of the pattern's leading separator/literal pairs
--           ("/a/b/{x}" -> a, b): a path matches only if its elements start with a
--           separator, lits[1], a separator, lits[2], ... (the router's index)
function M.compile(pattern)
    local ok, els = pcall(parse, pattern)
    if not ok then
        local msg = type(els) == "table" and els.msg or tostring(els)
        return function() errors.raise_bad_request(msg) end, msg
    end
    local info = { raises = false }
    for i = 1, #els do
        if els[i].groups then info.raises = true end
    end
    if els[1] and els[1].kind == K_SEP and els[2] and els[2].kind == K_LIT then
        info.lit1 = els[2].text
    end
    local lits, k = {}, 1
    while els[k] and els[k].kind == K_SEP and els[k + 1] and els[k + 1].kind == K_LIT do
        lits[#lits + 1] = els[k + 1].text
        k = k + 2
    end
    info.lits = lits
    return function(path, parsed)
        if not parsed then
            local err
            parsed, err = M.parse_path(path)
            if not parsed then errors.raise_bad_request(err) end
        end
        if #els == 0 then return #parsed == 0 end
        if #parsed == 0 then
            -- an empty path matches only a leading "/**" or "/{*var}"
            return els[1].kind == K_REST
        end
        return match_from(els, 1, parsed, 1)
    end, nil, info
end

return M
