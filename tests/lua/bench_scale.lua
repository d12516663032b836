-- bench_scale: the route table at scale under plain luajit (indicative figures, not a test).
--
--   LUA_PATH="contrib/nginx/lua/?.lua;;" luajit tests/lua/bench_scale.lua [SIZES] [-p]
--     SIZES: e.g. 50x4,1000x10,10000x10 (selectors x rules, the default)
--     -p: profile the first build of the largest size (LuaJIT's jit.p, by function)
--
-- Tables shaped as bench/nginx's "gateway at scale" (issue 19): selectors half `match /sN/**`
-- and half `startsWith /sN/`, N rules each (`match /sN/vK/**` AND `req_method = GET`), one
-- DISCOVER_UPSTREAM item with 2 upstreams per selector. For each size it prints:
--   build     compile every item and build the table (what a worker's first load costs,
--             without the LMDB read), in ms and us per item
--   rule      apply one changed rule (compile + set + finish), median of 200, in us
--   upstream  apply one changed DISCOVER_UPSTREAM item, median of 200, in us
--   route     route one request (request object + route), best of 3 x 20000, in us
--   memory    Lua heap of the table after a full collection, fresh and after 1,000 changes
--             (rules and upstreams changed back and forth), in MB and bytes per item
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"

local sizes, profile = {}, false
for _, a in ipairs(arg) do
    if a == "-p" then profile = true
    else
        for s, r in a:gmatch("(%d+)x(%d+)") do sizes[#sizes + 1] = { tonumber(s), tonumber(r) } end
    end
end
if #sizes == 0 then sizes = { { 50, 4 }, { 1000, 10 }, { 10000, 10 } } end

local function cond(pt, op, pv, pn) return { paramType = pt, operator = op, paramValue = pv, paramName = pn or "/" } end
local H = cjson.encode({ loadBalance = "roundRobin", retryStrategy = "current", retry = 0, timeout = 3000 })

local function sel_raw(i)
    local sid = string.format("sel-%05d", i)
    local c = (i % 2 == 0) and cond("uri", "match", "/s" .. i .. "/**") or cond("uri", "startsWith", "/s" .. i .. "/")
    return sid, cjson.encode({ id = sid, pluginName = "divide", name = sid, type = 1, matchMode = 0,
        sort = i + 1, enabled = true, logged = false, continued = true, handle = "", conditionList = { c } })
end
local function rule_raw(i, k, sort)
    local sid = string.format("sel-%05d", i)
    local rid = sid .. "-r" .. k
    return rid, cjson.encode({ id = rid, selectorId = sid, pluginName = "divide", name = rid, matchMode = 0,
        sort = sort or (k + 1), enabled = true, loged = false, handle = H,
        conditionDataList = { cond("uri", "match", "/s" .. i .. "/v" .. k .. "/**"), cond("req_method", "=", "GET") } })
end
local function disc_raw(i, port)
    local sid = string.format("sel-%05d", i)
    return sid, cjson.encode({ selectorId = sid, pluginName = "divide", upstreamDataList = {
        { url = "127.0.0.1:" .. (port or 8081), status = 0, weight = 50 }, { url = "127.0.0.1:8082", status = 0, weight = 50 } } })
end

local function dataset(ns, nr)
    local out = { { "PLUGIN", "divide", cjson.encode({ id = "5", name = "divide", enabled = true }) } }
    for i = 0, ns - 1 do
        local k, v = sel_raw(i); out[#out + 1] = { "SELECTOR", k, v }
        k, v = disc_raw(i); out[#out + 1] = { "DISCOVER_UPSTREAM", k, v }
        for r = 0, nr - 1 do k, v = rule_raw(i, r); out[#out + 1] = { "RULE", k, v } end
    end
    return out
end

local function build(data)
    local t = routes.new()
    for i = 1, #data do
        local d = data[i]
        t:set(d[1], d[2], items.compile(d[1], d[2], d[3], 0))
    end
    t:finish()
    return t
end

local function median(xs)
    table.sort(xs)
    return xs[math.floor(#xs / 2) + 1]
end

local function apply_one(t, group, key, raw)
    local t0 = os.clock()
    t:set(group, key, items.compile(group, key, raw, 0))
    t:finish()
    return (os.clock() - t0) * 1e6
end

local function heap_mb()
    collectgarbage("collect"); collectgarbage("collect")
    return collectgarbage("count") / 1024
end

print(string.format("%-9s %9s %8s %9s %9s %8s %9s %9s %8s", "size", "build ms", "us/item",
    "rule us", "ups us", "route us", "fresh MB", "1000ch MB", "B/item"))
for si, sz in ipairs(sizes) do
    local ns, nr = sz[1], sz[2]
    local data = dataset(ns, nr)
    local m0 = heap_mb()
    if profile and si == #sizes then require("jit.p").start("F", "/dev/stderr") end
    local t0 = os.clock()
    local t = build(data)
    local bt = os.clock() - t0
    if profile and si == #sizes then require("jit.p").stop() end
    data = nil
    local fresh = heap_mb() - m0
    local nitems = ns * (nr + 2) + 1
    -- apply: one rule (its sort flips, so the selector's rules re-sort), one upstream list
    local rule_us, ups_us = {}, {}
    local mid = math.floor(ns / 2)
    for n = 1, 200 do
        local k, v = rule_raw(mid, 1, (n % 2 == 0) and 2 or 99)
        rule_us[n] = apply_one(t, "RULE", k, v)
        k, v = disc_raw(mid, 9000 + n % 2)
        ups_us[n] = apply_one(t, "DISCOVER_UPSTREAM", k, v)
    end
    -- route: a request for a rule in the middle of the table
    local raw = { path = string.format("/s%d/v1/orders", mid), method = "GET", headers = {}, remote_addr = "127.0.0.1" }
    local res = router.route(t, request.new(raw))
    assert(res.action == "proxy" and res.rule.id == string.format("sel-%05d-r1", mid), "routes to the rule")
    local best = math.huge
    for _ = 1, 3 do
        local r0 = os.clock()
        for _ = 1, 20000 do router.route(t, request.new({ path = raw.path, method = "GET", headers = raw.headers })) end
        best = math.min(best, (os.clock() - r0) / 20000 * 1e6)
    end
    -- 1,000 changes spread over the table: rules and upstream lists, back and forth
    for n = 1, 500 do
        local i = (n * 7919) % ns
        local k, v = rule_raw(i, n % nr, (n % 3) + 1)
        t:set("RULE", k, items.compile("RULE", k, v, 0)); t:finish()
        k, v = disc_raw(i, 9000 + n % 5)
        t:set("DISCOVER_UPSTREAM", k, items.compile("DISCOVER_UPSTREAM", k, v, 0)); t:finish()
    end
    local changed = heap_mb() - m0
    print(string.format("%-9s %9.0f %8.1f %9.0f %9.0f %8.2f %9.1f %9.1f %8.0f", ns .. "x" .. nr,
        bt * 1000, bt / nitems * 1e6, median(rule_us), median(ups_us), best, fresh, changed,
        fresh * 1048576 / nitems))
    t = nil
end
