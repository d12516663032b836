-- bench_pauses: how long a request can take while a worker with a large route table applies
-- changes, under plain luajit (indicative figures, not a test): what LuaJIT's garbage
-- collector and the apply steps add to single requests (issue 19: no GC pause or apply step
-- may add more than ~10 ms to a request).
--
--   LUA_PATH="contrib/nginx/lua/?.lua;tests/lua/?.lua;;" luajit tests/lua/bench_pauses.lua [NSxNR] [REQUESTS] [EVERY] [CYCLES]
--     NSxNR     the table (tests/lua/scale_data.lua), default 10000x10
--     REQUESTS  requests to route, default 2,000,000
--     EVERY     one change (a rule or an upstream list, spread over the table) every EVERY
--               requests, default 1000 (10 changes per second at 10,000 requests/s)
--
-- Each request is what a worker does for one: the request object, route(), the load
-- balancer's pick, the per-request table the gateway keeps, and about 0.5 KB of other
-- garbage (nginx's variables and context). Its time is the thread's CPU time
-- (CLOCK_THREAD_CPUTIME_ID), so that other processes of a shared machine do not count; a
-- garbage-collector step or atomic phase that a request triggers counts in that request.
-- A change is applied between requests as the worker's refresh timer applies it
-- (gwsync.cache's path: compile, set, finish); its own time is reported apart. Prints the
-- distribution of request times, the slowest requests, the slowest apply and the number of
-- collection cycles seen (drops of the Lua heap).
--
-- On a shared (virtual) machine a thread's CPU time still counts time the host took the CPU
-- away, so single slow requests there are not all the collector's. The second part measures
-- the collector alone: CYCLES (default 5) whole collection cycles run one step at a time
-- (collectgarbage("step", 0): one step of the size an allocating request triggers), with
-- requests and a change applied between steps as above; it prints, per cycle, the number of
-- steps and the longest one, and the median over cycles of that longest step (a step the host
-- interrupted is an outlier in one cycle, the atomic phase or a large table is in every one).
local ffi = require "ffi"
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"
local balance = require "gwsync.balance"
local scale = require "scale_data"

pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } gwsync_bench_ts; int clock_gettime(int, gwsync_bench_ts *);")
local ts = ffi.new("gwsync_bench_ts")
local CLOCK_THREAD_CPUTIME_ID = 3
local function cpu_us()
    ffi.C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)
    return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

local ns, nr = 10000, 10
if arg[1] then
    local a, b = arg[1]:match("(%d+)x(%d+)")
    ns, nr = tonumber(a), tonumber(b)
end
local nreq = tonumber(arg[2]) or 2000000
local every = tonumber(arg[3]) or 1000
local ncycles = tonumber(arg[4]) or 5

local function compile_into(t, g, k, v) t:set(g, k, items.compile(g, k, v, 0)) end

local b0 = cpu_us()
local t = routes.new()
local data = scale.dataset(ns, nr)
for i = 1, #data do compile_into(t, data[i][1], data[i][2], data[i][3]) end
t:finish()
data = nil
local build_ms = (cpu_us() - b0) / 1000
collectgarbage("collect")
local heap0 = collectgarbage("count") / 1024

local paths = {}
for i = 1, 1024 do
    paths[i] = scale.path((i * 7) % ns, i % (nr - 1))
end
local state = { random = function(n) return 0 end }
local napplied = 0

-- one request as the worker serves it
local function serve(n)
    local p = paths[n % 1024 + 1]
    local raw = { path = p, method = "GET", headers = {}, remote_addr = "127.0.0.1" }
    local req = request.new(raw)
    local res, sel = router.route(t, req)
    local ctx = { res = res, sel = sel, req = req, tries = 0, var = p .. n }
    if sel then
        balance.select({ upstreams = sel.upstreams, handle = res.handle }, req, state)
    elseif res.action == "proxy" then
        balance.select(res, req, state)
    end
    return ctx
end

-- one change as the refresh timer applies it -> its CPU us
local function apply_next()
    napplied = napplied + 1
    local a0 = cpu_us()
    local g, k, v = scale.change(napplied, ns, nr)
    compile_into(t, g, k, v)
    t:finish()
    return cpu_us() - a0
end

local times = {}
local slow = {}
local apply_max = 0
local cycles, last_heap = 0, collectgarbage("count")
local w0 = os.clock()
for n = 1, nreq do
    local t0 = cpu_us()
    serve(n)
    local dt = cpu_us() - t0
    times[n] = dt
    if dt > 1000 then slow[#slow + 1] = { n, dt } end
    if n % every == 0 then
        local ad = apply_next()
        if ad > apply_max then apply_max = ad end
    end
    if n % 256 == 0 then
        local h = collectgarbage("count")
        if h < last_heap * 0.8 then cycles = cycles + 1 end
        last_heap = h
    end
end
local wall = os.clock() - w0
table.sort(times)
local function pct(q) return times[math.max(1, math.floor(#times * q))] end
table.sort(slow, function(a, b) return a[2] > b[2] end)
local top = {}
for i = 1, math.min(10, #slow) do top[i] = string.format("#%d %.1f ms", slow[i][1], slow[i][2] / 1000) end
print(string.format("%dx%d: table built in %.0f ms CPU, Lua heap %.1f MB; %d requests (%.1f s CPU), %d changes, %d GC cycles seen",
    ns, nr, build_ms, heap0, nreq, wall, napplied, cycles))
print(string.format("  request CPU us: p50 %.1f  p99 %.1f  p99.9 %.1f  p99.99 %.1f  max %.1f;  over 1 ms: %d;  slowest apply %.0f us",
    pct(0.5), pct(0.99), pct(0.999), pct(0.9999), times[#times], #slow, apply_max))
if #top > 0 then print("  slowest: " .. table.concat(top, ", ")) end

-- the collector alone, step by step
local maxes = {}
local line = {}
local n = 0
collectgarbage("collect")
for c = 1, ncycles do
    local steps, longest = 0, 0
    repeat
        for _ = 1, 8 do n = n + 1; serve(n) end
        if n % every < 8 then apply_next() end
        local s0 = cpu_us()
        local done = collectgarbage("step", 0)
        local d = cpu_us() - s0
        steps = steps + 1
        if d > longest then longest = d end
    until done
    maxes[c] = longest
    line[c] = string.format("%d steps, longest %.2f ms", steps, longest / 1000)
end
table.sort(maxes)
print(string.format("  collector, %d cycles step by step: %s; median longest step %.2f ms",
    ncycles, table.concat(line, "; "), maxes[math.floor(#maxes / 2) + 1] / 1000))
