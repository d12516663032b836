-- bench_pick: the load balancer's pick per request under plain luajit, entered from C
-- (string.gsub's callback) as nginx enters access(), so that the traces are the per-request
-- ones nginx sees and not one benchmark loop. Not a test (no test_ prefix).
--   LUA_PATH="contrib/nginx/lua/?.lua;;" luajit tests/lua/bench_pick.lua [-v]
-- -v prints jit.v's trace events to stderr.
local request = require "gwsync.request"
local balance = require "gwsync.balance"
if arg[1] == "-v" then require("jit.v").on("/dev/stderr") end

local dict = { v = {} }
function dict:incr(k, by, init) local n = (self.v[k] or init) + by; self.v[k] = n; return n end
-- upstreams created 2024-05-28 (the scale table's dateCreated), picked now: between two of
-- their warm-up ramps (Java's (int) uptime wraps every 2^32 ms)
local NOW = os.time() * 1000
local function up(url, w) return { url = url, protocol = "http://", weight = w, status = true,
    timestamp = 1716890400000, warmup = 10 } end
local lists = {}
for i = 1, 64 do lists[i] = { up("127.0.0." .. i .. ":18081", 50), up("127.0.0." .. i .. ":18082", 50) } end
local handles = { rr = { load_balance = "roundRobin" }, random = { load_balance = "random" } }

local function run(lb, state, n)
    local h = handles[lb]
    local k, sink = 0, 0
    local subject = string.rep("x", n)
    local t0 = os.clock()
    string.gsub(subject, "x", function()
        k = k + 1
        local r = request.new({ path = "/", method = "GET", now_ms = NOW + k / 100, no_specify_domain = true })
        local u = balance.select_in(lists[k % 64 + 1], h, r, state, nil)
        if u.weight == 50 then sink = sink + 1 end
    end)
    return (os.clock() - t0) / n * 1e9, sink
end
for _, c in ipairs({ { "rr", { shared = dict }, "roundRobin, shared sequence" },
                     { "rr", {}, "roundRobin, per worker" },
                     { "random", {}, "random" } }) do
    run(c[1], c[2], 200000) -- warm
    local best
    for _ = 1, 3 do
        local ns = run(c[1], c[2], 1000000)
        if not best or ns < best then best = ns end
    end
    print(string.format("%-30s %6.0f ns per request (request object + pick)", c[3], best))
end
