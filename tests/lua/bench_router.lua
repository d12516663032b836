-- bench_router: the router's cost per request under plain luajit, shaped like nginx's use.
--
--   LUA_PATH="contrib/nginx/lua/?.lua;;" luajit tests/lua/bench_router.lua [-v] [-d] [DATASET.json ...]
--
-- Not a test (no test_ prefix): a tool to see what LuaJIT does with route(). Each "request"
-- is what gateway.access() asks of the router: request.new, router.route, balance.select
-- (given, as the gateway does, a per-request table with the rule's handle and the selector's
-- upstreams).
-- Requests enter Lua from C (string.gsub's callback) as they do in nginx, so that traces
-- start at the router's own functions and loops and are not inlined into one benchmark loop
-- (which would hide the aborts nginx sees). Tables are routed
-- in the bench figure's order (1 selector, then 50, then 300) in one process, as one nginx
-- worker routes them one after the other. -v prints LuaJIT's trace events (jit.v) to stderr;
-- -d routes the datasets only.
-- DATASET.json files are the admin emulator's datasets (tests/admin/dataset.py --help).
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local balance = require "gwsync.balance"

local verbose, only_files = false, false
local files = {}
for _, a in ipairs(arg) do
    if a == "-v" then verbose = true
    elseif a == "-d" then only_files = true
    else files[#files + 1] = a end
end
if verbose then require("jit.v").on("/dev/stderr") end

local function enc(list)
    local out = {}
    for i, x in ipairs(list) do out[i] = cjson.encode(x) end
    return out
end
local function cond(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv,
             paramName = pname or "/" }
end
local UP = cjson.encode({ { upstreamUrl = "127.0.0.1:8081", protocol = "http://", weight = 50,
    status = true } })
local HANDLE = cjson.encode({ loadBalance = "roundRobin", retryStrategy = "current", retry = 0,
    timeout = 3000, headerMaxSize = 0, requestMaxSize = 0 })

-- bench/nginx's table: selector i = uri match /svc<i>/** AND header X-Bench = yes; 3 rules
-- (uri match /svc<i>/v<k>/** AND req_method = GET) and a catch-all each.
local function bench_table(n)
    local sels, rules = {}, {}
    for i = 0, n - 1 do
        local sid = string.format("bench-s-%03d", i)
        sels[#sels + 1] = { id = sid, pluginName = "divide", name = sid, type = 1, matchMode = 0,
            sort = i + 1, enabled = true, logged = false, continued = true, handle = UP,
            conditionList = { cond("uri", "match", "/svc" .. i .. "/**"),
                              cond("header", "=", "yes", "X-Bench") } }
        for k = 0, 2 do
            rules[#rules + 1] = { id = sid .. "-r" .. k, selectorId = sid, pluginName = "divide",
                matchMode = 0, sort = k + 1, enabled = true, loged = false, handle = HANDLE,
                conditionDataList = { cond("uri", "match", "/svc" .. i .. "/v" .. k .. "/**"),
                                      cond("req_method", "=", "GET") } }
        end
        rules[#rules + 1] = { id = sid .. "-any", selectorId = sid, pluginName = "divide",
            matchMode = 0, sort = 99, enabled = true, loged = false, handle = HANDLE,
            conditionDataList = {} }
    end
    return router.build({ PLUGIN = enc({ { id = "5", name = "divide", enabled = true } }),
        SELECTOR = enc(sels), RULE = enc(rules) }, { now_ms = 0 })
end

local function dataset_table(path)
    local f = assert(io.open(path, "rb"))
    local doc = cjson.decode(f:read("*a"))
    f:close()
    local g = {}
    for name, items in pairs(doc) do g[name] = enc(items) end
    return router.build(g, { now_ms = 0 })
end

local state = {}
local function one(raw)
    local req = request.new(raw)
    local res, sel = router.route(state.tbl, req)
    if sel then
        balance.select({ upstreams = sel.upstreams, handle = res.handle, rule = res, sel = sel }, req, state)
    end
    return router.result(res, sel)
end

-- the driver: string.gsub calls `entry` once per "x" from C, as nginx calls access() from C
-- for every request (a Lua loop here would start traces of its own and inline everything)
local function drive(raws, n)
    local m, i = #raws, 0
    local function entry()
        i = i + 1
        local r = raws[i % m + 1]
        one({ path = r.path, method = r.method, headers = r.headers,
              remote_addr = r.remote_addr, query = r.query })
    end
    local t0 = os.clock()
    string.gsub(string.rep("x", n), "x", entry)
    return (os.clock() - t0) / n * 1e6
end

local function run(label, tbl, raws, n)
    state.tbl = tbl
    drive(raws, 2000) -- warm-up: let the traces form
    local best = math.huge
    for _ = 1, 3 do
        local us = drive(raws, n)
        if us < best then best = us end
    end
    local res = one(raws[1])
    print(string.format("%-34s %7.2f us/request  (%s)", label, best,
        res.action == "proxy" and (res.selector.id .. "/" .. res.rule.id) or tostring(res.code)))
end

local H = { { "Host", "127.0.0.1:8080" }, { "User-Agent", "wrk" }, { "X-Bench", "yes" } }
for _, n in ipairs(only_files and {} or { 1, 50, 300 }) do
    local raws = { { path = string.format("/svc%d/v1/orders", math.floor(n / 2)), method = "GET",
                     headers = H, remote_addr = "127.0.0.1" } }
    run("bench table, " .. n .. " selectors", bench_table(n), raws, 100000)
end

-- realistic requests against the emulator's datasets (services and conditions of dataset.py)
local SVCS = { "order", "user", "payment", "inventory", "catalog", "shipping", "search", "review" }
local raws = {}
for i, svc in ipairs(SVCS) do
    raws[#raws + 1] = { path = "/" .. svc .. "/findById/" .. i, method = "GET", remote_addr = "10.0.1.1",
        headers = { { "Host", svc .. ".example.com" }, { "X-Tenant", "tenant-" .. i },
                    { "Cookie", "session=sess-" .. i } }, query = "version=v" .. i }
    raws[#raws + 1] = { path = "/" .. svc .. "/any/" .. i, method = "POST", remote_addr = "10.0." .. i .. ".1",
        headers = { { "Host", svc .. ".internal" } } }
end
for _, path in ipairs(files) do
    run("dataset " .. path:match("[^/]*$"), dataset_table(path), raws, 20000)
end
