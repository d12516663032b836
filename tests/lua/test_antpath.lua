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

T.done()
