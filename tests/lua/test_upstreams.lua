-- Upstream lists as ShenYu's gateway builds them (DIVIDE-SEMANTICS §6): DISCOVER_UPSTREAM
-- entries (DivideUpstreamDataHandler, 2.6.1+) and selector handles (DividePluginDataHandler
-- before 2.6.1), through UpstreamCacheManager's healthy list.
local T = require "tinytest"
local cjson = require "cjson.safe"
local upstreams = require "gwsync.upstreams"

local function urls(list)
    local out = {}
    for i, u in ipairs(list) do out[i] = u.url .. "@" .. u.weight end
    return table.concat(out, ",")
end

-- {name, upstreamDataList, expected "url@weight,..."}
local DISCOVERY_CASES = {
    { "status 0 is up, anything else down",
      { { url = "a:1", status = 0, weight = 5 }, { url = "b:1", status = 1, weight = 5 } }, "a:1@5" },
    { "absent status is Java's int default 0: up",
      { { url = "a:1", weight = 5 } }, "a:1@5" },
    { "null status is also 0: up",
      { { url = "a:1", weight = 5, status = cjson.null } }, "a:1@5" },
    { "absent weight is 0",
      { { url = "a:1", status = 0 } }, "a:1@0" },
    { "healthCheckEnabled=false forces a down upstream up",
      { { url = "a:1", status = 1, weight = 5, props = '{"healthCheckEnabled":false}' } }, "a:1@5" },
    { "gray upstreams only, when any is gray",
      { { url = "a:1", status = 0, weight = 5 }, { url = "b:1", status = 0, weight = 6, props = '{"gray":true}' } },
      "b:1@6" },
    { "duplicates (same protocol and url): the first is kept",
      { { url = "a:1", status = 0, weight = 5 }, { url = "a:1", status = 0, weight = 9 },
        { url = "b:1", status = 0, weight = 1 } }, "a:1@5,b:1@1" },
    { "same url with another protocol is another upstream",
      { { url = "a:1", status = 0, weight = 5, protocol = "http://" },
        { url = "a:1", status = 0, weight = 9, protocol = "https://" } }, "a:1@5,a:1@9" },
}
for _, c in ipairs(DISCOVERY_CASES) do
    T.case("discovery: " .. c[1], function()
        T.eq(urls(upstreams.from_discovery({ upstreamDataList = c[2] }, 0)), c[3])
    end)
end

-- {name, selector handle list, expected}
local HANDLE_CASES = {
    { "absent weight is DivideUpstream's Gson default 0, not 50",
      { { upstreamUrl = "a:1", status = true } }, "a:1@0" },
    { "absent status is CommonUpstream's default true",
      { { upstreamUrl = "a:1", weight = 3 } }, "a:1@3" },
    { "status false is down even with healthCheckEnabled=false (not read before 2.6.1)",
      { { upstreamUrl = "a:1", weight = 3, status = false, healthCheckEnabled = false } }, "" },
    { "gray is not read before 2.6.1: no gray filter",
      { { upstreamUrl = "a:1", weight = 3 }, { upstreamUrl = "b:1", weight = 4, gray = true } }, "a:1@3,b:1@4" },
    { "duplicates: the first is kept",
      { { upstreamUrl = "a:1", weight = 3 }, { upstreamUrl = "a:1", weight = 4 } }, "a:1@3" },
}
for _, c in ipairs(HANDLE_CASES) do
    T.case("selector handle: " .. c[1], function()
        T.eq(urls(upstreams.from_selector_handle(cjson.encode(c[2]), 0)), c[3])
    end)
end

T.case("blank protocol proxies with http:// and the trimmed url's host and port", function()
    local u = upstreams.from_discovery({ upstreamDataList = { { url = " 10.0.0.1:8080 ", protocol = "  " } } }, 0)[1]
    T.eq(u.protocol, "http://"); T.eq(u.host, "10.0.0.1"); T.eq(u.port, 8080)
    T.eq(u.url, " 10.0.0.1:8080 ") -- the raw url stays the identity (specify-domain compares it)
end)

T.done()
