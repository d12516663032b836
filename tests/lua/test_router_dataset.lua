-- router.build on realistic admin data: the checked-in fetch reply fixture and the admin
-- emulator's generated datasets (written by test_lua_router.py, paths in GWSYNC_LUA_DATASETS).
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

-- groups of raw item JSON texts from {"GROUP":[items]} or a fetch reply
local function groups_of(doc)
    if doc.code and type(doc.data) == "table" then doc = doc.data end
    local g = {}
    for name, v in pairs(doc) do
        local items = (type(v) == "table" and v.data) or v
        g[name] = {}
        for i, item in ipairs(items) do g[name][i] = cjson.encode(item) end
    end
    return g, doc
end

local function items(doc, name)
    local v = doc[name] or {}
    return v.data or v
end

local function route_many(tbl)
    local paths = { "/", "/order/1", "/user/findById/3", "/payment/x/y", "/order/findAll/1", "/a%20b" }
    local seen = {}
    for _, p in ipairs(paths) do
        local r = router.result(router.route(tbl, request.new { path = p, method = "GET", remote_addr = "10.0.1.1",
            headers = { { "Host", "order.example.com" }, { "X-Tenant", "tenant-1" }, { "Cookie", "session=sess-1" } },
            query = "version=v1" }))
        T.truthy(r.action == "proxy" or r.action == "error" or r.action == "skip", "result action")
        seen[r.action] = true
    end
    return seen
end

T.case("the fetch-reply fixture builds: divide enabled, no selectors -> -107", function()
    local g = groups_of(cjson.decode(read("tests/fixtures/shenyu/mock_configs_fetch_response.json")))
    local tbl = router.build(g)
    T.eq(tbl.enabled, true)
    T.eq(#tbl.selectors, 0)
    T.eq(#tbl.warnings, 0)
    T.eq(router.route(tbl, request.new { path = "/x", method = "GET", headers = {} }).code, -107)
end)

local list = os.getenv("GWSYNC_LUA_DATASETS") or ""
if list == "" then print("# no generated datasets (run through test_lua_router.py)") end
for path in list:gmatch("[^:]+") do
    T.case("dataset " .. path:match("[^/]*$") .. " builds every divide selector and its rules", function()
        local g, doc = groups_of(cjson.decode(read(path)))
        local tbl = router.build(g)
        local want_sel, want_rules, ids = 0, 0, {}
        for _, s in ipairs(items(doc, "SELECTOR")) do
            if s.pluginName == "divide" then want_sel = want_sel + 1; ids[s.id] = true end
        end
        for _, r in ipairs(items(doc, "RULE")) do
            if ids[r.selectorId] then want_rules = want_rules + 1 end
        end
        T.eq(#tbl.selectors, want_sel, "divide selectors")
        local got_rules = 0
        for i, s in ipairs(tbl.selectors) do
            got_rules = got_rules + #s.rules
            if i > 1 then T.truthy(tbl.selectors[i - 1].sort <= s.sort, "sorted by sort") end
            T.truthy(#s.upstreams > 0, "selector " .. s.id .. " has upstreams from its handle")
        end
        T.eq(got_rules, want_rules, "rules of divide selectors")
        T.eq(#tbl.warnings, 0, "warnings: " .. table.concat(tbl.warnings, "; "))
        route_many(tbl)
    end)
    T.case("dataset " .. path:match("[^/]*$") .. " routes 20000 requests at under 1 ms each", function()
        local g = groups_of(cjson.decode(read(path)))
        local tbl = router.build(g)
        local t0 = os.clock()
        for i = 1, 20000 do
            router.route(tbl, request.new { path = "/order/findAll/" .. (i % 50), method = "GET",
                remote_addr = "10.0.1.1", headers = { { "Host", "order.example.com" }, { "X-Tenant", "tenant-1" } } })
        end
        local dt = os.clock() - t0
        print(string.format("# %.1f us per route()", dt / 20000 * 1e6))
        T.truthy(dt < 20, "20000 routes took " .. dt .. " s")
    end)
end
T.done()
