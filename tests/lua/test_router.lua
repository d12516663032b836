-- Selector and rule selection, responses, upstream lists (DIVIDE-SEMANTICS §4, §5, §6).
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"

local function enc(list)
    local out = {}
    for i, x in ipairs(list) do out[i] = type(x) == "string" and x or cjson.encode(x) end
    return out
end
local DIVIDE_ON = { id = "5", name = "divide", enabled = true }

local function cond(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv, paramName = pname or "/" }
end
local URI = function(p) return cond("uri", "match", p) end
local UPS = cjson.encode({ { upstreamUrl = "127.0.0.1:8081", protocol = "http://", weight = 50, status = true } })

local function sel(id, sort, conds, extra)
    local s = { id = id, pluginName = "divide", name = id, type = 1, matchMode = 0, sort = sort,
        enabled = true, logged = false, continued = true, handle = UPS, conditionList = conds }
    for k, v in pairs(extra or {}) do s[k] = v end
    return s
end
local HANDLE = cjson.encode({ loadBalance = "roundRobin", retry = 1, timeout = 2000 })
local function rule(id, selectorId, sort, conds, extra)
    local r = { id = id, selectorId = selectorId, pluginName = "divide", name = id, matchMode = 0,
        sort = sort, enabled = true, loged = false, handle = HANDLE, conditionDataList = conds }
    for k, v in pairs(extra or {}) do r[k] = v end
    return r
end

local function build(g)
    return router.build({ PLUGIN = enc(g.PLUGIN or { DIVIDE_ON }), SELECTOR = enc(g.SELECTOR or {}),
        RULE = enc(g.RULE or {}), DISCOVER_UPSTREAM = enc(g.DISCOVER_UPSTREAM or {}) }, { now_ms = 0 })
end
local function req(path, t)
    t = t or {}
    t.path = path; t.method = t.method or "GET"; t.headers = t.headers or {}
    t.remote_addr = t.remote_addr or "127.0.0.1"
    return request.new(t)
end
local function route(tbl, path, t) return router.result(router.route(tbl, req(path, t))) end
-- "sel/rule" of a proxied result, or the error code
local function who(res)
    if res.action == "proxy" then return res.selector.id .. "/" .. res.rule.id end
    return res.code or res.action
end

-- §4.1 plugin
T.case("divide plugin absent -> skip (no -107)", function()
    local tbl = build { PLUGIN = { { id = "1", name = "waf", enabled = true } }, SELECTOR = {} }
    T.eq(route(tbl, "/x").action, "skip")
end)
T.case("divide plugin disabled -> skip", function()
    local tbl = build { PLUGIN = { { id = "5", name = "divide", enabled = false } },
        SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, { URI("/**") }) } }
    T.eq(route(tbl, "/x").action, "skip")
end)
-- §4.2
T.case("no selectors -> -107 with ShenYu's message", function()
    local res = route(build {}, "/x")
    T.eq(res.code, -107)
    T.eq(res.message, "divide:Can not find selector, please check your configuration!")
    T.eq(res.http_status, 200); T.eq(res.plain_status, 404)
end)
-- §4.3
T.case("custom selector with non-matching conditions -> -107", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/a/**") }) }, RULE = { rule("r1", "s1", 1, { URI("/**") }) } }
    T.eq(who(route(tbl, "/b")), -107)
    T.eq(who(route(tbl, "/a/x")), "s1/r1")
end)
T.case("disabled selector is not a candidate", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }, { enabled = false }) }, RULE = { rule("r1", "s1", 1, {}) } }
    T.eq(who(route(tbl, "/a")), -107)
end)
T.case("custom selector with an empty condition list never matches", function()
    local tbl = build { SELECTOR = { sel("s1", 1, {}) }, RULE = { rule("r1", "s1", 1, {}) } }
    T.eq(who(route(tbl, "/a")), -107)
end)
T.case("full-flow selector matches whatever its conditions say", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/nope") }, { type = 0 }) }, RULE = { rule("r1", "s1", 1, { URI("/**") }) } }
    T.eq(who(route(tbl, "/a")), "s1/r1")
end)
T.case("all selectors are evaluated: a later selector's bad operator is a 400", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }), sel("s2", 2, { cond("uri", "like", "/x") }) },
        RULE = { rule("r1", "s1", 1, {}) } }
    local res = route(tbl, "/a")
    T.eq(res.code, 400); T.eq(res.http_status, 400); T.eq(res.message, "like name is error")
end)
-- §4.4 ranking
T.case("a 2-condition AND selector (sort 10) beats a 1-condition one (sort 1)", function()
    local tbl = build { SELECTOR = { sel("one", 1, { URI("/a/**") }),
        sel("two", 10, { URI("/a/**"), cond("req_method", "=", "GET") }) },
        RULE = { rule("r1", "one", 1, {}), rule("r2", "two", 1, {}) } }
    T.eq(who(route(tbl, "/a/b")), "two/r2")
end)
T.case("OR selectors score 0: an AND selector with 1 condition wins", function()
    local tbl = build { SELECTOR = { sel("or", 1, { URI("/a/**"), URI("/b/**") }, { matchMode = 1 }),
        sel("and", 5, { URI("/a/**") }) }, RULE = { rule("r1", "or", 1, {}), rule("r2", "and", 1, {}) } }
    T.eq(who(route(tbl, "/a/b")), "and/r2")
end)
T.case("equal score -> lowest sort", function()
    local tbl = build { SELECTOR = { sel("s9", 9, { URI("/**") }), sel("s3", 3, { URI("/a/**") }) },
        RULE = { rule("r1", "s9", 1, {}), rule("r2", "s3", 1, {}) } }
    T.eq(who(route(tbl, "/a/b")), "s3/r2")
end)
T.case("equal score and sort -> first in (key) order", function()
    local tbl = build { SELECTOR = { sel("sA", 3, { URI("/**") }), sel("sB", 3, { URI("/a/**") }) },
        RULE = { rule("r1", "sA", 1, {}), rule("r2", "sB", 1, {}) } }
    T.eq(who(route(tbl, "/a/b")), "sA/r1")
end)
T.case("a full-flow AND selector counts its (ignored) conditions in the ranking", function()
    local tbl = build { SELECTOR = { sel("ff", 9, { URI("/x"), URI("/y") }, { type = 0 }), sel("c", 1, { URI("/**") }) },
        RULE = { rule("r1", "ff", 1, {}), rule("r2", "c", 1, {}) } }
    T.eq(who(route(tbl, "/a")), "ff/r1")
end)
-- §4.5 continued=false
T.case("continued=false -> default rule with DivideRuleHandle defaults", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }, { continued = false }) },
        RULE = { rule("r1", "s1", 1, { URI("/nomatch") }) } }
    local res = route(tbl, "/a")
    T.eq(who(res), "s1/default_rule")
    T.eq(res.handle.load_balance, "random"); T.eq(res.handle.retry, 3); T.eq(res.handle.timeout, 3000)
    T.eq(res.handle.retry_strategy, "current"); T.eq(res.handle.header_max_size, 0)
end)
T.case("continued=null counts as true", function()
    local s = sel("s1", 1, { URI("/**") }); s.continued = nil
    local tbl = build { SELECTOR = { s }, RULE = { rule("r1", "s1", 1, { URI("/nomatch") }) } }
    T.eq(who(route(tbl, "/a")), -102)
end)
-- §4.6 / 4.7
T.case("selector without rules -> -102 (also full flow)", function()
    local res = route(build { SELECTOR = { sel("s1", 1, { URI("/**") }) } }, "/a")
    T.eq(res.code, -102); T.eq(res.message, "divide:Rule not found!")
    T.eq(who(route(build { SELECTOR = { sel("s1", 1, {}, { type = 0 }) } }, "/a")), -102)
end)
T.case("full flow -> the last rule by sort, its conditions and enabled unchecked", function()
    local tbl = build { SELECTOR = { sel("s1", 1, {}, { type = 0 }) },
        RULE = { rule("hi", "s1", 9, { URI("/never") }, { enabled = false }), rule("lo", "s1", 1, { URI("/**") }) } }
    T.eq(who(route(tbl, "/a")), "s1/hi")
end)
-- §4.8 rules
T.case("rule ranking: AND condition count, then sort", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, { URI("/a/**") }), rule("r2", "s1", 5, { URI("/a/**"), cond("req_method", "=", "GET") }),
            rule("r3", "s1", 0, { URI("/a/**") }, { matchMode = 1 }) } }
    T.eq(who(route(tbl, "/a/b")), "s1/r2")
    T.eq(who(route(tbl, "/a/b", { method = "POST" })), "s1/r1")
end)
T.case("disabled rules are skipped; no matching rule -> -102", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, { URI("/a/**") }, { enabled = false }) } }
    T.eq(who(route(tbl, "/a/b")), -102)
end)
-- §4.9
T.case("no backtracking to a lower-ranked selector", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/a/**") }), sel("s2", 2, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, { URI("/a/only") }), rule("r2", "s2", 1, { URI("/**") }) } }
    T.eq(who(route(tbl, "/a/other")), -102)
    T.eq(who(route(tbl, "/b")), "s2/r2")
end)
-- required fields
T.case("items missing required fields are skipped with a warning", function()
    local s = sel("s1", 1, { URI("/**") }); s.logged = nil
    local r = rule("r2", "s2", 1, {}); r.handle = nil
    local tbl = build { SELECTOR = { s, sel("s2", 2, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}), r, "not json" } }
    T.eq(who(route(tbl, "/a")), -102)
    T.eq(#tbl.warnings, 3)
    T.truthy(tbl.warnings[1]:find("s1", 1, true), "names the selector")
end)
T.case("an unparseable rule handle skips the rule", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, {}, { handle = "{\"retry\": 2.5}" }), rule("r2", "s1", 2, {}, { handle = "{\"timeout\":\"5000\"}" }) } }
    local res = route(tbl, "/a")
    T.eq(who(res), "s1/r2"); T.eq(res.handle.timeout, 5000); T.eq(res.handle.load_balance, "random")
end)
-- §5 responses
T.case("no healthy upstream -> -119", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }, { handle = cjson.encode({ { upstreamUrl = "h:1", status = false } }) }) },
        RULE = { rule("r1", "s1", 1, {}) } }
    local res = route(tbl, "/a")
    T.eq(res.code, -119); T.eq(res.plain_status, 503)
    T.eq(res.message, "Can not find healthy upstream url, please check your configuration!")
end)
T.case("headerMaxSize counts header value bytes -> 431", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, {}, { handle = cjson.encode({ headerMaxSize = 10 }) }) } }
    T.eq(who(route(tbl, "/a", { headers = { { "A-Very-Long-Header-Name", "12345" }, { "B", "12345" } } })), "s1/r1")
    local res = route(tbl, "/a", { headers = { { "A", "12345" }, { "B", "123456" } } })
    T.eq(res.code, 431); T.eq(res.http_status, 200); T.eq(res.message, "Request Header Fields Too Large")
end)
T.case("requestMaxSize compares Content-Length -> 413", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, {}, { handle = cjson.encode({ requestMaxSize = 100 }) }) } }
    T.eq(who(route(tbl, "/a", { content_length = 100 })), "s1/r1")
    T.eq(who(route(tbl, "/a")), "s1/r1")
    T.eq(route(tbl, "/a", { content_length = 101 }).code, 413)
end)
T.case("unknown loadBalance -> 400, unless specify-domain names an upstream", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, {}, { handle = cjson.encode({ loadBalance = "weighted" }) }) } }
    local res = route(tbl, "/a")
    T.eq(res.code, 400); T.eq(res.message, "weighted name is error")
    T.eq(who(route(tbl, "/a", { headers = { { "specify-domain", "127.0.0.1:8081" } } })), "s1/r1")
end)
-- A JSON null differs from an absent key (Gson as ShenYu's gateway reads it): null String
-- fields are "", absent ones keep their defaults.
T.case("loadBalance: null is \"\" (500), absent is random", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, { URI("/n/**") }, { handle = '{"loadBalance":null}' }),
                 rule("r2", "s1", 1, { URI("/a/**") }, { handle = '{"timeout":100}' }) } }
    T.eq(route(tbl, "/n/x").code, 500)
    local res = route(tbl, "/a/x")
    T.eq(who(res), "s1/r2"); T.eq(res.handle.load_balance, "random")
end)
T.case("empty loadBalance -> 500", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) },
        RULE = { rule("r1", "s1", 1, {}, { handle = cjson.encode({ loadBalance = "" }) }) } }
    T.eq(route(tbl, "/a").code, 500)
end)
-- §6 upstream lists
T.case("DISCOVER_UPSTREAM wins over the selector handle; status 0 = up", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}) },
        DISCOVER_UPSTREAM = { { selectorId = "s1", pluginName = "divide", upstreamDataList = {
            { url = "10.0.0.1:80", protocol = "http://", status = 0, weight = 10, props = "{\"warmup\":0}" },
            { url = "10.0.0.2:80", protocol = "http://", status = 1, weight = 10 } } } } }
    local ups = route(tbl, "/a").upstreams
    T.eq(#ups, 1); T.eq(ups[1].url, "10.0.0.1:80"); T.eq(ups[1].host, "10.0.0.1"); T.eq(ups[1].port, 80)
end)
T.case("gray upstreams, when any, are the only ones offered", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}) },
        DISCOVER_UPSTREAM = { { selectorId = "s1", pluginName = "divide", upstreamDataList = {
            { url = "10.0.0.1:80", status = 0, weight = 10 },
            { url = "10.0.0.2:80", status = 0, weight = 10, props = "{\"gray\":true}" } } } } }
    local ups = route(tbl, "/a").upstreams
    T.eq(#ups, 1); T.eq(ups[1].url, "10.0.0.2:80"); T.eq(ups[1].protocol, "http://")
end)
T.case("DISCOVER_UPSTREAM of another plugin is ignored", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}) },
        DISCOVER_UPSTREAM = { { selectorId = "s1", pluginName = "tcp", upstreamDataList = {} } } }
    T.eq(route(tbl, "/a").upstreams[1].url, "127.0.0.1:8081")
end)
T.case("an empty DISCOVER_UPSTREAM list -> -119", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}) },
        DISCOVER_UPSTREAM = { { selectorId = "s1", pluginName = "divide", upstreamDataList = {} } } }
    T.eq(route(tbl, "/a").code, -119)
end)
T.case("a proxied request gets the table's own rule and selector (nothing made per request)", function()
    local tbl = build { SELECTOR = { sel("s1", 1, { URI("/**") }) }, RULE = { rule("r1", "s1", 1, {}) } }
    local r1, s1 = router.route(tbl, req("/a"))
    local r2, s2 = router.route(tbl, req("/b"))
    T.eq(r1, r2); T.eq(s1, s2); T.eq(r1, tbl.selectors[1].rules[1]); T.eq(s1, tbl.selectors[1])
    T.eq(r1.id, "r1"); T.eq(s1.id, "s1"); T.eq(s1.upstreams[1].url, "127.0.0.1:8081")
end)
T.done()
