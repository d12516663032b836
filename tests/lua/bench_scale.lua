-- bench_scale: the route table at scale under plain luajit (indicative figures, not a test).
--
--   LUA_PATH="contrib/nginx/lua/?.lua;tests/lua/?.lua;;" luajit tests/lua/bench_scale.lua [SIZES] [-p[MODE]]
--     SIZES: e.g. 50x4,1000x10,10000x10 (selectors x rules, the default)
--     -p: profile the first build of the largest size with LuaJIT's jit.p (MODE, default
--         "F": by function; "v" by VM state, "l" by line...), to stderr
--
-- Tables shaped as bench/'s "gateway at scale", figure 11 (tests/lua/scale_data.lua).
-- For each size it prints:
--   build     compile every item and build the table (what a worker's first load costs,
--             without the LMDB read), CPU ms and us per item
--   rule      apply one changed rule (compile + set + finish: a selector's mover rule gets a
--             new path), median of 200, in us
--   upstream  apply one changed DISCOVER_UPSTREAM item (another pair of upstreams), median
--             of 200, in us
--   route     route one request (request object + route), best of 3 x 20000, in us
--   memory    Lua heap of the table after a full collection, fresh and after 1,000 changes
--             (rules and upstreams changed back and forth), in MB and bytes per item
--   per kind  bytes of Lua heap per selector, per DISCOVER_UPSTREAM item and per rule in the
--             table: tables built with selectors only, then with their upstreams, then with
--             the rules too, the differences divided by the items added
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"
local scale = require "scale_data"

local sizes, profile = {}, nil
for _, a in ipairs(arg) do
    if a:sub(1, 2) == "-p" then profile = a:sub(3) ~= "" and a:sub(3) or "F"
    else
        for s, r in a:gmatch("(%d+)x(%d+)") do sizes[#sizes + 1] = { tonumber(s), tonumber(r) } end
    end
end
if #sizes == 0 then sizes = { { 50, 4 }, { 1000, 10 }, { 10000, 10 } } end

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

local function heap()
    collectgarbage("collect"); collectgarbage("collect")
    return collectgarbage("count") * 1024
end

-- the routed rule's id, whichever shape route() answers in
local function routed_rule(t, req)
    local res, sel = router.route(t, req)
    if sel then return res.id end
    return res.action == "proxy" and res.rule.id or nil
end

-- bytes per selector, per upstream item, per rule in a table of ns x nr: one table, its
-- selectors set first, then their upstream lists, then the rules
local function per_kind(ns, nr)
    local base = heap()
    local t = routes.new()
    local function add(kinds)
        local data = scale.dataset(ns, nr, kinds)
        for i = 1, #data do
            local d = data[i]
            t:set(d[1], d[2], items.compile(d[1], d[2], d[3], 0))
        end
        t:finish()
        data = nil
        return heap()
    end
    local h1 = add({ PLUGIN = true, SELECTOR = true })
    local h2 = add({ DISCOVER_UPSTREAM = true })
    local h3 = add({ RULE = true })
    t = nil
    return { selector = (h1 - base) / ns, upstream = (h2 - h1) / ns, rule = (h3 - h2) / (ns * nr) }
end

-- each size in a process of its own (a fresh heap, no traces of the size before)
if arg[1] ~= "--one" then
    print(string.format("%-9s %9s %8s %8s %8s %8s %9s %9s %7s %6s %6s %6s", "size", "build ms", "us/item",
        "rule us", "ups us", "route us", "fresh MB", "1000ch MB", "B/item", "B/sel", "B/ups", "B/rule"))
    io.stdout:flush()
    local exe = "luajit"
    for si, sz in ipairs(sizes) do
        local p = (profile and si == #sizes) and (" -p" .. profile) or ""
        assert(os.execute(string.format("%s %s --one %dx%d%s", exe, arg[0], sz[1], sz[2], p)) == 0)
    end
    os.exit(0)
end

for si, sz in ipairs(sizes) do
    local ns, nr = sz[1], sz[2]
    local kinds = per_kind(ns, nr)
    local m0 = heap()   -- before the texts: the table keeps what it keeps of them
    local data = scale.dataset(ns, nr)
    local prof = profile
    if prof then require("jit.p").start(profile, "/dev/stderr") end
    local t0 = os.clock()
    local t = build(data)
    local bt = os.clock() - t0
    if prof then require("jit.p").stop() end
    data = nil
    local fresh = (heap() - m0) / 1048576
    local nitems = ns * (nr + 2) + 1
    -- apply: one rule (its sort flips, so the selector's rules re-sort), one upstream list
    local rule_us, ups_us = {}, {}
    local mid = math.floor(ns / 2)
    for n = 1, 200 do
        local k, v = scale.rule(mid, nr - 1, nr, n)
        rule_us[n] = apply_one(t, "RULE", k, v)
        k, v = scale.discover(mid, n % 4)
        ups_us[n] = apply_one(t, "DISCOVER_UPSTREAM", k, v)
    end
    -- route: a request for a rule in the middle of the table
    local path = scale.path(mid, 1)
    assert(routed_rule(t, request.new({ path = path, method = "GET", headers = {} })) == scale.rid(mid, 1),
        "routes to the rule")
    local best = math.huge
    for _ = 1, 3 do
        local r0 = os.clock()
        for _ = 1, 20000 do router.route(t, request.new({ path = path, method = "GET", headers = {} })) end
        best = math.min(best, (os.clock() - r0) / 20000 * 1e6)
    end
    -- 1,000 changes spread over the table: rules and upstream lists, back and forth
    for n = 1, 1000 do
        local g, k, v = scale.change(n, ns, nr)
        t:set(g, k, items.compile(g, k, v, 0)); t:finish()
    end
    local changed = (heap() - m0) / 1048576
    print(string.format("%-9s %9.0f %8.1f %8.0f %8.0f %8.2f %9.1f %9.1f %7.0f %6.0f %6.0f %6.0f", ns .. "x" .. nr,
        bt * 1000, bt / nitems * 1e6, median(rule_us), median(ups_us), best, fresh, changed,
        fresh * 1048576 / nitems, kinds.selector, kinds.upstream, kinds.rule))
    t = nil
end
