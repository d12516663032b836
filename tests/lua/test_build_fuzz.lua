-- Robustness: router.build() on malformed admin data never throws, and route() / balance.select()
-- on whatever it built never fail with a Lua error (only ShenYu's own 400/500 answers).
--
-- Items come from the checked-in fetch-reply fixture and the admin emulator's generated datasets
-- (GWSYNC_LUA_DATASETS, written by test_lua_router.py), plus DISCOVER_UPSTREAM entries made
-- for their divide selectors. Each round mutates a few items at random (a key removed, a value
-- at any depth replaced by a value of another JSON type, a nested JSON text such as a handle
-- or props mutated the same way or cut short, the whole item cut short or replaced by a JSON
-- scalar) with a fixed seed, so a failure names a round that can be replayed.
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local balance = require "gwsync.balance"

local ROUNDS = 400
local GROUPS = { "PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM" }

local function read(path)
    local f = assert(io.open(path, "rb"))
    local s = f:read("*a")
    f:close()
    return s
end

local function deepcopy(v)
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = deepcopy(x) end
    return setmetatable(out, getmetatable(v))
end

-- the base items: a few divide selectors with their rules, the divide plugin, discovery entries
local function base_items()
    local docs = {}
    for path in (os.getenv("GWSYNC_LUA_DATASETS") or ""):gmatch("[^:]+") do
        docs[#docs + 1] = cjson.decode(read(path))
    end
    docs[#docs + 1] = cjson.decode(read("tests/fixtures/shenyu/mock_configs_fetch_response.json")).data
    local items = { PLUGIN = {}, SELECTOR = {}, RULE = {}, DISCOVER_UPSTREAM = {} }
    for _, doc in ipairs(docs) do
        local function list(name)
            local v = doc[name] or {}
            return v.data or v
        end
        for _, p in ipairs(list("PLUGIN")) do
            if p.name == "divide" then items.PLUGIN[#items.PLUGIN + 1] = p end
        end
        local picked = {}
        for _, s in ipairs(list("SELECTOR")) do
            if s.pluginName == "divide" and #items.SELECTOR < 8 then
                items.SELECTOR[#items.SELECTOR + 1] = s
                picked[s.id] = true
                items.DISCOVER_UPSTREAM[#items.DISCOVER_UPSTREAM + 1] = {
                    selectorId = s.id, pluginName = "divide", upstreamDataList = {
                        { url = "127.0.0.1:8081", protocol = "http://", status = 0, weight = 50,
                          props = '{"warmup":10,"gray":false,"healthCheckEnabled":true}',
                          dateCreated = "2024-05-28 10:00:00" },
                        { url = "127.0.0.1:8082", status = 0, weight = 20, props = cjson.null } } }
            end
        end
        for _, r in ipairs(list("RULE")) do
            if picked[r.selectorId] then items.RULE[#items.RULE + 1] = r end
        end
    end
    return items
end

local ODD_VALUES = { cjson.null, 0, -1, 1.5, 2 ^ 53, -1e300, "", " ", "x", "0", "true", "{", "[]",
    "null", "[{}]", '{"a":1}', "/**", "{id:[}", true, false, {}, { 1, 2 }, { a = 1 },
    { { paramType = "uri" } }, string.rep("z", 300) }

-- every table reachable in v, with the key path to it
local function tables_in(v, out)
    out = out or {}
    if type(v) == "table" then
        out[#out + 1] = v
        for _, x in pairs(v) do tables_in(x, out) end
    end
    return out
end

local function keys_of(t)
    local ks = {}
    for k in pairs(t) do ks[#ks + 1] = k end
    table.sort(ks, function(a, b) return tostring(a) < tostring(b) end)
    return ks
end

local mutate_value

local function mutate_table(t, rnd)
    local ts = tables_in(t)
    local target = ts[rnd(#ts)]
    local ks = keys_of(target)
    if #ks == 0 then
        target.x = ODD_VALUES[rnd(#ODD_VALUES)]
        return
    end
    local k = ks[rnd(#ks)]
    local op = rnd(4)
    if op == 1 then
        target[k] = nil
    elseif op == 2 then
        target[k] = deepcopy(ODD_VALUES[rnd(#ODD_VALUES)])
    else
        target[k] = mutate_value(target[k], rnd)
    end
end

mutate_value = function(v, rnd)
    if type(v) == "string" then
        local inner = cjson.decode(v)
        if type(inner) == "table" and rnd(3) > 1 then
            mutate_table(inner, rnd)
            return cjson.encode(inner) or v
        end
        if #v > 0 and rnd(2) == 1 then return v:sub(1, rnd(#v) - 1) end
        return v .. ODD_VALUES[rnd(9) + 5]
    elseif type(v) == "table" then
        mutate_table(v, rnd)
        return v
    end
    return deepcopy(ODD_VALUES[rnd(#ODD_VALUES)])
end

-- one round's groups of raw JSON texts
local function mutated_groups(base, rnd)
    local g = {}
    for _, name in ipairs(GROUPS) do
        g[name] = {}
        for i, item in ipairs(base[name]) do g[name][i] = deepcopy(item) end
    end
    local texts = {}
    for _ = 1, rnd(3) do
        local name = GROUPS[rnd(#GROUPS)]
        local list = g[name]
        if #list > 0 then
            local i = rnd(#list)
            local op = rnd(10)
            if op == 1 then
                texts[name .. i] = (cjson.encode(list[i]) or "{}"):sub(1, rnd(40))
            elseif op == 2 then
                texts[name .. i] = ({ "null", "1", '"s"', "[]", "true", "" })[rnd(6)]
            else
                mutate_table(list[i], rnd)
            end
        end
    end
    local out = {}
    for _, name in ipairs(GROUPS) do
        out[name] = {}
        for i, item in ipairs(g[name]) do
            out[name][i] = texts[name .. i] or cjson.encode(item) or "{"
        end
    end
    return out
end

local REQUESTS = {
    { path = "/order/findById/1", query = "id=1&version=v1" },
    { path = "/", query = "a" },
    { path = "/a%zz/b;x=1", query = "%zz=1&=&&" },
    { path = "/order//x/", headers = { { "Cookie", "session=sess-1; a" }, { "X-Tenant", "tenant-1" } } },
    { path = "/payment/x", method = "POST", remote_addr = "::1",
      headers = { { "X-Forwarded-For", "10.0.0.1, 10.0.0.2" }, { "Content-Length", "99999999" } } },
    { path = "/user/findById/3", headers = { { "Host", "[::1]:80" }, { "specify-domain", "127.0.0.1:8082" } } },
}

local base = base_items()
T.case("the fuzz base has divide selectors, rules and discovery entries", function()
    T.truthy(#base.SELECTOR > 0 and #base.RULE > 0 and #base.PLUGIN > 0, "base items")
end)

local ACTIONS = { proxy = true, error = true, skip = true }
local failures = {}
for round = 1, ROUNDS do
    local seed = round * 7919
    local state = seed
    local function rnd(n) -- a small LCG: the same rounds on every platform
        state = (state * 1103515245 + 12345) % 2147483648
        return math.floor(state / 2147483648 * n) + 1
    end
    local groups = mutated_groups(base, rnd)
    local ok, tbl = pcall(router.build, groups, { now_ms = 1716880000000 })
    if not ok or type(tbl) ~= "table" or type(tbl.selectors) ~= "table" then
        failures[#failures + 1] = "round " .. round .. ": build threw: " .. tostring(tbl)
    else
        local lb_state = {}
        for _, r in ipairs(REQUESTS) do
            local raw = deepcopy(r)
            raw.method = raw.method or "GET"
            raw.headers = raw.headers or {}
            raw.remote_addr = raw.remote_addr or "10.0.1.1"
            raw.now = 1716880000
            raw.now_ms = 1716880000000
            local req = request.new(raw)
            local rok, res, sel = pcall(router.route, tbl, req)
            if not rok or type(res) ~= "table" or not (sel or ACTIONS[res.action]) then
                failures[#failures + 1] = "round " .. round .. " " .. r.path .. ": route: " .. tostring(res)
            elseif sel then
                local bok, err = pcall(balance.select, router.result(res, sel), req, lb_state)
                if not bok then
                    failures[#failures + 1] = "round " .. round .. " " .. r.path .. ": select: " .. tostring(err)
                end
            end
        end
    end
end
T.case(ROUNDS .. " mutated rounds: build returns a table, route and select never raise a Lua error", function()
    if #failures > 0 then
        error(#failures .. " failures, first ones:\n  " .. table.concat(failures, "\n  ", 1, math.min(8, #failures)))
    end
end)
T.done()
