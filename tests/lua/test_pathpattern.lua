-- Spring 6.1 PathPattern semantics of the `pathPattern` uri operator (DIVIDE-SEMANTICS §1b).
local T = require "tinytest"
local pp = require "gwsync.pathpattern"

local function run(p, s)
    local m = pp.compile(p)
    local ok, r = pcall(m, s)
    if not ok then return "error " .. tostring(r.status) end
    return r
end

local CASES = {
    -- no optional trailing separator
    { "/http", "/http/", false }, { "/http/", "/http", false }, { "/http", "/http", true },
    -- %-decoding and ;params stripping of the path
    { "/a b/**", "/a%20b/c", true }, { "/a%20b/**", "/a%20b/c", false },
    { "/a/b", "/a;x=1/b", true }, { "/a/b", "/a/b;v=2", true },
    -- empty segments are significant
    { "/a/b", "/a//b", false },
    -- %2F stays inside one segment
    { "/x/y", "/x%2Fy", false }, { "/{seg}", "/x%2Fy", true },
    -- * in a segment
    { "/http/*", "/http/", true }, { "/http/*", "/http", false }, { "/http/*", "/http/a", true },
    { "/a/*/c", "/a//c", false }, { "/a/*.html", "/a/x.html", true }, { "/a/*.html", "/a/x.htm", false },
    -- ** and {*var} only last
    { "/http/**", "/http", true }, { "/http/**", "/http/", true }, { "/http/**", "/http/x/y", true },
    { "/http/**", "/httpx", false }, { "/**", "/", true }, { "/**", "/any/thing", true },
    { "/o/{*rest}", "/o/a/b", true }, { "/o/{*rest}", "/o", true },
    { "/a/**/c", "/a/c", "error 400" }, { "/a/**/c", "/a/b/c", "error 400" },
    { "/a/**x", "/a/yx", true },
    -- {var}, {var:regex}
    { "/o/{id}", "/o/1", true }, { "/o/{id}", "/o/", false }, { "/o/{id}", "/o/1/2", false },
    { "/o/{id:[0-9]+}", "/o/12", true }, { "/o/{id:[0-9]+}", "/o/x", false },
    { "/o/{id:(a)}", "/o/a", "error 400" }, { "/a/{x}/{x}", "/a/b/c", "error 400" },
    { "/f/{name}.{ext}", "/f/a.txt", true }, { "/f/{name}.{ext}", "/f/", false },
    -- ? wildcards
    { "/a/b?", "/a/bc", true }, { "/a/b?", "/a/b", false },
    -- case-sensitive literals
    { "/Posts", "/posts", false },
    -- pattern parse errors and bad path escapes are 400 at request time
    { "/a/{b", "/a/x", "error 400" }, { "/a/b}", "/a/x", "error 400" },
    { "/a", "/a%zz", "error 400" }, { "/a", "/a%2", "error 400" },
}

for _, c in ipairs(CASES) do
    T.case(string.format("pathPattern(%q) on %q -> %s", c[1], c[2], tostring(c[3])), function()
        T.eq(run(c[1], c[2]), c[3])
    end)
end

T.case("parse_path: separators, decoded segments, params dropped", function()
    local els = pp.parse_path("/a%20b;x=1//c/")
    T.eq(#els, 6)
    T.eq(els[1], false); T.eq(els[2], "a b"); T.eq(els[3], false); T.eq(els[4], false)
    T.eq(els[5], "c"); T.eq(els[6], false)
end)

T.case("compile reports the parse error for the build log", function()
    local _, err = pp.compile("/a/**/b")
    T.truthy(err and err:find("No more pattern data", 1, true), "error text")
end)

T.done()
