-- AntPathMatcher semantics of the `match`/`exclude` uri operators (DIVIDE-SEMANTICS §1a).
local T = require "tinytest"
local antpath = require "gwsync.antpath"

local function ok_call(p, s)
    local ok, r = pcall(antpath.match, p, s)
    if not ok then return "error: " .. tostring(type(r) == "table" and r.message or r) end
    return r
end

-- {pattern, path, expected}
local CASES = {
    -- leading "/" must agree
    { "test*", "/test", false }, { "/test*", "/test", true }, { "test*", "test", true },
    -- empty tokens are dropped
    { "/a/b", "/a//b", true }, { "/a//b", "/a/b", true },
    -- ? and * stay inside one segment
    { "/a?c", "/abc", true }, { "/a?c", "/ac", false }, { "/a?c", "/a/c", false },
    { "/a/*", "/a/b", true }, { "/a/*", "/a/b/c", false }, { "/a*", "/ab/c", false },
    -- ** as a whole segment: 0+ segments, also in the middle
    { "/a/**/c", "/a/c", true }, { "/a/**/c", "/a/b/c", true }, { "/a/**/c", "/a/b/d/c", true },
    { "/a/**/c", "/a/b/d", false }, { "/**", "/", true }, { "/**", "/x/y/z", true },
    { "/a/**/b/**/c", "/a/x/b/y/z/c", true }, { "/a/**/b/**/c", "/a/x/y/z/c", false },
    { "/**/**/c", "/a/c", true },
    -- ** inside a segment acts like *
    { "/http**", "/httpx", true }, { "/http**", "/http/x", false },
    -- {name} and {name:regex}
    { "/order/{id}", "/order/12", true }, { "/order/{id}", "/order/12/x", false },
    { "/order/{id:[0-9]+}", "/order/12", true }, { "/order/{id:[0-9]+}", "/order/1a", false },
    { "/order/{id:\\d{3}}", "/order/123", true }, { "/order/{id:\\d{3}}", "/order/1234", false },
    { "/f/{name}.{ext}", "/f/a.txt", true },
    -- trailing slash rules
    { "/http", "/http/", false }, { "/http/", "/http", false }, { "/http/", "/http/", true },
    { "/http/**", "/http", true }, { "/http/**", "/http/", true }, { "/http/**", "/http/a/b", true },
    { "/http/*", "/http/", true }, { "/http/*", "/http", false },
    { "/a/*/c", "/a/b/c/", false }, { "/a/**/c/", "/a/b/c", false },
    -- literal patterns are exact
    { "/posts", "/posts", true }, { "/posts", "/posts2", false }, { "/posts", "/Posts", false },
    -- the raw path: no %-decoding, no ";" stripping, no dot segments
    { "/a b/**", "/a%20b/c", false }, { "/a%20b/**", "/a%20b/c", true },
    { "/a/b", "/a;x=1/b", false }, { "/a/b", "/a/./b", false },
    -- a regex metacharacter in a literal segment stays literal
    { "/a.b/*", "/axb/c", false }, { "/a.b/*", "/a.b/c", true }, { "/a+", "/a+", true },
    -- a "{" that is not a variable is literal text
    { "/a{b", "/a{b", true },
}

for _, c in ipairs(CASES) do
    T.case(string.format("match(%q, %q) == %s", c[1], c[2], tostring(c[3])), function()
        T.eq(ok_call(c[1], c[2]), c[3])
    end)
end

T.case("a bad {var:regex} fails with 400 only when the segment is reached", function()
    T.eq(ok_call("/a/{x:[}", "/b/c"), false)
    local ok, err = pcall(antpath.match, "/a/{x:[}", "/a/c")
    T.eq(ok, false)
    T.eq(err.status, 400)
end)

T.case("compiled matcher accepts pre-split path tokens", function()
    local m = antpath.compile("/a/**/c")
    T.eq(antpath.matches(m, "/a/b/c", antpath.tokenize("/a/b/c")), true)
    T.eq(antpath.matches(m, "/a/b/d", antpath.tokenize("/a/b/d")), false)
end)

-- issue 29: the search for the tokens between two "**" costs path tokens x tokens between;
-- it runs on a step budget. The counts prove the budget stopped it, not a clock.
local limits = require "gwsync.limits"
local P8 = string.rep("/a", 4000)   -- an 8 KB path of 4,000 tokens

T.case("many {var} tokens between two ** against an 8 KB path: stopped by the budget", function()
    local before = limits.count.antpath
    T.eq(antpath.match("/**/" .. string.rep("{v}/", 30) .. "z/**", P8), false)
    T.eq(limits.count.antpath, before + 1, "budget hits")
end)
T.case("a token regex at its match limit inside the search ends the match", function()
    local before = limits.count.antpath
    local path = string.rep("/" .. string.rep("a", 30) .. "b", 200)
    T.eq(antpath.match("/**/{v:(.*a){12}}/z/**", path), false)
    T.eq(limits.count.antpath, before + 1, "counted")
end)
T.case("within the budget the search matches as Spring does, far along a long path", function()
    local toks = {}
    for i = 1, 2000 do toks[i] = "a" .. i end
    local path = "/" .. table.concat(toks, "/")
    local before = limits.count.antpath
    T.eq(antpath.match("/**/a1999/**", path), true)
    T.eq(antpath.match("/**/a1998/{v}/**", path), true)
    T.eq(antpath.match("/**/a1998/a1/**", path), false)
    T.eq(antpath.match("/**/{x}/a1000/**", path), true)
    T.eq(limits.count.antpath, before, "no budget hit")
end)

T.done()
