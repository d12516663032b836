-- bench_route_cache: the route cache (gwsync.routecache) under plain luajit (indicative
-- figures, not a test).
--
--   LUA_PATH="contrib/nginx/lua/?.lua;tests/lua/?.lua;;" luajit tests/lua/bench_route_cache.lua [SIZES]
--     SIZES: e.g. 1000x10,10000x10 (selectors x rules, the default)
--
-- Tables shaped as figure 11's (tests/lua/scale_data.lua), 64 request paths spread over the
-- selectors as bench/gateway's load. For each size it prints, in us per request (the request
-- object made and routed; best of 3 rounds), routing without the cache, with it (every path a
-- hit), and both again with 1 MB written between two requests (ffi.fill: what nginx and the
-- kernel do to the CPU caches between two requests in a worker); then the Lua heap one entry
-- costs (10,000 distinct paths of figure 11's shape kept, after a full collection, the path
-- strings included) and the garbage a hit and a miss leave.
local ffi = require "ffi"
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"
local routecache = require "gwsync.routecache"
local scale = require "scale_data"

local sizes = {}
for _, a in ipairs(arg) do
    for s, r in a:gmatch("(%d+)x(%d+)") do sizes[#sizes + 1] = { tonumber(s), tonumber(r) } end
end
if #sizes == 0 then sizes = { { 1000, 10 }, { 10000, 10 } } end

local function build(ns, nr)
    local t = routes.new()
    local data = scale.dataset(ns, nr)
    for i = 1, #data do
        local d = data[i]
        t:set(d[1], d[2], items.compile(d[1], d[2], d[3], 0))
    end
    t:finish()
    return t
end

local function heap()
    collectgarbage("collect"); collectgarbage("collect")
    return collectgarbage("count") * 1024
end

local junk = ffi.new("uint8_t[?]", 1024 * 1024)

local function per_request(t, paths, cap, evict, n)
    local best = math.huge
    for _ = 1, 3 do
        local el = 0
        for i = 1, n do
            if evict then ffi.fill(junk, 1024 * 1024, i) end
            local p = paths[i % #paths + 1]
            local t0 = os.clock()
            router.route(t, request.new({ path = p, method = "GET", headers = {} }), cap)
            el = el + (os.clock() - t0)
        end
        best = math.min(best, el / n * 1e6)
    end
    return best
end

-- bytes of garbage per request: the heap's growth with the collector stopped
local function garbage(t, paths, cap, n)
    collectgarbage("collect")
    collectgarbage("stop")
    local h0 = collectgarbage("count")
    for i = 1, n do
        router.route(t, request.new({ path = paths[i % #paths + 1], method = "GET", headers = {} }), cap)
    end
    local g = (collectgarbage("count") - h0) * 1024 / n
    collectgarbage("restart")
    return g
end

print(string.format("%-10s %9s %9s %9s %9s %9s %9s %9s %9s", "size", "off us", "hit us", "off+ev us",
    "hit+ev us", "B/entry", "B hit", "B miss", "B off"))
for _, sz in ipairs(sizes) do
    local ns, nr = sz[1], sz[2]
    local t = build(ns, nr)
    local paths = {}
    for j = 0, 63 do
        local i = math.min(ns - 1, math.floor(j * ns / 64) + math.floor(ns / 64 / 2))
        paths[#paths + 1] = scale.path(i, j % (nr - 1))
    end
    local off = per_request(t, paths, 0, false, 20000)
    local hit = per_request(t, paths, 10000, false, 20000)
    local offe = per_request(t, paths, 0, true, 2000)
    local hite = per_request(t, paths, 10000, true, 2000)
    -- one entry: 10,000 distinct paths kept (a cap of 20,000: no turn), the paths made here
    -- and held by the cache alone, so the heap's growth counts them in
    for j = 1, 10000 do -- every rule these reach compiled first (rules compile on first use)
        router.route(t, request.new({ path = scale.path(j % ns, j % (nr - 1)), method = "GET",
            headers = {} }), 0)
    end
    t.rc = nil
    local h0 = heap()
    for j = 1, 10000 do
        router.route(t, request.new({ path = scale.path(j % ns, j % (nr - 1)) .. j, method = "GET",
            headers = {} }), 20000)
    end
    local per_entry = (heap() - h0) / 10000
    -- garbage: a hit (the 64 paths kept), a miss (every path new: a cap of 1), off
    t.rc = nil
    local ghit = garbage(t, paths, 10000, 20000)
    local fresh = {}
    for j = 1, 20000 do fresh[j] = scale.path(j % ns, j % (nr - 1)) .. "x" .. j end
    local gmiss = garbage(t, fresh, 100000, 20000)
    local goff = garbage(t, paths, 0, 20000)
    print(string.format("%-10s %9.2f %9.2f %9.2f %9.2f %9.0f %9.0f %9.0f %9.0f", ns .. "x" .. nr, off, hit,
        offe, hite, per_entry, ghit, gmiss, goff))
    local c = routecache.count
    io.stderr:write(string.format("# counts: %d hits, %d misses, %d bypassed\n", c.hit, c.miss, c.bypass))
end
