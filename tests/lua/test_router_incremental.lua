-- The route table changed item by item (gwsync.routes: set + finish) against a table built from
-- scratch from the same items (router.build), after every step of random change sequences:
-- selectors, rules, upstreams, the divide plugin turned off and on, adds, deletes and
-- updates, sort changes, condition changes that move a selector between the index and the
-- always-evaluated list, duplicate ids, items of other plugins and items ShenYu would fail
-- on. Both must route every request of a fixed set identically (same selector, rule,
-- upstream list and handle, or the same error), and hold the same selectors in the same order.
-- Then targeted cases: what a change may and may not touch.
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local routes = require "gwsync.routes"
local items = require "gwsync.items"

local GROUPS = routes.GROUPS

-- an answer of router.route as comparable text
local function fp(res, sel)
    res = router.result(res, sel)
    if res.action == "proxy" then
        local ups = {}
        for i, u in ipairs(res.upstreams) do
            ups[i] = u.url .. "@" .. tostring(u.weight) .. ":" .. tostring(u.status)
        end
        local h = res.handle
        return string.format("proxy %s %s [%s] %s/%s/%s/%s/%s/%s", res.selector.id, res.rule.id,
            table.concat(ups, ","), h.load_balance, h.retry, h.timeout, h.header_max_size,
            h.request_max_size, h.retry_strategy)
    end
    return string.format("%s %s %s", res.action, tostring(res.code), tostring(res.message))
end

local function shape(tbl)
    local out = { tostring(tbl.enabled) }
    for _, S in ipairs(tbl.selectors) do
        local rs = {}
        for i, R in ipairs(S.rules) do rs[i] = R.key end
        local ups = {}
        for i, u in ipairs(S.upstreams) do ups[i] = u.url end
        out[#out + 1] = S.key .. "(" .. table.concat(rs, ",") .. ")[" .. table.concat(ups, ",") .. "]"
    end
    return table.concat(out, " ")
end

---------------------------------------------------------------------------------------------
-- random items
---------------------------------------------------------------------------------------------
local NULL = cjson.null
local function c(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv, paramName = pname or "/" }
end
local COND_POOL = {
    c("uri", "match", "/a/**"), c("uri", "match", "/b/**"), c("uri", "match", "/a/x/**"),
    c("uri", "match", "/**"), c("uri", "match", "/*/x"), c("uri", "match", "/a/{id}"),
    c("uri", "startsWith", "/a/"), c("uri", "startsWith", "/b"), c("uri", "startsWith", "/a/x"),
    c("uri", "startsWith", "/"), c("uri", "=", "/a/x"), c("uri", "=", "/b"),
    c("uri", "pathPattern", "/a/**"), c("uri", "pathPattern", "/b/{v}"), c("uri", "pathPattern", "/c d/**"),
    c("uri", "regex", "/a/[0-9]+"), c("uri", "contains", "x"), c("uri", "endsWith", "/"),
    c("uri", "exclude", "/b/**"),
    c("header", "=", "1", "X-A"), c("header", "isBlank", "", "X-B"), c("query", "=", "v", "k"),
    c("req_method", "=", "GET"), c("req_method", "=", "POST"), c("host", "=", "127.0.0.1"),
    c("ip", "=", "10.0.0.1"), c("uri", "like", "/x"), c("uri", "match", "/{id:[}/**"),
}
local LB = { "roundRobin", "random", "hash", "leastActive", "bogus" }

local function pick(rnd, list) return list[rnd(#list)] end

local function conds(rnd, n)
    local out = {}
    for i = 1, n do out[i] = pick(rnd, COND_POOL) end
    return out
end

local function rand_selector(rnd, key)
    local id = key
    if key:sub(1, 3) == "dup" then id = "s" .. rnd(4) end -- a second item claiming an id
    local s = { id = id, pluginName = rnd(12) == 1 and "waf" or "divide", name = id,
        type = rnd(8) == 1 and 0 or 1, matchMode = rnd(4) == 1 and 1 or 0, sort = rnd(4),
        enabled = rnd(8) > 1, logged = false, continued = rnd(8) > 1,
        handle = cjson.encode({ { upstreamUrl = "10.0.0." .. rnd(3) .. ":80", weight = 10 * rnd(3) } }),
        conditionList = conds(rnd, rnd(0, 3)) }
    if rnd(25) == 1 then s.logged = nil end -- ShenYu would fail: left out
    return s
end

local function rand_rule(rnd, key)
    local r = { id = key, selectorId = rnd(15) == 1 and "ghost" or ("s" .. rnd(12)),
        pluginName = "divide", name = key, matchMode = rnd(4) == 1 and 1 or 0, sort = rnd(3),
        enabled = rnd(6) > 1, loged = false,
        handle = cjson.encode({ loadBalance = pick(rnd, LB), retry = rnd(0, 3), timeout = 1000 * rnd(3) }),
        conditionDataList = conds(rnd, rnd(0, 3)) }
    if rnd(25) == 1 then r.handle = nil end
    return r
end

local function rand_discover(rnd, key)
    local ups = {}
    for i = 1, rnd(0, 3) do
        ups[i] = { url = "10.1.0." .. rnd(4) .. ":80", status = rnd(4) == 1 and 1 or 0, weight = 10 * rnd(3),
                   dateCreated = "2024-05-28 10:00:00" }
    end
    return { selectorId = key:sub(3), pluginName = rnd(10) == 1 and "tcp" or "divide", upstreamDataList = ups }
end

local function rand_plugin(rnd, key)
    local p = { id = key, name = key == "waf" and "waf" or "divide", enabled = rnd(5) > 1 }
    if rnd(15) == 1 then p.enabled = NULL end
    return p
end

local KEYS = {
    SELECTOR = {}, RULE = {}, DISCOVER_UPSTREAM = {}, PLUGIN = { "divide", "divide2", "waf" },
}
for i = 1, 12 do KEYS.SELECTOR[#KEYS.SELECTOR + 1] = "s" .. i end
KEYS.SELECTOR[#KEYS.SELECTOR + 1] = "dup1"
KEYS.SELECTOR[#KEYS.SELECTOR + 1] = "dup2"
for i = 1, 40 do KEYS.RULE[#KEYS.RULE + 1] = string.format("r%02d", i) end
for i = 1, 12 do KEYS.DISCOVER_UPSTREAM[#KEYS.DISCOVER_UPSTREAM + 1] = "d:s" .. i end
local MAKE = { SELECTOR = rand_selector, RULE = rand_rule, DISCOVER_UPSTREAM = rand_discover,
               PLUGIN = rand_plugin }

local function raw_of(rnd, group, key)
    if rnd(40) == 1 then return "{not json" end
    return cjson.encode(MAKE[group](rnd, key))
end

---------------------------------------------------------------------------------------------
-- requests
---------------------------------------------------------------------------------------------
local PATHS = { "/a/x", "/a/x/", "/a/x/y", "/a/1", "/a/12", "/a", "/a/", "/b", "/b/", "/b/q", "/bb",
    "//a/x", "/a//x", "/c%20d/e", "/c d/e", "/A/x", "/a;p=1/x", "/", "", "a/x", "/z", "/a/%zz" }
local REQUESTS = {}
do
    local n = 0
    for _, p in ipairs(PATHS) do
        for _, h in ipairs({ {}, { { "X-A", "1" } }, { { "X-A", "1" }, { "X-B", "x" } } }) do
            for _, m in ipairs({ "GET", "POST" }) do
                n = n + 1
                REQUESTS[n] = { path = p, method = m, headers = h, query = (n % 3 == 0) and "k=v" or nil,
                    remote_addr = (n % 5 == 0) and "10.0.0.1" or "127.0.0.1", now = 1748779200 }
            end
        end
    end
end

local function compare(inc, ref, step)
    local si, sr = shape(inc), shape(ref)
    if si ~= sr then
        error(string.format("step %d: tables differ\n  incremental: %s\n  rebuilt:     %s", step, si, sr), 0)
    end
    for i, raw in ipairs(REQUESTS) do
        local a = fp(router.route(inc, request.new(raw)))
        local b = fp(router.route(ref, request.new(raw)))
        if a ~= b then
            error(string.format("step %d request %d %s %s: incremental %s, rebuilt %s", step, i,
                raw.method, raw.path, a, b), 0)
        end
    end
end

local function rebuilt(state)
    local g = {}
    for _, group in ipairs(GROUPS) do
        local keys, values = {}, {}
        for k in pairs(state[group]) do keys[#keys + 1] = k end
        table.sort(keys)
        for i, k in ipairs(keys) do values[i] = state[group][k] end
        g[group] = { keys = keys, values = values }
    end
    return router.build(g, { now_ms = 0 })
end

local function run_sequence(seed, steps, batch)
    local state = 0
    local function rnd(a, b) -- a small LCG: the same sequence on every platform
        state = (state * 1103515245 + 12345 + seed) % 2147483648
        if b == nil then a, b = 1, a end
        return a + math.floor(state / 2147483648 * (b - a + 1))
    end
    local raw = { PLUGIN = {}, SELECTOR = {}, RULE = {}, DISCOVER_UPSTREAM = {} }
    local inc = routes.new()
    -- a starting table
    for _, group in ipairs(GROUPS) do
        for _, key in ipairs(KEYS[group]) do
            if rnd(3) > 1 then
                raw[group][key] = raw_of(rnd, group, key)
                inc:set(group, key, items.compile(group, key, raw[group][key], 0))
            end
        end
    end
    inc:finish()
    compare(inc, rebuilt(raw), 0)
    local moved = 0
    for step = 1, steps do
        for _ = 1, rnd(batch) do
            local group = GROUPS[rnd(4)]
            if rnd(10) > 7 then group = "RULE" end
            local key = pick(rnd, KEYS[group])
            local old = raw[group][key]
            if old and rnd(4) == 1 then
                raw[group][key] = nil
                inc:set(group, key, nil)
            else
                local text = raw_of(rnd, group, key)
                if group == "SELECTOR" and old and rnd(3) == 1 then
                    -- only the sort, or only the conditions, of the same selector
                    local obj = cjson.decode(old)
                    if type(obj) == "table" then
                        if rnd(2) == 1 then obj.sort = rnd(4) else obj.conditionList = conds(rnd, rnd(0, 2)); moved = moved + 1 end
                        text = cjson.encode(obj)
                    end
                end
                raw[group][key] = text
                inc:set(group, key, items.compile(group, key, text, 0))
            end
        end
        inc:finish()
        compare(inc, rebuilt(raw), step)
    end
    return moved
end

T.case("incremental == rebuilt after every step of 8 random sequences of 150 steps", function()
    local moved = 0
    for seed = 1, 8 do moved = moved + run_sequence(seed * 7919, 150, 4) end
    T.truthy(moved > 10, "selectors had their conditions changed")
end)

T.case("incremental == rebuilt with large batches (more than the re-sort threshold)", function()
    for seed = 1, 3 do run_sequence(seed * 104729, 20, 60) end
end)

---------------------------------------------------------------------------------------------
-- what a change touches
---------------------------------------------------------------------------------------------
local H = cjson.encode({ loadBalance = "roundRobin" })
local function sel(id, sort, prefix)
    return cjson.encode({ id = id, pluginName = "divide", name = id, type = 1, matchMode = 0, sort = sort,
        enabled = true, logged = false, continued = true, handle = "",
        conditionList = { c("uri", "match", prefix .. "/**") } })
end
local function rule(id, sid, sort, prefix)
    return cjson.encode({ id = id, selectorId = sid, pluginName = "divide", name = id, matchMode = 0,
        sort = sort, enabled = true, loged = false, handle = H,
        conditionDataList = { c("uri", "match", prefix .. "/**") } })
end
local function disc(sid, url)
    return cjson.encode({ selectorId = sid, pluginName = "divide",
        upstreamDataList = { { url = url, status = 0, weight = 50 } } })
end

local function small_table()
    local t = routes.new()
    local function set(g, k, v) t:set(g, k, items.compile(g, k, v, 0)) end
    set("PLUGIN", "divide", cjson.encode({ id = "5", name = "divide", enabled = true }))
    for i = 1, 3 do
        local sid = "s" .. i
        set("SELECTOR", sid, sel(sid, i, "/p" .. i))
        set("DISCOVER_UPSTREAM", sid, disc(sid, "10.0.0." .. i .. ":80"))
        for k = 1, 3 do set("RULE", sid .. "-r" .. k, rule(sid .. "-r" .. k, sid, k, "/p" .. i .. "/v" .. k)) end
    end
    t:finish()
    return t, set
end

local function snapshot(t)
    local out = {}
    for _, S in ipairs(t.selectors) do
        out[S.id] = { node = S, rules = S.rules, active = S.active_rules, items = {},
                      upstreams = S.upstreams }
        for i, R in ipairs(S.rules) do out[S.id].items[i] = R end
    end
    return out
end

T.case("a DISCOVER_UPSTREAM change gives that selector a new upstream list and touches nothing else", function()
    local t, set = small_table()
    local before = snapshot(t)
    local r_before, s_before = router.route(t, request.new({ path = "/p2/v1/x", method = "GET", headers = {} }))
    set("DISCOVER_UPSTREAM", "s2", disc("s2", "10.9.9.9:80"))
    t:finish()
    local after = snapshot(t)
    for _, id in ipairs({ "s1", "s3" }) do
        T.eq(after[id].rules, before[id].rules, id .. " rule list")
        T.eq(after[id].upstreams, before[id].upstreams, id .. " upstream list")
    end
    T.eq(after.s2.node, before.s2.node, "the selector node stays")
    T.eq(after.s2.rules, before.s2.rules, "s2's rule list is not rebuilt")
    T.eq(after.s2.active, before.s2.active, "s2's enabled rules are not rebuilt")
    for i = 1, 3 do
        T.eq(after.s2.items[i], before.s2.items[i], "s2 rule item " .. i .. " is the same compiled item")
    end
    T.truthy(after.s2.upstreams ~= before.s2.upstreams, "s2's upstream list is new")
    T.eq(after.s2.upstreams[1].url, "10.9.9.9:80")
    -- what a request was routed with before the change is never modified
    T.eq(before.s2.upstreams[1].url, "10.0.0.2:80")
    T.eq(r_before, before.s2.items[1]); T.eq(s_before, before.s2.node)
    local r_after = router.route(t, request.new({ path = "/p2/v1/x", method = "GET", headers = {} }))
    T.eq(r_after, r_before, "the same rule answers")
end)

T.case("a rule change re-sorts that selector's rules only", function()
    local t, set = small_table()
    local before = snapshot(t)
    set("RULE", "s2-r1", rule("s2-r1", "s2", 9, "/p2/v1"))   -- sort 1 -> 9: now last
    t:finish()
    local after = snapshot(t)
    for _, id in ipairs({ "s1", "s3" }) do
        T.eq(after[id].rules, before[id].rules, id .. " rule list untouched")
    end
    T.eq(after.s2.node, before.s2.node, "the selector node stays")
    T.eq(after.s2.rules[3].key, "s2-r1")
    T.eq(after.s2.items[1], before.s2.items[2], "unchanged rules keep their compiled items")
end)

T.case("a selector's sort change moves it in the list without touching the others' rules", function()
    local t, set = small_table()
    local before = snapshot(t)
    set("SELECTOR", "s1", sel("s1", 7, "/p1"))
    t:finish()
    local after = snapshot(t)
    T.eq(t.selectors[3].id, "s1")
    T.eq(after.s2.rules, before.s2.rules)
    T.eq(after.s3.rules, before.s3.rules)
end)

T.case("a selector with many rules gets a rule index, and routes as without one", function()
    local function build(flat)
        local t = routes.new({ flat = flat })
        local function set(g, k, v) t:set(g, k, items.compile(g, k, v, 0)) end
        set("PLUGIN", "divide", cjson.encode({ id = "5", name = "divide", enabled = true }))
        set("SELECTOR", "s1", sel("s1", 1, "/p"))
        for k = 1, 40 do
            set("RULE", string.format("r%02d", k), rule(string.format("r%02d", k), "s1", k % 4, "/p/v" .. (k % 13)))
        end
        t:finish()
        return t
    end
    local t, flat = build(false), build(true)
    T.truthy(t.nodes.s1.rule_index, "indexed rules")
    T.eq(flat.nodes.s1.rule_index.count, #flat.nodes.s1.rule_index.always)
    for k = 0, 14 do
        for _, p in ipairs({ "/p/v" .. k, "/p/v" .. k .. "/x", "/p//v" .. k }) do
            local raw = { path = p, method = "GET", headers = {} }
            T.eq(fp(router.route(t, request.new(raw))), fp(router.route(flat, request.new(raw))), p)
        end
    end
end)

T.done()
