-- The route cache (gwsync.routecache) gives the answers routing without it gives: random
-- tables (path-only and mixed) changed item by item, each request routed with the cache on
-- (a small cap, so that its generations turn over, and the default) and off; the count of
-- items reading more than the path against a recount; a header condition bypasses the cache;
-- the cache never holds more entries than its cap; a change is seen by the very next request;
-- a kept answer still runs the rule's header-size check; a failing load balancer's answer
-- (it reads `specify-domain`) is never kept.
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"
local routecache = require "gwsync.routecache"

-- an answer as comparable text
local function fp(res, sel)
    if not sel then
        return string.format("%s %s %s", res.action, tostring(res.code), tostring(res.message))
    end
    local ups = {}
    for i, u in ipairs(sel.upstreams) do ups[i] = u.url end
    return string.format("proxy %s %s [%s]", sel.id, res.id, table.concat(ups, ","))
end

local function cond(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv, paramName = pname or "/" }
end
local PATH_CONDS = {
    cond("uri", "match", "/a/**"), cond("uri", "match", "/b/**"), cond("uri", "match", "/a/x/**"),
    cond("uri", "match", "/**"), cond("uri", "match", "/*/x"), cond("uri", "match", "/a/{id}"),
    cond("uri", "startsWith", "/a/"), cond("uri", "startsWith", "/b"), cond("uri", "=", "/a/x"),
    cond("uri", "pathPattern", "/a/**"), cond("uri", "pathPattern", "/b/{v}"),
    cond("uri", "regex", "/a/[0-9]+"), cond("uri", "contains", "x"), cond("uri", "endsWith", "/"),
    cond("uri", "exclude", "/b/**"), cond("uri", "like", "/x"), cond("uri", "match", "/{id:[}/**"),
}
local OTHER_CONDS = {
    cond("header", "=", "1", "X-A"), cond("query", "=", "v", "k"), cond("req_method", "=", "POST"),
    cond("ip", "=", "10.0.0.1"), cond("cookie", "=", "c", "k"), cond("domain", "=", "h.example"),
    cond("uri", "TimeBefore", "2099-01-01 00:00:00", ""), cond("post", "=", "/a/x", "path"),
}

local function rng(seed)
    local state = seed
    return function(a, b)
        state = (state * 1103515245 + 12345) % 2147483648
        if b == nil then a, b = 1, a end
        return a + math.floor(state / 2147483648 * (b - a + 1))
    end
end

local function conds(rnd, n, mixed)
    local out = {}
    for i = 1, n do
        if mixed and rnd(4) == 1 then
            out[i] = OTHER_CONDS[rnd(#OTHER_CONDS)]
        else
            out[i] = PATH_CONDS[rnd(#PATH_CONDS)]
        end
    end
    return out
end

local LB = { "random", "roundRobin", "hash", "bogus" }

local MAKE = {
    SELECTOR = function(rnd, key, mixed)
        return { id = key, pluginName = "divide", name = key, type = rnd(8) == 1 and 0 or 1,
            matchMode = rnd(4) == 1 and 1 or 0, sort = rnd(4), enabled = rnd(8) > 1, logged = false,
            continued = rnd(8) > 1, conditionList = conds(rnd, rnd(0, 3), mixed) }
    end,
    RULE = function(rnd, key, mixed)
        return { id = key, selectorId = "s" .. rnd(8), pluginName = "divide", name = key,
            matchMode = rnd(4) == 1 and 1 or 0, sort = rnd(3), enabled = rnd(6) > 1, loged = false,
            handle = cjson.encode({ loadBalance = LB[rnd(#LB)], retry = 1, timeout = 1000,
                headerMaxSize = rnd(6) == 1 and 40 or 0 }),
            conditionDataList = conds(rnd, rnd(0, 3), mixed) }
    end,
    DISCOVER_UPSTREAM = function(rnd, key)
        local ups = {}
        for i = 1, rnd(0, 2) do
            ups[i] = { url = "10.1.0." .. rnd(4) .. ":80", status = 0, weight = 10,
                       dateCreated = "2024-05-28 10:00:00" }
        end
        return { selectorId = key:sub(3), pluginName = "divide", upstreamDataList = ups }
    end,
    PLUGIN = function(rnd, key)
        return { id = key, name = "divide", enabled = rnd(6) > 1 }
    end,
}
local KEYS = { PLUGIN = { "divide" }, SELECTOR = {}, RULE = {}, DISCOVER_UPSTREAM = {} }
for i = 1, 8 do
    KEYS.SELECTOR[i] = "s" .. i
    KEYS.DISCOVER_UPSTREAM[i] = "d:s" .. i
end
for i = 1, 24 do KEYS.RULE[i] = string.format("r%02d", i) end

local PATHS = { "/a/x", "/a/x/", "/a/x/y", "/a/1", "/a/12", "/a", "/b", "/b/q", "//a/x", "/c%20d/e",
    "/a/%zz", "/", "", "a/x", "/z", "/a;p=1/x", "/" .. string.rep("a", 600) }

local function rand_request(rnd)
    local headers = {}
    if rnd(2) == 1 then headers[#headers + 1] = { "X-A", "1" } end
    if rnd(3) == 1 then headers[#headers + 1] = { "X-Big", string.rep("h", 60) } end
    if rnd(4) == 1 then headers[#headers + 1] = { "Cookie", "k=c" } end
    if rnd(5) == 1 then headers[#headers + 1] = { "specify-domain", "10.1.0." .. rnd(4) .. ":80" } end
    return { path = PATHS[rnd(#PATHS)], method = rnd(2) == 1 and "GET" or "POST", headers = headers,
        query = rnd(3) == 1 and "k=v" or nil, remote_addr = rnd(4) == 1 and "10.0.0.1" or "127.0.0.1",
        now = 1748779200 }
end

-- the count routes keeps (rc_other), worked out from scratch: usable selectors reading more
-- than the path, and such rules of every selector id a usable selector has
local function recount(tbl)
    local n, claimed = 0, {}
    tbl:each_item("SELECTOR", function(_, it)
        if it.valid then
            claimed[it.id] = true
            if it.reads_other then n = n + 1 end
        end
    end)
    tbl:each_item("RULE", function(_, it)
        if it.valid and it.reads_other and claimed[it.selector_id] then n = n + 1 end
    end)
    return n
end

local function route_text(tbl, raw, cap)
    return fp(router.route(tbl, request.new(raw), cap))
end

local function run(seed, mixed)
    local rnd = rng(seed)
    local tbl = routes.new()
    for _, group in ipairs(routes.GROUPS) do
        for _, key in ipairs(KEYS[group]) do
            if group == "PLUGIN" or rnd(3) > 1 then
                tbl:set(group, key, items.compile(group, key, cjson.encode(MAKE[group](rnd, key, mixed)), 0))
            end
        end
    end
    tbl:finish()
    local routed, bypassed = 0, 0
    for step = 1, 60 do
        T.eq(tbl.rc_other, recount(tbl), "seed " .. seed .. " step " .. step .. ": the count")
        for _ = 1, 30 do
            local raw = rand_request(rnd)
            local before = routecache.count.bypass
            local off = route_text(tbl, raw, 0)
            local small = route_text(tbl, raw, 4)
            T.eq(routecache.size(tbl) <= 4, true, "entries within the cap")
            local dflt = route_text(tbl, raw, nil)
            if off ~= small or off ~= dflt then
                error(string.format("seed %d step %d %s %s: off %s, cap 4 %s, default %s", seed, step,
                    raw.method, raw.path, off, small, dflt), 0)
            end
            routed = routed + 1
            if routecache.count.bypass > before then bypassed = bypassed + 1 end
        end
        -- a random change, the next request sees it (compared right above on the next step)
        for _ = 1, rnd(3) do
            local group = routes.GROUPS[rnd(4)]
            if rnd(10) > 6 then group = "RULE" end
            local key = KEYS[group][rnd(#KEYS[group])]
            if rnd(5) == 1 and group ~= "PLUGIN" then
                tbl:set(group, key, nil)
            else
                tbl:set(group, key, items.compile(group, key, cjson.encode(MAKE[group](rnd, key, mixed)), 0))
            end
        end
        tbl:finish()
    end
    return routed, bypassed
end

T.case("path-only random tables: the same answers with the cache on and off, after every change", function()
    for seed = 1, 12 do
        local routed, bypassed = run(seed, false)
        T.eq(bypassed, 0, "seed " .. seed .. ": a path-only table never bypasses")
        T.truthy(routed > 0)
    end
end)

T.case("mixed random tables: the same answers with the cache on and off, after every change", function()
    local any = 0
    for seed = 100, 111 do
        local _, bypassed = run(seed, true)
        any = any + bypassed
    end
    T.truthy(any > 0, "some mixed table bypassed the cache")
end)

-- a small table by hand: selector /a/** with rules; g: group -> key -> object
local function table_of(g)
    local tbl = routes.new()
    for _, group in ipairs(routes.GROUPS) do
        for key, obj in pairs(g[group] or {}) do
            tbl:set(group, key, items.compile(group, key, cjson.encode(obj), 0))
        end
    end
    tbl:finish()
    return tbl
end

local function base(extra_rules, handle)
    local g = {
        PLUGIN = { divide = { id = "1", name = "divide", enabled = true } },
        SELECTOR = { s1 = { id = "s1", pluginName = "divide", type = 1, matchMode = 0, sort = 1,
            enabled = true, logged = false, continued = true,
            conditionList = { cond("uri", "match", "/a/**") } } },
        RULE = { r1 = { id = "r1", selectorId = "s1", matchMode = 0, sort = 5, enabled = true,
            loged = false, handle = handle or "{}", conditionDataList = { cond("uri", "match", "/a/**") } } },
        DISCOVER_UPSTREAM = { ["d:s1"] = { selectorId = "s1", pluginName = "divide",
            upstreamDataList = { { url = "10.0.0.1:80", status = 0, weight = 10 },
                                 { url = "10.0.0.2:80", status = 0, weight = 10 } } } },
    }
    for k, v in pairs(extra_rules or {}) do g.RULE[k] = v end
    return g
end

local function req(path, headers)
    return request.new({ path = path, method = "GET", headers = headers or {}, remote_addr = "127.0.0.1" })
end

T.case("a header condition bypasses the cache: the answer follows the header", function()
    local tbl = table_of(base())
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(routecache.size(tbl), 1, "kept")
    local hr = items.compile("RULE", "r2", cjson.encode({ id = "r2", selectorId = "s1", matchMode = 0,
        sort = 1, enabled = true, loged = false, handle = "{}",
        conditionDataList = { cond("uri", "match", "/a/**"), cond("header", "=", "1", "X-A") } }), 0)
    tbl:set("RULE", "r2", hr)
    tbl:finish()
    T.eq(tbl.rc_other, 1, "one item reads a header")
    local b = routecache.count.bypass
    T.eq(fp(router.route(tbl, req("/a/x", { { "X-A", "1" } }))), "proxy s1 r2 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(fp(router.route(tbl, req("/a/x", { { "X-A", "1" } }))), "proxy s1 r2 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(routecache.count.bypass - b, 3, "three requests bypassed")
    T.eq(routecache.size(tbl), 0, "nothing kept")
    -- a header rule of a selector id no divide selector has does not count
    tbl:set("RULE", "r2", nil)
    tbl:set("RULE", "r3", items.compile("RULE", "r3", cjson.encode({ id = "r3", selectorId = "other",
        matchMode = 0, sort = 1, enabled = true, loged = false, handle = "{}",
        conditionDataList = { cond("header", "=", "1", "X-A") } }), 0))
    tbl:finish()
    T.eq(tbl.rc_other, 0, "an unclaimed rule is not counted")
    -- until a selector claims that id
    tbl:set("SELECTOR", "s9", items.compile("SELECTOR", "s9", cjson.encode({ id = "other",
        pluginName = "divide", type = 1, matchMode = 0, sort = 9, enabled = false, logged = false,
        conditionList = { cond("uri", "match", "/q/**") } }), 0))
    tbl:finish()
    T.eq(tbl.rc_other, 1, "claimed now")
end)

T.case("the cache never holds more entries than its cap", function()
    local tbl = table_of(base())
    for cap = 1, 9 do
        for i = 1, 300 do
            router.route(tbl, req("/a/" .. i), cap)
            local n = routecache.size(tbl)
            if n > cap then error(string.format("cap %d: %d entries after %d paths", cap, n, i), 0) end
        end
    end
    local big = 1000
    for i = 1, 5000 do router.route(tbl, req("/a/p" .. i), big) end
    T.truthy(routecache.size(tbl) <= big, "cap 1000")
    T.truthy(routecache.size(tbl) >= big / 2, "the cap is used")
    tbl.rc = nil
    router.route(tbl, req("/a/" .. string.rep("x", routecache.MAX_KEY)), big)
    T.eq(routecache.size(tbl), 0, "a path over MAX_KEY is not kept")
    router.route(tbl, req("/a/x"), 0)
    T.eq(routecache.size(tbl), 0, "cap 0: off")
end)

T.case("a hot path survives the turn of generations", function()
    local tbl = table_of(base())
    local h = routecache.count.hit
    for i = 1, 200 do
        router.route(tbl, req("/a/hot"), 8)
        router.route(tbl, req("/a/cold" .. i), 8)
    end
    T.eq(routecache.count.hit - h, 199, "every /a/hot after the first is a hit")
end)

T.case("a change is seen by the very next request", function()
    local tbl = table_of(base())
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    -- new upstreams
    tbl:set("DISCOVER_UPSTREAM", "d:s1", items.compile("DISCOVER_UPSTREAM", "d:s1", cjson.encode({
        selectorId = "s1", pluginName = "divide", upstreamDataList = { { url = "10.0.0.9:80", status = 0,
        weight = 10 } } }), 0))
    tbl:finish()
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.9:80]")
    -- the rule disabled: no rule
    local g = base()
    g.RULE.r1.enabled = false
    tbl:set("RULE", "r1", items.compile("RULE", "r1", cjson.encode(g.RULE.r1), 0))
    tbl:finish()
    T.eq(fp(router.route(tbl, req("/a/x"))), "error -102 divide:Rule not found!")
    -- the plugin off: skip
    tbl:set("PLUGIN", "divide", items.compile("PLUGIN", "divide", cjson.encode({ id = "1",
        name = "divide", enabled = false }), 0))
    tbl:finish()
    T.eq(fp(router.route(tbl, req("/a/x"))), "skip nil nil")
    -- set() alone (no finish yet) already drops what was kept
    router.route(tbl, req("/a/x"))
    tbl:set("PLUGIN", "divide", items.compile("PLUGIN", "divide", cjson.encode({ id = "1",
        name = "divide", enabled = true }), 0))
    T.eq(tbl.rc, nil, "dropped by set()")
end)

T.case("a kept answer still checks the rule's header size per request", function()
    local tbl = table_of(base(nil, cjson.encode({ headerMaxSize = 20 })))
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(fp(router.route(tbl, req("/a/x", { { "X-Big", string.rep("h", 30) } }))),
        "error 431 Request Header Fields Too Large")
    T.eq(fp(router.route(tbl, req("/a/x"))), "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
end)

T.case("a failing load balancer's answer is not kept: specify-domain decides", function()
    local tbl = table_of(base(nil, cjson.encode({ loadBalance = "bogus" })))
    local forced = { { "specify-domain", "10.0.0.2:80" } }
    local a = fp(router.route(tbl, req("/a/x", forced)))
    T.eq(a, "proxy s1 r1 [10.0.0.1:80,10.0.0.2:80]")
    T.eq(fp(router.route(tbl, req("/a/x"))), "error 400 bogus name is error")
    T.eq(fp(router.route(tbl, req("/a/x", forced))), a)
    T.eq(routecache.size(tbl), 0, "nothing kept")
end)

T.done()
