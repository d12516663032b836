-- scale_data: the tables of the "gateway at scale" benchmarks (issue 19, bench/'s figure 11)
-- as cache items, for the plain-luajit benches (bench_scale.lua, bench_pauses.lua).
--
-- A table of S selectors x R rules: selectors alternate `match /sN/**` and `startsWith
-- /sN/`; rule k of selector N alternates `match /sN/rk/**` and `startsWith /sN/rk/`, but
-- for the last one (the "mover", `match /sN/mDDDDDDDDD/**`); one DISCOVER_UPSTREAM item with
-- two upstreams per selector; the divide plugin on. Items in the admin's shapes, as
-- tests/e2e/items.py writes them (namespaceId, rule handles and upstream props as JSON text
-- in a string): the same texts as bench/gateway's, but for the order of keys.
local cjson = require "cjson.safe"

local M = {}

-- JSON as the admin writes it: lua-cjson's "\/" undone (Jackson does not escape "/")
local function encode(v)
    return (cjson.encode(v):gsub("\\/", "/"))
end

local NAMESPACE = "649330b6-c2d7-4edc-be8e-8a54df9eb385"
local HANDLE = encode({ loadBalance = "roundRobin", retryStrategy = "current", retry = 0,
    timeout = 3000, headerMaxSize = 0, requestMaxSize = 0 })
local PROPS = encode({ warmup = 10, gray = false, healthCheckEnabled = true })

local function cond(pt, op, pv)
    return { paramType = pt, operator = op, paramName = "/", paramValue = pv }
end

function M.sid(i) return string.format("s-%05d", i) end
function M.rid(i, k) return string.format("r-%05d-%02d", i, k) end

-- selector(i) -> key, text
function M.selector(i)
    local sid = M.sid(i)
    local c = (i % 2 == 0) and cond("uri", "match", "/s" .. i .. "/**") or cond("uri", "startsWith", "/s" .. i .. "/")
    return sid, encode({ id = sid, pluginId = "5", pluginName = "divide", name = sid, matchMode = 0,
        type = 1, sort = i + 1, enabled = true, logged = false, continued = true, handle = "",
        conditionList = { c }, matchRestful = false, namespaceId = NAMESPACE })
end

-- rule(i, k, nr, mover) -> key, text: rule k of selector i in a table of nr rules per
-- selector; mover: the digits of the last rule's path (default 0)
function M.rule(i, k, nr, mover)
    local sid, rid = M.sid(i), M.rid(i, k)
    local c
    if k == nr - 1 then
        c = cond("uri", "match", string.format("/s%d/m%09d/**", i, mover or 0))
    elseif k % 2 == 0 then
        c = cond("uri", "match", string.format("/s%d/r%d/**", i, k))
    else
        c = cond("uri", "startsWith", string.format("/s%d/r%d/", i, k))
    end
    return rid, encode({ id = rid, name = rid, pluginName = "divide", selectorId = sid,
        matchMode = 0, sort = k + 1, enabled = true, loged = false, handle = HANDLE,
        conditionDataList = { c }, matchRestful = false, namespaceId = NAMESPACE })
end

-- discover(i, pair) -> key, text: selector i's two upstreams (pair: which pair of ports)
function M.discover(i, pair)
    local sid = M.sid(i)
    pair = pair or (i % 4)
    local ups = {}
    for j = 0, 1 do
        ups[j + 1] = { id = sid .. "-up-" .. j, discoveryHandlerId = "dh-" .. sid, protocol = "http://",
            url = "127.0.0.1:" .. (20000 + 2 * pair + j), status = 0, weight = 50, props = PROPS,
            dateCreated = "2024-05-28 10:00:00", dateUpdated = "2024-05-28 10:00:00",
            namespaceId = NAMESPACE }
    end
    return sid, encode({ selectorId = sid, selectorName = sid, pluginName = "divide",
        discoveryHandlerId = "dh-" .. sid, upstreamDataList = ups, namespaceId = NAMESPACE })
end

M.PLUGIN = encode({ id = "5", name = "divide", config = cjson.null, role = "Proxy", enabled = true,
    sort = 200, pluginJar = cjson.null, namespaceId = NAMESPACE })

-- dataset(ns, nr, kinds) -> list of { group, key, text }; kinds (optional) a set of the groups
-- to include (PLUGIN, SELECTOR, DISCOVER_UPSTREAM, RULE)
function M.dataset(ns, nr, kinds)
    local out = {}
    local function want(g) return not kinds or kinds[g] end
    if want("PLUGIN") then out[1] = { "PLUGIN", "5", M.PLUGIN } end
    for i = 0, ns - 1 do
        local k, v
        if want("SELECTOR") then k, v = M.selector(i); out[#out + 1] = { "SELECTOR", k, v } end
        if want("DISCOVER_UPSTREAM") then k, v = M.discover(i); out[#out + 1] = { "DISCOVER_UPSTREAM", k, v } end
        if want("RULE") then
            for r = 0, nr - 1 do k, v = M.rule(i, r, nr); out[#out + 1] = { "RULE", k, v } end
        end
    end
    return out
end

-- change(n, ns, nr) -> group, key, text: the n-th of a sequence of one-item changes spread
-- over the table, alternately a mover rule (its path's digits become n) and an upstream list
-- (the selector moves to another pair of upstreams)
function M.change(n, ns, nr)
    local i = (n * 7919) % ns
    if n % 2 == 0 then
        return "RULE", M.rule(i, nr - 1, nr, n)
    end
    return "DISCOVER_UPSTREAM", M.discover(i, (i + n) % 4)
end

-- a request path routed by rule k of selector i (k < nr - 1)
function M.path(i, k)
    return string.format("/s%d/r%d/item", i, k)
end

return M
