-- cache_driver: gwsync.cache under plain luajit, driven line by line by test_cache_changes.py.
--
--   luajit cache_driver.lua CACHE_DIR
-- stdin, one JSON command per line; stdout, one JSON answer per command:
--   {"cmd":"paths","paths":[...]}   the requests' paths to route (GET, no headers)
--   {"cmd":"refresh"}               cache:refresh(), then: {changed, generation, log (the lines
--                                   logged), full, incremental, compiled (items compiled by
--                                   this refresh), routes {path: answer}, mismatches (paths
--                                   where the table differs from one built from scratch from a
--                                   whole read of the cache, with the answers)}
--   {"cmd":"quit"}
local cjson = require "cjson.safe"
local cachemod = require "gwsync.cache"
local router = require "gwsync.router"
local request = require "gwsync.request"
local routes = require "gwsync.routes"

local path = assert(arg[1], "usage: cache_driver.lua CACHE_DIR")
local lines = {}
local cache = cachemod.new{ path = path, now_ms = function() return 0 end,
    log = function(level, msg) lines[#lines + 1] = level .. ": " .. msg end }
local paths = {}

local function fp(res, sel)
    res = router.result(res, sel)
    if res.action == "proxy" then
        local ups = {}
        for i, u in ipairs(res.upstreams) do ups[i] = u.url end
        return "proxy " .. res.selector.id .. " " .. res.rule.id .. " " .. table.concat(ups, ",")
    end
    return res.action .. " " .. tostring(res.code)
end

-- a table built from scratch from a whole read of the cache, in one read transaction
local function reference()
    local env = cache.env
    local txn = env:reader()
    local dbis = {}
    for _, g in ipairs(routes.GROUPS) do dbis[g] = env:dbi(g) end
    assert(txn:begin())
    local groups = {}
    for _, g in ipairs(routes.GROUPS) do
        local keys, values = {}, {}
        if dbis[g] then
            local vs, ks = txn:walk(dbis[g])
            keys, values = ks, vs
        end
        groups[g] = { keys = keys, values = values }
    end
    txn:close()
    return router.build(groups, { now_ms = 0 })
end

for line in io.lines() do
    local cmd = cjson.decode(line)
    local out = {}
    if cmd.cmd == "paths" then
        paths = cmd.paths
    elseif cmd.cmd == "refresh" then
        lines = {}
        local s0 = { full = cache.stats.full, inc = cache.stats.incremental, items = cache.stats.items }
        out.changed = cache:refresh()
        out.generation = tonumber(cache.built_generation)
        out.log = lines
        out.full = cache.stats.full - s0.full
        out.incremental = cache.stats.incremental - s0.inc
        out.compiled = cache.stats.items - s0.items
        out.routes, out.mismatches = {}, {}
        if cache.tbl then
            local ref = reference()
            for _, p in ipairs(paths) do
                local a = fp(router.route(cache.tbl, request.new({ path = p, method = "GET", headers = {} })))
                local b = fp(router.route(ref, request.new({ path = p, method = "GET", headers = {} })))
                out.routes[p] = a
                if a ~= b then out.mismatches[#out.mismatches + 1] = { p, a, b } end
            end
        end
    elseif cmd.cmd == "quit" then
        break
    end
    io.write(cjson.encode(out), "\n")
    io.flush()
end
cache:close()
