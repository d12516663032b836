-- gwsync.gateway: nginx phase handlers that route requests as ShenYu's divide plugin does,
-- from the route table gwsync.cache keeps in step with the LMDB cache.
--
--   init_by_lua_block      { require("gwsync.gateway").configure{ path = "/var/lib/gwsync/cache" } }
--   init_worker_by_lua_block { require("gwsync.gateway").init_worker() }
--   access_by_lua_block    { require("gwsync.gateway").access() }
--   balancer_by_lua_block  { require("gwsync.gateway").balancer() }
--   (debug headers: the example's `add_header X-Gwsync-... $gwsync_debug_...` lines, no Lua
--   header filter; header_filter() remains for configurations written before them)
--
-- Why it is split this way:
-- * The route table is kept up to date by a timer per worker (gwsync.updater), never by a
--   request: access() asks the cache for the live table (one mdb_get of the generation) and,
--   when the cache holds a newer generation, wakes the timer and routes with the table it has.
--   Only a request that finds no table at all (the worker's first moments) waits for one.
-- * access() does all the work that can answer the client: route, and pick the first
--   upstream, so "no selector/rule/healthy upstream" get ShenYu's JSON bodies (the balancer
--   phase cannot write a body). The result waits in ngx.ctx for the balancer.
-- * balancer() only sets peers: the first try uses the upstream access() picked; a retry
--   after a failure follows the rule's retryStrategy: `current` tries the same upstream
--   again (ShenYu retries the same URI), `failover` picks another one not tried yet with the
--   rule's load balancer (ShenYu's DefaultRetryStrategy.resend).
-- * ShenYu's sign plugin (gwsync.sign, SIGN-SEMANTICS.md) runs first in access(), as it runs
--   before divide in ShenYu: its table (the plugin's selectors and rules, the apps) is kept by
--   gwsync.signcache, refreshed by the same timer right after the route table; a request that
--   no sign rule matches costs one match of the sign selectors.
-- * Upstream hosts must be IP literals (the balancer phase cannot resolve names) and the
--   protocol http:// (proxy_pass names one scheme); others are unusable, logged once.
-- * All mutable state lives in one per-worker table (`worker`), made by configure(); the
--   load balancers' state that must be the gateway's, not the worker's (round-robin's
--   sequence, least-active counts), lives in a lua_shared_dict when one is declared.
-- * The debug headers of a proxied response are added by nginx's own `add_header` from
--   variables access() sets (only when debug_headers is on; an empty value adds no header),
--   not by a Lua header filter: a Lua phase per request costs whether or not it has work.
-- * Per request the work is kept to what routing needs (README, Performance notes): the raw
--   request is a lazy table (headers, query, client address... are fetched from nginx only
--   when the router first reads them), a usable peer is worked out once per upstream of a
--   route table (not per request), and no closure or string is built on the proxied path.
local request = require "gwsync.request"
local router = require "gwsync.router"
local balance = require "gwsync.balance"
local cachemod = require "gwsync.cache"
local updatermod = require "gwsync.updater"
local limits = require "gwsync.limits"
local ngx_balancer = require "ngx.balancer"
local signcache = require "gwsync.signcache"
local sign = require "gwsync.sign"
local routecache = require "gwsync.routecache"

local M = {}

local find, sub, byte = string.find, string.sub, string.byte

local DEFAULT_HANDLE = { load_balance = "random", retry = 3, timeout = 3000, retry_strategy = "current" }
local SKIP = { code = -106, message = "Can not find url, please check your configuration!", plain_status = 404 }
local NO_UPSTREAM = { code = -119, plain_status = 503,
    message = "Can not find healthy upstream url, please check your configuration!" }
local NO_CACHE = { code = 503, message = "Service Unavailable: no route table loaded yet",
    plain_status = 503, http_status = 503 }

-- The per-worker state: configuration, the cache reader, the load balancers' state.
local worker = nil

local LEVELS = { notice = ngx.NOTICE, warn = ngx.WARN, error = ngx.ERR }
local function log(level, msg)
    ngx.log(LEVELS[level] or ngx.ERR, msg)
end

-- configure{ path = dir, errors = "shenyu"|"plain", debug_headers = false,
--            client_address = "nginx"|"shenyu", balance_dict = "gwsync_balance",
--            refresh_interval = 0.1, sign = true, sign_delay = 5,
--            gc_pause = nil, gc_stepmul = nil, route_cache = 10000, route_cache_report = 60 }
-- gc_pause / gc_stepmul: the worker's Lua collector (collectgarbage "setpause" / "setstepmul";
-- LuaJIT's defaults 200 / 200 when nil). The route table is most of the heap and every
-- request leaves garbage (about 0.75 KB): at 200 the heap grows to about twice the table
-- before a cycle starts, and the cycle lets it grow further while it walks the table. A lower
-- pause with a larger step multiplier keeps the worker near the table's size for collector
-- CPU (README, Performance notes, "Memory under load").
-- route_cache: entries of the route cache (gwsync.routecache: answers kept by request path
-- while every item reads only the path), 0 = off; route_cache_report: seconds between two
-- notice lines with its hits and misses (0 = none).
function M.configure(opts)
    assert(type(opts) == "table" and type(opts.path) == "string" and opts.path ~= "",
        "gwsync.gateway.configure needs { path = <cache directory> }")
    local errors = opts.errors or "shenyu"
    assert(errors == "shenyu" or errors == "plain", "errors must be \"shenyu\" or \"plain\"")
    local client = opts.client_address or "nginx"
    assert(client == "nginx" or client == "shenyu", "client_address must be \"nginx\" or \"shenyu\"")
    local interval = opts.refresh_interval or 0.1
    assert(type(interval) == "number" and interval > 0, "refresh_interval must be a number of seconds > 0")
    local dict = opts.balance_dict
    if dict == nil then dict = "gwsync_balance" end
    assert(dict == false or type(dict) == "string", "balance_dict must be a lua_shared_dict name or false")
    for _, k in ipairs({ "gc_pause", "gc_stepmul" }) do
        local v = opts[k]
        assert(v == nil or (type(v) == "number" and v > 0 and v == math.floor(v)),
            k .. " must be a whole number > 0 (a percentage)")
    end
    local rcache = opts.route_cache or routecache.DEFAULT
    assert(type(rcache) == "number" and rcache >= 0 and rcache == math.floor(rcache),
        "route_cache must be a whole number of entries >= 0")
    local rreport = opts.route_cache_report or 60
    assert(type(rreport) == "number" and rreport >= 0,
        "route_cache_report must be a number of seconds >= 0")
    local sign_delay = opts.sign_delay or sign.DELAY
    assert(type(sign_delay) == "number" and sign_delay >= 0 and sign_delay == math.floor(sign_delay),
        "sign_delay must be a whole number of minutes >= 0")
    worker = {
        path = opts.path,
        errors = errors,
        debug_headers = opts.debug_headers == true,
        client_address = client,
        refresh_interval = interval,
        balance_dict = dict,
        cache = nil,               -- made in the worker on first use (never in the master)
        updater = nil,
        balance_state = {},
        logged = {},               -- one-off log lines already written (bad upstream hosts)
        -- upstream -> its peer (or false: unusable), worked out once: keyed by the route
        -- table's upstream objects, so a rebuilt table's entries go with the old table
        peers = setmetatable({}, { __mode = "k" }),
        host_var = nil,            -- $gwsync_upstream_host settable? (learnt on first use)
        sign_on = opts.sign ~= false, -- ShenYu's sign plugin from APP_AUTH (gwsync.sign)
        sign_delay = sign_delay,   -- shenyu.sign.delay: minutes a signature's timestamp may be off
        gc_pause = opts.gc_pause,  -- the collector's settings, applied in each worker
        gc_stepmul = opts.gc_stepmul,
        route_cache = rcache,      -- the route cache's entries (0: off)
        route_cache_report = rreport,
        sign = nil,                -- the worker's gwsync.signcache
        debug_vars = nil,          -- $gwsync_debug_* settable? (learnt on first use, with
                                   -- debug_headers only)
    }
end

-- the worker timer's chore after each refresh: the limit-hit report (gwsync.limits). A
-- function of the module, not a closure made in state(): state() runs in every request, and
-- a closure made (or an upvalue closed) there would abort the JIT traces of access().
local function on_tick()
    local now = ngx.now()
    limits.report(log, now)
    if worker then routecache.report(log, now, worker.route_cache_report) end
end

local function state()
    local w = worker
    if not w then error("gwsync.gateway.configure() was not called (init_by_lua_block)") end
    if not w.cache then
        w.cache = cachemod.new{ path = w.path, log = log }
        w.updater = updatermod.new(w.cache, { interval = w.refresh_interval, log = log,
            on_tick = on_tick })
        if w.balance_dict then
            local d = ngx.shared and ngx.shared[w.balance_dict]
            if d then
                w.balance_state.shared = d
            else
                log("warn", "gwsync: no lua_shared_dict " .. w.balance_dict .. " (nginx.conf):"
                    .. " round-robin and least-active run per worker")
            end
        end
        if w.sign_on then
            w.sign = signcache.new{ cache = w.cache, log = log }
            w.updater:follow(w.sign)
            -- released before the cache closes its env (a replaced environment: cache.lua)
            w.cache.followers = { w.sign }
        end
        w.updater:start()
    end
    return w
end

-- init_worker(): the collector's settings, then start the worker's refresh timer, which
-- builds the first table at once
function M.init_worker()
    local w = worker
    if w and w.gc_pause then collectgarbage("setpause", w.gc_pause) end
    if w and w.gc_stepmul then collectgarbage("setstepmul", w.gc_stepmul) end
    state()
end

-- A JSON string literal (lua-cjson would escape "/" as "\/", ShenYu's Jackson does not).
local function json_string(s)
    s = tostring(s):gsub('[%c"\\]', function(c)
        if c == '"' then return '\\"' elseif c == "\\" then return "\\\\"
        elseif c == "\n" then return "\\n" elseif c == "\r" then return "\\r"
        elseif c == "\t" then return "\\t" end
        return string.format("\\u%04x", c:byte())
    end)
    return '"' .. s .. '"'
end

-- Answer an error: ShenYu's body and HTTP status, or a plain status.
local function answer(w, e, tbl)
    if w.debug_headers and tbl then ngx.header["X-Gwsync-Generation"] = tbl.generation end
    if w.errors == "plain" then
        ngx.status = e.plain_status or 500
        ngx.header["Content-Type"] = "text/plain"
        ngx.print(e.message, "\n")
    else
        ngx.status = e.http_status or 200
        ngx.header["Content-Type"] = "application/json"
        ngx.print('{"code":', tostring(e.code), ',"message":', json_string(e.message), "}")
    end
    return ngx.exit(ngx.status)
end

-- The blanks nginx leaves around a header value: space and tab.
local function blank(c) return c == 32 or c == 9 end

-- Header lines in order, names as sent. HTTP/1 has them raw; HTTP/2 only as a table.
-- The raw text is cut with plain find/sub/byte (no patterns: those are not JIT-compiled and
-- cost a capture per line); a line is `name:value`, the value without surrounding blanks,
-- and a line with no name or no ":" is skipped.
local function header_lines()
    local out, n = {}, 0
    local ok, raw = pcall(ngx.req.raw_header, true)
    if ok and raw then
        local i, len = 1, #raw
        while i <= len do
            local e = find(raw, "\n", i, true) or len + 1
            local le = e - 1
            if le >= i and byte(raw, le) == 13 then le = le - 1 end
            local colon = find(raw, ":", i, true)
            if colon and colon > i and colon <= le then
                local vs, ve = colon + 1, le
                -- one blank after the colon is the common case: skip it without a loop
                -- (a loop run once per header poisons the JIT's traces of access())
                if vs <= ve and blank(byte(raw, vs)) then
                    vs = vs + 1
                    if vs <= ve and blank(byte(raw, vs)) then
                        while vs <= ve and blank(byte(raw, vs)) do vs = vs + 1 end
                    end
                end
                if ve >= vs and blank(byte(raw, ve)) then
                    while ve >= vs and blank(byte(raw, ve)) do ve = ve - 1 end
                end
                n = n + 1
                out[n] = { sub(raw, i, colon - 1), sub(raw, vs, ve) }
            end
            i = e + 1
        end
        return out
    end
    for name, value in pairs(ngx.req.get_headers(0, true)) do
        if type(value) == "table" then
            for _, v in ipairs(value) do n = n + 1; out[n] = { name, v } end
        else
            n = n + 1; out[n] = { name, value }
        end
    end
    return out
end

-- The parts of the raw request the router reads only for some conditions, fetched from
-- nginx on first use and kept in the request's table.
local LAZY = {
    headers = header_lines,
    query = function() return ngx.var.args end,
    remote_addr = function() return ngx.var.remote_addr end,
    now = function() return ngx.time() end,
    content_length = function() return tonumber(ngx.var.http_content_length) end,
    -- the load balancer asks every routed request for `specify-domain`: nginx's own header
    -- index answers "there is none" without splitting the header lines in Lua ($http_*
    -- matches names case-insensitively; a request nginx sees no such header in has no
    -- `specify-domain` line the Lua parser would find either)
    no_specify_domain = function() return ngx.var.http_specify_domain == nil end,
}
local RAW_META = {
    __index = function(raw, key)
        local f = LAZY[key]
        if not f then return nil end
        local v = f()
        rawset(raw, key, v)
        return v
    end,
}

-- The request as the router reads it (gwsync.request): path and method now, the rest lazily.
local function raw_request(w)
    local uri = ngx.var.request_uri or "/"
    local q = find(uri, "?", 1, true)
    return setmetatable({
        path = q and sub(uri, 1, q - 1) or uri,
        method = ngx.req.get_method(),
        now_ms = false,            -- the balancer's clock: ngx.now() (a test may set it)
        client_address = w.client_address,
        -- asked by the load balancer for every routed request: read here, so the table is
        -- made at its final size (a key added later grows it: a second allocation)
        no_specify_domain = ngx.var.http_specify_domain == nil,
    }, RAW_META)
end

-- An address set_current_peer takes without a resolver: IPv4 dotted quad or IPv6.
local function ip_literal(host)
    if type(host) ~= "string" then return nil end
    local h = host:match("^%[(.*)%]$") or host
    if h:match("^%d+%.%d+%.%d+%.%d+$") or (h:find(":", 1, true) and h:match("^[%x:.]+$")) then
        return h
    end
    return nil
end

-- A usable upstream: { up = upstream, addr = ip, port = n } | nil (logged once per url)
local function check_peer(w, up)
    local addr = ip_literal(up.host)
    local port = tonumber(up.port)
    local why
    if not addr or not port then
        why = "is not an IP literal with a port; nginx cannot resolve names in the balancer phase"
    elseif up.protocol and up.protocol ~= "" and up.protocol ~= "http://" then
        why = "has protocol '" .. tostring(up.protocol) .. "'; this gateway proxies http:// only"
    end
    if why then
        if not w.logged[up.url] then
            w.logged[up.url] = true
            log("error", "gwsync: upstream '" .. tostring(up.url) .. "' " .. why
                .. ", treating it as unhealthy")
        end
        return nil
    end
    return { up = up, addr = addr, port = port }
end

-- check_peer, remembered per upstream object (a route table's upstreams live as long as it)
local function peer(w, up)
    if not up then return nil end
    local p = w.peers[up]
    if p == nil then
        p = check_peer(w, up) or false
        w.peers[up] = p
    end
    return p or nil
end

-- The load balancer's choice among the usable upstreams not in `tried` (unusable ones
-- are added to `tried` and the balancer asked again). peer, tried | nil
local function pick_more(w, ups, h, req, tried)
    for _ = 1, #(ups or {}) do
        local up = balance.select_in(ups, h, req, w.balance_state, tried)
        if not up then return nil end
        tried[up.url] = true
        local p = peer(w, up)
        if p then return p, tried end
    end
    return nil
end

-- pick(w, upstreams, handle, req, tried) -> peer, tried | nil. The first choice is made without a loop and
-- without a `tried` set (the balancer's plain path): a usable first choice, the common case,
-- returns tried = nil, and the balancer phase makes the set only when it fails over. (A loop
-- left on its first pass would make LuaJIT abort the traces of access().)
local function pick(w, ups, h, req, tried)
    local up = balance.select_in(ups, h, req, w.balance_state, tried)
    if not up then return nil end
    if tried then tried[up.url] = true end
    local p = peer(w, up)
    if p then return p, tried end
    return pick_more(w, ups, h, req, tried or { [up.url] = true })
end

-- What access() hands the balancer phase (ngx.ctx.gwsync), one small array per routed
-- request (a table of named fields is a hash part: three times the bytes to allocate and
-- collect): the rule and the selector node as route() gave them (a change later makes new
-- ones, never modifies these), the request, the peer of the current try, the tries made,
-- the upstream urls tried (a set, made on the first failover) and, with debug headers, the
-- generation.
local G_RULE, G_SEL, G_REQ, G_PEER, G_TRIES, G_TRIED, G_GEN = 1, 2, 3, 4, 5, 6, 7

local function assign_host_var(url)
    ngx.var.gwsync_upstream_host = url
end

-- `set $gwsync_upstream_host ""` in the location makes it writable; absent is fine (then the
-- location sends a Host of its own). Learnt once per worker: no pcall per request.
local function set_host_var(w, url)
    if w.host_var then
        ngx.var.gwsync_upstream_host = url
    elseif w.host_var == nil then
        w.host_var = pcall(assign_host_var, url)
    end
end

local function assign_debug_vars(g)
    local v = ngx.var
    v.gwsync_debug_upstream = g[G_PEER].up.url
    v.gwsync_debug_selector = g[G_SEL].id
    v.gwsync_debug_rule = g[G_RULE].id
    v.gwsync_debug_generation = g[G_GEN]
end

-- debug_headers: the response's X-Gwsync-* headers through the location's `add_header ...
-- $gwsync_debug_*` (nginx.conf). Learnt once per worker whether the location declares the
-- variables; without them (an older configuration) header_filter() adds the headers.
local function set_debug_vars(w, g)
    if w.debug_vars then
        assign_debug_vars(g)
    elseif w.debug_vars == nil then
        w.debug_vars = pcall(assign_debug_vars, g)
    end
end

function M.access()
    local w = state()
    local tbl, newer = w.cache:current()
    if newer then
        w.updater:wake()                     -- the timer applies it; this request goes on
        -- but with the sign plugin on, a change of its data (a few keys through the change
        -- log: an app revoked) is applied now, so that this request is checked against it
        local sc = w.sign
        if sc and sc.tbl.enabled then sc:catch_up() end
    end
    if not tbl or (w.sign and not w.sign.loaded) then
        -- the worker's first table (or its first sign table: never let a request through
        -- unchecked) is being built
        tbl = w.updater:wait_first(30)
        if not tbl then return answer(w, NO_CACHE) end
    end
    local req = request.new(raw_request(w))
    -- ShenYu's sign plugin runs before divide: its refusal is the answer
    local st = w.sign and w.sign.tbl
    if st and st.enabled then
        local deny = sign.access(st, req, w.sign_delay)
        if deny then return answer(w, deny, tbl) end
    end
    -- No pcall here: a LuaJIT trace that returns through a pcall frame aborts, and the router
    -- is the hot path. route() answers ShenYu's errors itself; a Lua error from it (a bug)
    -- fails the access phase, which nginx logs and answers with its 500 page.
    local rule, sel = router.route(tbl, req, w.route_cache)
    if not sel then
        if rule.action == "skip" then return answer(w, SKIP, tbl) end
        return answer(w, rule, tbl)
    end
    local p, tried = pick(w, sel.upstreams, rule.handle, req, nil)
    if not p then return answer(w, NO_UPSTREAM, tbl) end
    -- what the balancer phase (and its retries) use (G_* above)
    local g = { rule, sel, req, p, 0, tried, w.debug_headers and tbl.generation or nil }
    ngx.ctx.gwsync = g
    set_host_var(w, p.up.url)
    if w.debug_headers then set_debug_vars(w, g) end
end

function M.balancer()
    local b = ngx_balancer
    local w = state()
    local g = ngx.ctx.gwsync
    if not g then
        log("error", "gwsync: balancer without a routed request (is access_by_lua_block set?)")
        return ngx.exit(ngx.ERROR)
    end
    local rule, sel = g[G_RULE], g[G_SEL]
    local h = rule.handle or DEFAULT_HANDLE
    local failover = h.retry_strategy == "failover"
    local p = g[G_PEER]
    local tries = g[G_TRIES]
    if tries == 0 then
        local retry = tonumber(h.retry) or 0
        if failover then retry = math.min(retry, #sel.upstreams - 1) end
        if retry > 0 then
            local ok, err = b.set_more_tries(retry)
            if not ok then log("error", "gwsync: set_more_tries: " .. tostring(err)) end
        end
        local t = tonumber(h.timeout)
        if t and t > 0 then
            local ok, err = b.set_timeouts(t / 1000, t / 1000, t / 1000)
            if not ok then log("error", "gwsync: set_timeouts: " .. tostring(err)) end
        end
    elseif failover then
        -- the upstreams tried so far: the first choice, when access() made no set
        local tried = g[G_TRIED]
        if not tried then tried = { [p.up.url] = true }; g[G_TRIED] = tried end
        p = pick(w, sel.upstreams, h, g[G_REQ], tried)
        if not p then
            log("error", "gwsync: no other healthy upstream to fail over to")
            return ngx.exit(ngx.ERROR)
        end
        g[G_PEER] = p
        set_host_var(w, p.up.url)
        if w.debug_vars then ngx.var.gwsync_debug_upstream = p.up.url end
        if b.recreate_request then b.recreate_request() end   -- the Host header changed
    end
    g[G_TRIES] = tries + 1
    local ok, err = b.set_current_peer(p.addr, p.port)
    if not ok then
        log("error", "gwsync: set_current_peer(" .. p.addr .. ", " .. p.port .. "): " .. tostring(err))
        return ngx.exit(ngx.ERROR)
    end
end

-- header_filter(): the debug headers for a configuration whose location has no
-- `$gwsync_debug_*` variables (written before them); a no-op otherwise
function M.header_filter()
    local w = worker
    if not (w and w.debug_headers) or w.debug_vars then return end
    local g = ngx.ctx.gwsync
    if g and g[G_PEER] then
        local h = ngx.header
        h["X-Gwsync-Upstream"] = g[G_PEER].up.url
        h["X-Gwsync-Selector"] = g[G_SEL].id
        h["X-Gwsync-Rule"] = g[G_RULE].id
        h["X-Gwsync-Generation"] = g[G_GEN]
    end
end

return M
