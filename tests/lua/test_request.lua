-- realData per paramType (DIVIDE-SEMANTICS §2).
local T = require "tinytest"
local request = require "gwsync.request"

local function req(t)
    t.path = t.path or "/p"
    t.method = t.method or "GET"
    t.headers = t.headers or {}
    t.remote_addr = t.remote_addr or "10.0.0.9"
    return request.new(t)
end
local function rd(r, ptype, name)
    local ok, v = pcall(r.real_data, r, ptype, name)
    if not ok then return "error " .. tostring(v.status) end
    return v
end

T.case("uri is the raw path", function()
    T.eq(rd(req { path = "/a%20b/c;x" }, "uri"), "/a%20b/c;x")
end)
T.case("header: case-insensitive name, first line, no splitting", function()
    local r = req { headers = { { "X-Tenant", "a,b" }, { "x-tenant", "second" } } }
    T.eq(rd(r, "header", "x-TENANT"), "a,b")
end)
T.case("header absent is empty string", function()
    T.eq(rd(req {}, "header", "X-None"), "")
end)
T.case("query: first value, decoded, + is space", function()
    local r = req { query = "a=1&a=2&b=x%20y+z&c=%E2%82%AC" }
    T.eq(rd(r, "query", "a"), "1")
    T.eq(rd(r, "query", "b"), "x y z")
    T.eq(rd(r, "query", "c"), "\226\130\172")
end)
T.case("query: ?a is null, ?a= is empty, absent is null", function()
    local r = req { query = "a&b=&c=3" }
    T.eq(rd(r, "query", "a"), nil)
    T.eq(rd(r, "query", "b"), "")
    T.eq(rd(r, "query", "zz"), nil)
end)
T.case("query: names are decoded and case-sensitive, value keeps '='", function()
    local r = req { query = "my%20k=v&K=1&e=a=b" }
    T.eq(rd(r, "query", "my k"), "v")
    T.eq(rd(r, "query", "k"), nil)
    T.eq(rd(r, "query", "e"), "a=b")
end)
T.case("query: a bad escape keeps the raw value", function()
    T.eq(rd(req { query = "a=%zz&b=%4" }, "query", "a"), "%zz")
    T.eq(rd(req { query = "b=%4" }, "query", "b"), "%4")
end)
T.case("query: no query at all", function()
    T.eq(rd(req {}, "query", "a"), nil)
end)
-- Netty's ServerCookieDecoder.STRICT, as Reactor Netty decodes Cookie lines for ShenYu:
-- {name, Cookie header values (one line each), cookie name, expected realData}
local COOKIE_CASES = {
    { "a value is not trimmed: a space makes it invalid, the cookie is dropped", { "a=1 ; b=2" }, "a", "" },
    { "the next cookie after a dropped one still counts", { "a=1 ; b=2" }, "b", "2" },
    { "a name with a space before = is not a token: dropped", { "a =1" }, "a", "" },
    { "a cookie without = is dropped, a later one of the name wins", { "a; a=1" }, "a", "1" },
    { "a value with a comma is dropped", { "a=1, b=2" }, "a", "" },
    { "an unbalanced opening quote drops the cookie", { "a=\"x" }, "a", "" },
    { "balanced quotes are removed", { "a=\"x\"" }, "a", "x" },
    { "\"\" is an empty value", { "a=\"\"; a=2" }, "a", "" },
    { "a non-ASCII byte in the value drops it", { "a=\xc3\xa9" }, "a", "" },
    { "a = inside the value is kept", { "a=b=c" }, "a", "b=c" },
    { "commas and blanks before a name are skipped", { " ,;a=1" }, "a", "1" },
    { "names are case-sensitive", { "A=1" }, "a", "" },
    { "first of several lines", { "x=0", "a=1", "a=2" }, "a", "1" },
    { "RFC 2965: $Version and $Path are skipped", { "$Version=1; a=1; $Path=/" }, "a", "1" },
    { "RFC 2965: $Path is not a cookie", { "$Version=1; a=1; $Path=/" }, "$Path", "" },
    { "without $Version a $Path cookie is an ordinary cookie", { "$Path=/x" }, "$Path", "/x" },
}
for _, c in ipairs(COOKIE_CASES) do
    T.case("cookie: " .. c[1], function()
        local hs = {}
        for i, v in ipairs(c[2]) do hs[i] = { "Cookie", v } end
        T.eq(rd(req { headers = hs }, "cookie", c[3]), c[4])
    end)
end

T.case("cookie: exact name, first cookie, quotes dropped", function()
    local r = req { headers = { { "Cookie", "a=1; session=\"s1\"; A=2" }, { "cookie", "session=s2" } } }
    T.eq(rd(r, "cookie", "session"), "s1")
    T.eq(rd(r, "cookie", "A"), "2")
    T.eq(rd(r, "cookie", "none"), "")
end)
T.case("ip/host: socket peer when there is no X-Forwarded-For", function()
    local r = req { remote_addr = "127.0.0.1" }
    T.eq(rd(r, "ip"), "127.0.0.1")
    T.eq(rd(r, "host"), "127.0.0.1")
end)
T.case("ip/host: X-Forwarded-For with >= 2 entries gives the left-most", function()
    local r = req { headers = { { "X-Forwarded-For", "1.2.3.4, 5.6.7.8" } } }
    T.eq(rd(r, "ip"), "1.2.3.4")
    T.eq(rd(r, "host"), "1.2.3.4")
end)
T.case("ip: single-value XFF is ignored", function()
    T.eq(rd(req { headers = { { "X-Forwarded-For", "1.2.3.4" } } }, "ip"), "10.0.0.9")
end)
T.case("ip/host with client_address = nginx: the peer address, X-Forwarded-For never read", function()
    local r = req { client_address = "nginx", remote_addr = "10.0.0.9",
                    headers = { { "X-Forwarded-For", "1.2.3.4, 5.6.7.8" } } }
    T.eq(rd(r, "ip"), "10.0.0.9")
    T.eq(rd(r, "host"), "10.0.0.9")
    -- an entry ShenYu would fail on (not an address) cannot fail the request either
    local bad = req { client_address = "nginx", headers = { { "X-Forwarded-For", "proxy.example, 1.2.3.4" } } }
    T.eq(rd(bad, "ip"), "10.0.0.9")
    T.eq(r:client_ip_or_false(), "10.0.0.9")
end)
T.case("ip: XFF 'a,b' without a space is ignored", function()
    T.eq(rd(req { headers = { { "X-Forwarded-For", "1.2.3.4,5.6.7.8" } } }, "ip"), "10.0.0.9")
end)
T.case("ip: several XFF lines are all ignored", function()
    local r = req { headers = { { "X-Forwarded-For", "1.2.3.4, 9.9.9.9" }, { "x-forwarded-for", "5.6.7.8, 1.1.1.1" } } }
    T.eq(rd(r, "ip"), "10.0.0.9")
end)
T.case("ip: IPv6 in Java long form", function()
    T.eq(rd(req { remote_addr = "::1" }, "ip"), "0:0:0:0:0:0:0:1")
    T.eq(rd(req { remote_addr = "2001:db8::a:0:1" }, "ip"), "2001:db8:0:0:0:a:0:1")
    T.eq(rd(req { remote_addr = "::ffff:1.2.3.4" }, "ip"), "1.2.3.4")
end)
T.case("ip: a hostname in XFF would need DNS -> 500; host keeps the text", function()
    local r = req { headers = { { "X-Forwarded-For", "proxy.example, 1.2.3.4" } } }
    T.eq(rd(r, "ip"), "error 500")
    T.eq(rd(r, "host"), "proxy.example")
end)
T.case("domain: Host header without port; IPv6 keeps brackets", function()
    T.eq(rd(req { headers = { { "Host", "a.example:8080" } } }, "domain"), "a.example")
    T.eq(rd(req { headers = { { "Host", "[::1]:8080" } } }, "domain"), "[::1]")
    T.eq(rd(req { headers = { { "Host", "A.Example" } } }, "domain"), "A.Example")
end)
T.case("domain: a Host java.net.URI rejects gives null", function()
    T.eq(rd(req { headers = { { "Host", "my_host" } } }, "domain"), nil)
    T.eq(rd(req {}, "domain"), nil)
end)
T.case("req_method is the method as sent", function()
    T.eq(rd(req { method = "POST" }, "req_method"), "POST")
end)
T.case("post: ShenyuContext fields", function()
    local r = req { path = "/x/y", method = "PUT" }
    T.eq(rd(r, "post", "path"), "/x/y")
    T.eq(rd(r, "post", "rpcType"), "http")
    T.eq(rd(r, "post", "httpMethod"), "PUT")
    T.eq(rd(r, "post", "realUrl"), "/x/y")
    T.eq(rd(r, "post", "appKey"), nil)
    T.eq(rd(r, "post", "nosuchfield"), nil)
    T.eq(rd(r, "post", "startDateTime"), "error 500")
end)
T.case("unknown paramType -> 400, blank paramType -> 500", function()
    T.eq(rd(req {}, "path"), "error 400")
    T.eq(rd(req {}, "form-data"), "error 400")
    T.eq(rd(req {}, "Header", "x"), "error 400")
    T.eq(rd(req {}, nil), "error 500")
end)
T.case("split(', ') as Java: trailing empties dropped", function()
    local v = request.split_comma_space("a, b, ")
    T.eq(#v, 2)
    T.eq(#request.split_comma_space(""), 1)
end)
T.done()
