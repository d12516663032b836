-- router.route's fast path (gwsync.fastpath: non-raising tests, the selector index) against
-- the plain evaluation (router.route_plain), on many random requests: a differential test.
-- Tables: the emulator's datasets and the e2e routing fixture (written by test_lua_router.py,
-- paths in GWSYNC_LUA_DATASETS and GWSYNC_LUA_FIXTURES), and random tables drawn from a pool of conditions that
-- includes every way matching can fail (bad operators and patterns, null fields, undecodable
-- paths, X-Forwarded-For entries that are not addresses, broken load balancers).
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local fastpath = require "gwsync.fastpath"

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

local function groups_of(doc)
    local g = {}
    for name, items in pairs(doc) do
        g[name] = {}
        for i, item in ipairs(items) do g[name][i] = cjson.encode(item) end
    end
    return g
end

-- a result as text: prepared results are compared by identity, errors by their fields
local function show(res)
    if res == nil then return "nil" end
    if res.action == "proxy" then
        return string.format("proxy %s %s (%s)", res.selector.id, res.rule.id, tostring(res.rule))
    end
    return string.format("%s %s %s", res.action, tostring(res.code), tostring(res.message))
end

---------------------------------------------------------------------------------------------
-- random requests
---------------------------------------------------------------------------------------------
local PATHS = { "/", "", "//", "/order", "/order/", "/order/findById/1", "/order/findAll/7",
    "//order/findById/1", "/order//findById/1", "/user/any/3", "/user/any", "/payment/12",
    "/payment/12x", "/svc1/v1/x", "/svc1/v1x", "/svc1", "/svc10/v2/a/b", "/svc10/v2", "/svc10/v",
    "/order/findByIdAll/2", "/svc1//v1/x", "/m", "/m/x/y", "/mx",
    "/a%20b/c", "/a%zz/b", "/order%2Fx/1", "/pp;v=1/y", "/;x/order", "relative/path", "order",
    "/ /x", "/review/1", "/catalog/findById/2", "/notification/any/9", "/inventory/3",
    "/rules/one", "/rank/x", "/nb/x", "/cont/x", "/h/x", "/ex/x", "/q/x", "/ck/x", "/dom/x",
    "/ip/x", "/badop/x", "/re/123", "/re/12a", "/eq/exact", "/pp/a%20b/c", "/pps/x/y",
    "/\226\128\128/x", "/order/\255" }
local METHODS = { "GET", "GET", "POST", "get", "DELETE" }
local HEADER_POOL = {
    { "Host", "order.example.com" }, { "Host", "order.internal:8080" }, { "Host", "api.example.com" },
    { "Host", "bad_host" }, { "X-Tenant", "tenant-1" }, { "x-tenant", "tenant-27" },
    { "X-Tenant", "  " }, { "Cookie", "session=sess-1" }, { "Cookie", "session=abc; a=b" },
    { "X-Forwarded-For", "10.0.1.1, 1.1.1.1" }, { "X-Forwarded-For", "not-an-ip, 1.1.1.1" },
    { "X-Forwarded-For", "10.1.2.3" }, { "specify-domain", "127.0.0.1:8082" },
    { "specify-domain", "9.9.9.9:1" }, { "X-Tier", "gold" }, { "X-Block", "yes" },
    { "X-V", "2" }, { "X-Or", "1" }, { "X-R", "2" }, { "X-Need", "1" }, { "X-Nb", "1" },
    { "X-Bench", "yes" }, { "X-When", "2025-01-01 23:59:59" }, { "X-When", "garbage" },
}
local QUERIES = { nil, "version=v1", "version=v14&lang=en%20us", "lang=en+us", "k=v", "debug=",
    "debug=1", "a=%zz" }
local ADDRS = { "127.0.0.1", "10.0.1.1", "10.0.3.1", "::1", "10.1.2.3" }

local function random_raw(rnd)
    local headers = {}
    for _ = 1, rnd(0, 4) do headers[#headers + 1] = HEADER_POOL[rnd(1, #HEADER_POOL)] end
    return { path = PATHS[rnd(1, #PATHS)], method = METHODS[rnd(1, #METHODS)], headers = headers,
             query = QUERIES[rnd(1, #QUERIES)], remote_addr = ADDRS[rnd(1, #ADDRS)],
             now = 1748779200 }
end

-- route one raw request both ways; returns fast result (nil: gave up), plain, route()'s
local function both(tbl, raw)
    local fast = router.result(router.route_fast(tbl, request.new(raw)))
    local plain = router.result(router.route_plain(tbl, request.new(raw)))
    local routed = router.result(router.route(tbl, request.new(raw)))
    return fast, plain, routed
end

-- proxy answers are the same when they are the table's same rule and selector
local function same(a, b)
    if a == b then return true end
    if a == nil or b == nil then return false end
    if a.action == "proxy" or b.action == "proxy" then
        return a.action == b.action and a.rule == b.rule and a.selector == b.selector
            and a.upstreams == b.upstreams
    end
    return a.action == b.action and a.code == b.code and a.message == b.message
end

-- check n random requests; strict: the fast path gives up only where the plain one raises
local function differential(tbl, n, seed, strict)
    math.randomseed(seed)
    local rnd = math.random
    local gave_up, errors_seen, proxied = 0, 0, 0
    for i = 1, n do
        local raw = random_raw(rnd)
        local fast, plain, routed = both(tbl, raw)
        if not same(routed, plain) then
            error(string.format("request %d %s: route() %s, plain %s", i, cjson.encode(raw),
                show(routed), show(plain)), 0)
        end
        if fast == nil then
            gave_up = gave_up + 1
            if strict and not (plain.action == "error" and (plain.code == 400 or plain.code == 500)) then
                error(string.format("request %d %s: fast path gave up, plain answered %s",
                    i, cjson.encode(raw), show(plain)), 0)
            end
        elseif not same(fast, plain) then
            error(string.format("request %d %s: fast %s, plain %s", i, cjson.encode(raw),
                show(fast), show(plain)), 0)
        end
        if plain.action == "error" then errors_seen = errors_seen + 1 end
        if plain.action == "proxy" then proxied = proxied + 1 end
    end
    return gave_up, errors_seen, proxied
end

---------------------------------------------------------------------------------------------
-- the datasets and the e2e fixture
---------------------------------------------------------------------------------------------
local tables = (os.getenv("GWSYNC_LUA_DATASETS") or "") .. ":" .. (os.getenv("GWSYNC_LUA_FIXTURES") or "")
for path in tables:gmatch("[^:]+") do
    T.case("dataset " .. path:match("[^/]*$") .. ": fast path == plain evaluation on 3000 random requests", function()
        local tbl = router.build(groups_of(cjson.decode(read(path))), { now_ms = 0 })
        local gave_up, errs, proxied = differential(tbl, 3000, 7, true)
        print(string.format("#   gave up %d, errors %d, proxied %d", gave_up, errs, proxied))
        T.truthy(proxied > 0, "some requests are proxied")
    end)
end

---------------------------------------------------------------------------------------------
-- random tables over a pool of conditions
---------------------------------------------------------------------------------------------
local NULL = cjson.null
local function c(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv, paramName = pname or "/" }
end
-- conditions that match or not; and conditions with which ShenYu may throw
local COND_POOL = {
    c("uri", "match", "/order/**"), c("uri", "match", "/svc1/**"), c("uri", "match", "/m/**"),
    c("uri", "match", "/order/findById/**"), c("uri", "match", "/**"), c("uri", "match", "/*/findById/*"),
    c("uri", "match", "order/**"), c("uri", "match", "/ /**"), c("uri", "match", "/svc1/v1/**"),
    c("uri", "match", "/order"), c("uri", "match", "/order/*"), c("uri", "match", "/svc10/v2/**"),
    c("uri", "match", "/*rder/**"), c("uri", "match", "/order/**/1"),
    c("uri", "exclude", "/order/**"), c("uri", "exclude", "/m/**"),
    c("uri", "pathPattern", "/user/any/**"), c("uri", "pathPattern", "/order/**"),
    c("uri", "pathPattern", "/{a}/**"), c("uri", "pathPattern", "/pp/a b/**"),
    c("uri", "regex", "^/order/[0-9]+$"), c("uri", "regex", "/payment/[0-9]+"),
    c("uri", "=", "/order"), c("uri", "startsWith", "/ord"), c("uri", "endsWith", "1"),
    c("uri", "contains", "find"), c("uri", "=", "  "),
    c("header", "=", "tenant-1", "X-Tenant"), c("header", "=", "", "X-Tenant"),
    c("header", "isBlank", "", "X-None"), c("header", "exclude", "yes", "X-Block"),
    c("header", "=", "yes", NULL), c("header", "match", "gold", "X-Tier"),
    c("header", "regex", "tenant-[0-9]", "X-Tenant"),
    c("query", "=", "v1", "version"), c("query", "isBlank", "", "debug"), c("query", "contains", "en", "lang"),
    c("cookie", "startsWith", "sess-", "session"), c("cookie", "=", "abc", "session"),
    c("host", "=", "10.0.1.1"), c("domain", "=", "order.example.com"), c("domain", "endsWith", ".internal"),
    c("req_method", "=", "GET"), c("req_method", "=", "POST"), c("post", "=", "http", "rpcType"),
    c("uri", "", "x"), c("uri", " ", "x"),
}
local BAD_POOL = {
    c("uri", "match", "/{id:[}/**"), c("uri", "pathPattern", "/x/{v:(a)b}"),
    c("uri", "pathPattern", "/bad{"), c("uri", "regex", "([a-"), c("uri", "=", nil),
    c("header", "contains", nil, "X-Tenant"), c("ip", "=", "10.0.1.1"), c("ip", "=", ""),
    c("ip", "", "x"), c("ip", "isBlank", ""), c("post", "=", "x", "startDateTime"),
    c("uri", "like", "x"), c("header", "like", "x", "X-Any"), c("path", "=", "/x"), c(nil, "=", "/x"),
    NULL, c("uri", "TimeBefore", "2099-01-01 00:00:00", NULL),
    c("header", "TimeAfter", "2025-01-02 00:00:00", "X-When"),
}
local LB = { "roundRobin", "roundRobin", "random", "hash", "roundRobin", "random", "bogus", "" }
local UPS = { cjson.encode({ { upstreamUrl = "127.0.0.1:8081", protocol = "http://", weight = 50, status = true },
                            { upstreamUrl = "127.0.0.1:8082", protocol = "http://", weight = 50, status = true } }),
              cjson.encode({ { upstreamUrl = "127.0.0.1:8081", protocol = "http://", weight = 50, status = true } }),
              "[]" }

local function random_conds(rnd, bias_uri)
    local out = {}
    for k = 1, rnd(0, 5) do
        local x
        if k == 1 and bias_uri and rnd(1, 3) > 1 then x = COND_POOL[rnd(1, 14)] -- uri match first
        elseif rnd(1, 12) == 1 then x = BAD_POOL[rnd(1, #BAD_POOL)]
        else x = COND_POOL[rnd(1, #COND_POOL)] end
        out[k] = x
    end
    return out
end

local function random_groups(rnd, nsel)
    local sels, rules = {}, {}
    for i = 1, nsel do
        local sid = "s" .. i
        local typ = rnd(1, 10) == 1 and 0 or 1
        local s = { id = sid, pluginName = "divide", name = sid, type = typ, matchMode = rnd(0, 1),
            sort = rnd(1, 4), enabled = rnd(1, 12) > 1, logged = false, continued = rnd(1, 10) > 1,
            handle = UPS[rnd(1, #UPS)], conditionList = random_conds(rnd, true) }
        if rnd(1, 25) == 1 then s.conditionList = nil end
        sels[#sels + 1] = s
        for k = 1, rnd(0, 4) do
            rules[#rules + 1] = { id = sid .. "-r" .. k, selectorId = sid, pluginName = "divide",
                matchMode = rnd(0, 1), sort = rnd(1, 3), enabled = rnd(1, 8) > 1, loged = false,
                handle = cjson.encode({ loadBalance = LB[rnd(1, #LB)], headerMaxSize = rnd(1, 6) == 1 and 20 or 0 }),
                conditionDataList = random_conds(rnd, false) }
        end
    end
    local function enc(list)
        local out = {}
        for i, x in ipairs(list) do out[i] = cjson.encode(x) end
        return out
    end
    return { PLUGIN = enc({ { id = "5", name = "divide", enabled = true } }),
        SELECTOR = enc(sels), RULE = enc(rules) }
end

local function random_table(rnd, nsel)
    return router.build(random_groups(rnd, nsel), { now_ms = 0 })
end

T.case("random tables: fast path == plain evaluation (300 tables x 300 requests)", function()
    math.randomseed(11)
    local rnd = math.random
    local gave_up, errs, proxied, indexed = 0, 0, 0, 0
    for t = 1, 300 do
        local nsel = ({ 1, 3, 8, 20, 60 })[t % 5 + 1]
        local tbl = random_table(rnd, nsel)
        if tbl.by_key then indexed = indexed + 1 end
        local g, e, p = differential(tbl, 300, 1000 + t, false)
        gave_up, errs, proxied = gave_up + g, errs + e, proxied + p
        math.randomseed(5000 + t) -- random_table's own stream, independent of the requests'
        rnd = math.random
    end
    print(string.format("#   gave up %d, errors %d, proxied %d, indexed tables %d", gave_up, errs, proxied, indexed))
    T.truthy(proxied > 1000 and errs > 1000 and indexed > 100, "the pool exercises proxying, errors and the index")
end)

---------------------------------------------------------------------------------------------
-- rules compiled on first use (gwsync.items.compile_conds) against rules compiled at build
---------------------------------------------------------------------------------------------
local items = require "gwsync.items"

-- a table whose every rule is compiled now, as a build did before rules were compiled lazily
local function eager(tbl)
    tbl:each_item("RULE", function(_, it) if it.valid then items.compile_conds(it) end end)
    return tbl
end

-- an answer across two tables: the same rule and selector by id, errors by their fields
local function same_by_id(a, b)
    if a.action == "proxy" or b.action == "proxy" then
        return a.action == b.action and a.rule.id == b.rule.id and a.selector.id == b.selector.id
    end
    return a.action == b.action and a.code == b.code and a.message == b.message
end

local function show_id(res)
    if res.action == "proxy" then return "proxy " .. res.selector.id .. " " .. res.rule.id end
    return show(res)
end

T.case("random tables: a rule compiled on first use routes as one compiled at build (300 tables x 300 requests, both evaluations)", function()
    local lazy_left, compared = 0, 0
    for t = 1, 300 do
        math.randomseed(9000 + t)
        local groups = random_groups(math.random, ({ 1, 3, 8, 20, 60 })[t % 5 + 1])
        local lazy = router.build(groups, { now_ms = 0 })
        local built = eager(router.build(groups, { now_ms = 0 }))
        lazy:each_item("RULE", function(_, it) if it.valid then T.truthy(it.raw_conds, "compiled lazily") end end)
        math.randomseed(20000 + t)
        for i = 1, 300 do
            local raw = random_raw(math.random)
            for _, how in ipairs({ "route", "route_plain" }) do
                -- plain first on even requests, fast first on odd: either may compile a rule
                local a = router.result(router[how](lazy, request.new(raw)))
                local b = router.result(router[how](built, request.new(raw)))
                if not same_by_id(a, b) then
                    error(string.format("table %d request %d %s %s: lazy %s, built %s", t, i,
                        cjson.encode(raw), how, show_id(a), show_id(b)), 0)
                end
                compared = compared + 1
            end
        end
        lazy:each_item("RULE", function(_, it) if it.raw_conds then lazy_left = lazy_left + 1 end end)
    end
    print(string.format("#   %d answers compared; %d rules never reached, still uncompiled", compared, lazy_left))
    T.truthy(lazy_left > 0, "some rules are never compiled")
end)

T.case("a rule ShenYu would fail on is still left out at build, with its line; a bad condition's line comes at first use", function()
    local function enc(x) return cjson.encode(x) end
    local rules = {}
    for k = 1, 20 do -- 20 rules: this selector has a rule index, whose rules are compiled at build
        rules[k] = enc({ id = "big-r" .. k, selectorId = "big", matchMode = 0, sort = k, enabled = true,
            loged = false, handle = "{}", conditionDataList = { c("uri", "match", "/big/" .. k .. "/**") } })
    end
    rules[#rules + 1] = enc({ id = "r-nologed", selectorId = "s", matchMode = 0, sort = 1, enabled = true,
        handle = "{}", conditionDataList = { c("uri", "match", "/s/**") } })
    rules[#rules + 1] = enc({ id = "r-badre", selectorId = "s", matchMode = 0, sort = 2, enabled = true,
        loged = false, handle = "{}", conditionDataList = { c("uri", "regex", "([a-") } })
    rules[#rules + 1] = enc({ id = "r-ok", selectorId = "s", matchMode = 0, sort = 3, enabled = true,
        loged = false, handle = "{}", conditionDataList = { c("uri", "match", "/s/**") } })
    local sel = function(id) return enc({ id = id, pluginName = "divide", type = 1, matchMode = 0, sort = 1,
        enabled = true, logged = false, continued = true, handle = UPS[1],
        conditionList = { c("uri", "match", "/" .. id .. "/**") } }) end
    local logged = {}
    local log = items.log_warning
    items.log_warning = function(line) logged[#logged + 1] = line end
    local ok, err = pcall(function()
        local groups = { PLUGIN = { enc({ id = "5", name = "divide", enabled = true }) },
            SELECTOR = { sel("big"), sel("s") }, RULE = rules }
        local tbl = router.build(groups, { now_ms = 0 })
        local w = table.concat(tbl.warnings, "\n")
        T.truthy(w:find("RULE r-nologed: no loged", 1, true), "the rule without loged is refused at build: " .. w)
        T.truthy(not w:find("r-badre", 1, true), "no line for a bad condition before its rule is reached")
        T.eq(tbl:get("RULE", string.format("%09d", 21)).valid, nil, "the refused rule")
        T.truthy(tbl:get("RULE", string.format("%09d", 7)).raw_conds == nil, "an indexed selector's rule is compiled")
        T.eq(#logged, 0, "nothing logged at build")
        local res = router.result(router.route(tbl, request.new({ path = "/big/7/x", now = 1748779200 })))
        T.eq(res.action .. " " .. res.rule.id, "proxy big-r7")
        res = router.result(router.route(tbl, request.new({ path = "/s/x", now = 1748779200 })))
        T.eq(res.action, "error", "the bad regex fails the request")
        local built = router.result(router.route(eager(router.build(groups, { now_ms = 0 })),
            request.new({ path = "/s/x", now = 1748779200 })))
        T.truthy(same_by_id(res, built), "as at build: " .. show_id(built))
        logged = { logged[1] }
        T.eq(#logged, 1, "one line at first use: " .. table.concat(logged, "; "))
        T.truthy(logged[1]:find("RULE r-badre: condition fails at request time", 1, true), logged[1])
        router.route(tbl, request.new({ path = "/s/x", now = 1748779200 }))
        T.eq(#logged, 1, "compiled once, logged once")
    end)
    items.log_warning = log
    if not ok then error(err, 0) end
end)

---------------------------------------------------------------------------------------------
-- the pieces the fast path relies on
---------------------------------------------------------------------------------------------
T.case("ant_key is the first Ant token", function()
    local cases = { { "/a/b", "a" }, { "//a/b", "a" }, { "/", "" }, { "", "" }, { "///", "" },
        { "a/b", "a" }, { "/a", "a" }, { "/a%20b/c", "a%20b" } }
    for _, k in ipairs(cases) do T.eq(request.new({ path = k[1] }):ant_key(), k[2], k[1]) end
end)

T.case("pp_key is the first PathContainer segment, nil when the path has a %", function()
    local cases = { { "/a/b", "a" }, { "//a", "" }, { "/", "" }, { "", "" }, { "a/b", "" },
        { "/a;x=1/b", "a" }, { "/;x/b", "" }, { "/a%20b/c", nil } }
    for _, k in ipairs(cases) do T.eq(request.new({ path = k[1] }):pp_key(), k[2], k[1]) end
end)

T.case("a /lit/** uri match is filed in the index and tested without a token list", function()
    local antpath = require "gwsync.antpath"
    local conds = { require("gwsync.conditions").compile(c("uri", "match", "/svc1/**")) }
    local test = fastpath.item_test(0, conds)
    local places = fastpath.places(0, conds)
    T.eq(#places, 1); T.eq(places[1].kind, "ant"); T.eq(#places[1].segs, 1); T.eq(places[1].segs[1], "svc1")
    for _, p in ipairs({ "/svc1", "/svc1/", "/svc1/x/y", "//svc1//x", "/svc10", "svc1/x", "/" }) do
        local r = request.new({ path = p })
        T.eq(test({ conds = conds }, r), antpath.match("/svc1/**", p), p)
        T.eq(r._ant, nil, p .. " was not split")
    end
end)

T.case("an item is filed only when the conditions before its first filed one cannot raise", function()
    local C = require("gwsync.conditions").compile
    local function where(mode, conds)
        local places = fastpath.places(mode, conds)
        if not places then return nil end
        local out = {}
        for i, d in ipairs(places) do out[i] = d.kind .. ":" .. table.concat(d.segs or { d.value }, "/") end
        return table.concat(out, " ")
    end
    T.eq(where(0, { C(c("header", "=", "x", "X-A")), C(c("uri", "match", "/a/**")) }), "ant:a")
    T.eq(where(0, { C(c("ip", "=", "1.2.3.4")), C(c("uri", "match", "/a/**")) }), nil)
    T.eq(where(1, { C(c("uri", "match", "/a/**")), C(c("uri", "match", "/b/**")) }), "ant:a ant:b")
    T.eq(where(1, { C(c("uri", "match", "/a/**")), C(c("header", "=", "x", "X-A")) }), nil)
    T.eq(where(0, { C(c("uri", "match", "/{x:[}/**")) }), nil)
    T.eq(where(1, { C(c("uri", "match", "/a/b/**")) }), "ant:a/b")
    T.eq(where(0, { C(c("uri", "startsWith", "/a/bc")) }), "prefix:/a") -- pieces "", "a", then "bc"
    T.eq(where(0, { C(c("uri", "=", "/a/b")) }), "exact:/a/b")
end)

T.done()
