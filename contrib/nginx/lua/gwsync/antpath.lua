-- gwsync.antpath: Spring's AntPathMatcher.match(pattern, path) as ShenYu's `match`/`exclude`
-- operators use it on uri conditions (DIVIDE-SEMANTICS §1a).
--
-- A port of AntPathMatcher.doMatch(fullMatch=true) with the default settings (separator "/",
-- case-sensitive, trimTokens=false): tokens are split on "/" with empty tokens dropped, a
-- token "**" spans 0+ tokens, other tokens are matched by AntPathStringMatcher (exact string,
-- or the glob translated to a DOTALL regex). The pattern is compiled once (compile()); the
-- path's tokens can be passed in so a request splits its path once for all conditions.
-- Not ported: isPotentialMatch(), a pre-filter that only rejects paths the full match rejects
-- too (it fails only when a literal token's first char cannot match).
-- Like Spring, a token's regex is compiled when the token is first needed in Spring's
-- algorithm: a bad "{id:[}" raises HTTP 400 only for paths that reach that token.
-- Bounded work (contrib/nginx/README.md, "What a request can cost"): Spring's algorithm is
-- linear except where it looks for the tokens between two "**" anywhere in the rest of the
-- path, which costs (path tokens x tokens between): 30 "{v}" tokens between two "**" against
-- an 8 KB path of 4,000 tokens is 124,000 token compares, about 3 ms. That search runs on a
-- step budget (BUDGET units: a literal token compare costs 1, a regex token REGEX_COST); a
-- match that spends it, or whose token regex hits PCRE2's match limit during the search,
-- answers "no match" and is counted in gwsync.limits. Outside that search each pattern token
-- is compared at most once, and a token regex that hits its limit answers false, which ends
-- the match there.
-- A compiled pattern is a table read by one shared matcher (matches), not a closure per
-- pattern: a route table has a pattern per rule, and LuaJIT cannot compile code that makes
-- closures (FNEW), so closures would keep a table's build in the interpreter.
local ffi = require "ffi"
local glob = require "gwsync.glob"
local regex = require "gwsync.regex"
local errors = require "gwsync.errors"
local limits = require "gwsync.limits"

local M = {}

-- the search's step budget (header comment): about 0.5 ms at most on this machine class
M.BUDGET = 100000
M.REGEX_COST = 8
local limit_count = limits.count

local byte, sub, find = string.byte, string.sub, string.find
local SLASH, STAR = 47, 42
local DSTAR = {} -- the "**" token

-- tokenize(s) -> list of the non-empty "/"-separated tokens
local function tokenize(s)
    local out, n, i, len = {}, 0, 1, #s
    while i <= len do
        local j = find(s, "/", i, true)
        if not j then j = len + 1 end
        if j > i then
            n = n + 1
            out[n] = sub(s, i, j - 1)
        end
        i = j + 1
    end
    return out
end
M.tokenize = tokenize

pcall(ffi.cdef, "void *memchr(const void *s, int c, size_t n);")
local memchr = ffi.C.memchr

-- the first n bytes of s (all of it by default) hold no "?", "*" or "{": glob.translate
-- would find no glob in them (memchr: no loop in the build's traces)
local function is_literal(s, n)
    n = n or #s
    return memchr(s, 63, n) == nil and memchr(s, 42, n) == nil and memchr(s, 123, n) == nil
end

-- One pattern token -> string (exact), function (regex), DSTAR, or {err = message}.
local function compile_token(tok)
    if tok == "**" then return DSTAR end
    if is_literal(tok) then return tok end
    local rx = glob.translate(tok, "((?s).*)")
    if not rx then return tok end
    local fn, err = regex.compile(rx, { dotall = true })
    if not fn then return { err = err } end
    return fn
end

local function match_token(pt, s)
    local t = type(pt)
    if t == "string" then return pt == s end
    if t == "function" then return pt(s) end
    errors.raise_bad_request(pt.err)
end

local function all_dstar(pt, from, to)
    for i = from, to do
        if pt[i] ~= DSTAR then return false end
    end
    return true
end

-- compile(pattern) -> P, the pattern prepared for matches(): its tokens compiled (P[1..np]),
-- np, abs (starts with "/"), trail (ends with "/"), raw (the tokens as written, for the "*"
-- rule) and raises (some token is a bad regex: matching may raise HTTP 400). A table, not a
-- closure: LuaJIT does not compile the making of closures, and a table route has many.
function M.compile(pattern)
    local raw = tokenize(pattern)
    local np = #raw
    local P = { np = np, abs = byte(pattern, 1) == SLASH, trail = byte(pattern, -1) == SLASH,
                raw = raw, raises = false }
    for i = 1, np do
        local t = compile_token(raw[i])
        P[i] = t
        if type(t) == "table" and t ~= DSTAR then P.raises = true end
    end
    return P
end

-- analyse(pattern) -> lit1, kind, lit_path, P | nil
-- What the router's fast path needs of a pattern, without building P for the common
-- all-literal ones (P is then nil: compile(pattern) when a full match is needed):
--   lit1      the first token when it is a literal: a path whose first token differs (or
--             that has no token) never matches, and matching returns false before any
--             token's regex is used, so it cannot raise either
--   kind      "prefix": the pattern is "/lit1/**": it matches exactly the paths that start
--             with "/" and whose first token is lit1; "lit_path": the pattern is
--             "/lit1/.../litk/**" (k >= 2), lit_path is "/lit1/.../litk": a path that starts
--             with it followed by "/" or its end matches, and a path without "//" (so that
--             its tokens are exactly its "/"-separated parts) matches only so; nil otherwise
--   P         compile(pattern) when some token is not a literal (its regexes are compiled:
--             P.raises says whether matching may raise)
function M.analyse(pattern)
    -- the common pattern "/a/b/**": literal tokens, no "//", one "**" at the end: read off
    -- the text (no token list made)
    local n = #pattern
    if n >= 5 and byte(pattern, 1) == SLASH and byte(pattern, 2) ~= SLASH
        and byte(pattern, n) == STAR and byte(pattern, n - 1) == STAR
        and byte(pattern, n - 2) == SLASH and byte(pattern, n - 3) ~= SLASH
        and not find(pattern, "//", 1, true) and is_literal(pattern, n - 3) then
        local lit_path = sub(pattern, 1, n - 3)
        local slash = find(lit_path, "/", 2, true)
        if not slash then return sub(lit_path, 2), "prefix", lit_path, nil end
        return sub(lit_path, 2, slash - 1), "lit_path", lit_path, nil
    end
    local raw = tokenize(pattern)
    local np = #raw
    local lit_all = true -- every token but a last "**" a literal
    for i = 1, np do
        local t = raw[i]
        if t == "**" then
            if i < np then lit_all = false end
        elseif not is_literal(t) then
            lit_all = false
        end
    end
    local t1 = raw[1]
    local lit1 = (t1 ~= nil and t1 ~= "**" and is_literal(t1)) and t1 or nil
    local abs, trail = byte(pattern, 1) == SLASH, byte(pattern, -1) == SLASH
    local P = nil
    if not lit_all then P = M.compile(pattern) end
    local kind, lit_path = nil, nil
    if lit_all and abs and not trail and np >= 2 and raw[np] == "**" then
        if np == 2 then
            kind = "prefix"
            lit_path = "/" .. t1
        else
            kind = "lit_path"
            lit_path = "/" .. table.concat(raw, "/", 1, np - 1)
        end
    end
    return lit1, kind, lit_path, P
end

-- lits(pattern) -> the pattern's leading literal tokens (before any wildcard, regex or "**"):
-- a path matches only if its own first #lits tokens are these (matches() compares them
-- first, and a literal token never raises); the router's index files the pattern under them
function M.lits(pattern)
    local raw = tokenize(pattern)
    local out = {}
    for i = 1, #raw do
        local t = raw[i]
        if t == "**" or not is_literal(t) then break end
        out[i] = t
    end
    return out
end

-- matches(P, path, path_tokens?) -> bool (raises HTTP 400 where a bad token is reached)
function M.matches(P, path, pd)
    local pat_abs, pat_trail, np = P.abs, P.trail, P.np
    if (byte(path, 1) == SLASH) ~= pat_abs then return false end
    pd = pd or tokenize(path)
    local path_trail = byte(path, -1) == SLASH
    local pt = P
    local ps, pe = 1, np          -- pattern start/end (inclusive)
    local ds, de = 1, #pd         -- path start/end
    -- a literal first token that differs is the common non-match: answer it before the
    -- loop below (the loop's first step would return false the same way), so that a
    -- loop left on its first pass does not make LuaJIT abort the caller's traces
    local p1 = pt[1]
    if np > 0 and de > 0 and type(p1) == "string" and p1 ~= pd[1] then return false end

    -- Match all elements up to the first **
    while ps <= pe and ds <= de do
        local p = pt[ps]
        if p == DSTAR then break end
        if not match_token(p, pd[ds]) then return false end
        ps, ds = ps + 1, ds + 1
    end

    if ds > de then
        -- Path is exhausted: only match if the rest of the pattern is * or **'s
        if ps > pe then return pat_trail == path_trail end
        if ps == pe and P.raw[ps] == "*" and path_trail then return true end
        return all_dstar(pt, ps, pe)
    elseif ps > pe then
        return false -- path not exhausted, but pattern is
    end

    -- up to the last **
    while ps <= pe and ds <= de do
        local p = pt[pe]
        if p == DSTAR then break end
        if not match_token(p, pd[de]) then return false end
        if pe == np and pat_trail ~= path_trail then return false end
        pe, de = pe - 1, de - 1
    end
    if ds > de then return all_dstar(pt, ps, pe) end

    local budget = M.BUDGET
    while ps ~= pe and ds <= de do
        local tmp = -1
        for i = ps + 1, pe do
            if pt[i] == DSTAR then tmp = i break end
        end
        if tmp == ps + 1 then
            ps = ps + 1 -- "**/**": skip one
        else
            -- find the tokens between the two **'s somewhere in the remaining path
            local plen = tmp - ps - 1
            local slen = de - ds + 1
            local found = -1
            local rx_hits = limit_count.regex
            for i = 0, slen - plen do
                local ok = true
                for j = 0, plen - 1 do
                    local p, s = pt[ps + j + 1], pd[ds + i + j]
                    -- a regex's cost grows with its subject: one more unit per 16 bytes
                    budget = budget - (type(p) == "string" and 1 or (M.REGEX_COST + #s / 16))
                    if not match_token(p, s) then ok = false break end
                end
                if ok then found = ds + i break end
                if budget < 0 or limit_count.regex ~= rx_hits then
                    limits.hit("antpath")
                    return false
                end
            end
            if found == -1 then return false end
            ps = tmp
            ds = found + plen
        end
    end
    return all_dstar(pt, ps, pe)
end

-- match(pattern, path) -> bool (compiles each time: for tests and one-off use)
function M.match(pattern, path)
    return M.matches(M.compile(pattern), path)
end

return M
