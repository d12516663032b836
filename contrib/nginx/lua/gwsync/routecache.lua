-- gwsync.routecache: the router's answers kept by request path, the way Kong's router keeps
-- its match results (a bounded map keyed by what the routes read, negative answers included).
--
-- Why: matching a request costs about 4.5 us in nginx (bench/README.md, issue 29 part 1), and
-- it is memory latency, not instructions: between two requests nginx and the kernel evict the
-- route table from the CPU caches, and a request reads ~30 of its tables (index nodes, the
-- selector, every rule ShenYu tries). A hit reads one hash slot and one small pair instead.
--
-- When it is sound (gwsync.router decides; README, "The route cache"):
-- * The key is the request path (req.path, the raw path the uri conditions read), and only
--   that: the cache is used only while no item the router can evaluate reads anything else.
--   The table (gwsync.routes) counts such items incrementally (routes.rc_other): a selector or
--   rule with a header, query, cookie, ip, host, domain, req_method or post condition, a
--   TimeBefore/TimeAfter condition, or a condition that is not an object. While the count is
--   above 0 every request is routed without the cache ("bypassed").
-- * What else decides an answer is table state (the divide plugin's `enabled`, `continued`,
--   match modes, sorts, handles, upstream lists): any set() or finish() of the table drops its
--   cache (tbl.rc = nil, O(1)), and a table built aside starts without one, so a request after
--   a change never gets an answer from before it.
-- * What a cached proxy answer keeps is the decision before the rule's checks that read the
--   request (header and body size limits: router.finish runs again on every hit); a rule whose
--   load balancer fails (its answer depends on the `specify-domain` header) is never kept.
--
-- Memory is bounded by entries (configure{ route_cache = N }, 0 = off) and by key length (a
-- path over MAX_KEY bytes is routed, not kept): two generations of at most N/2 paths each;
-- when the newer is full it becomes the older and the older is dropped, and a hit in the older
-- copies the entry to the newer (so a hot path survives; a rough LRU without per-hit work).
-- A proxy answer is one {rule, sel} pair per rule per generation, shared by all its paths.
local M = {}

M.DEFAULT = 10000 -- entries: the working set of distinct paths a worker keeps (README)
M.MAX_KEY = 512   -- bytes: a longer path is not kept

-- per worker, since the process started: what route() did with the cache (the gateway's timer
-- logs them, report())
M.count = { hit = 0, miss = 0, bypass = 0 }

-- path_only(ptype, op) -> true when a condition reads the request path and nothing else (no
-- clock: TimeBefore / TimeAfter read the time whatever the paramType)
function M.path_only(ptype, op)
    return ptype == "uri" and op ~= "TimeBefore" and op ~= "TimeAfter"
end

local function new_rc(cap)
    local half = cap >= 2 and math.floor(cap / 2) or 1
    return { cap = cap, half = half, keep = cap >= 2, new = {}, n = 0, old = nil, memo = {} }
end

local function insert(rc, path, v)
    if rc.n >= rc.half then
        rc.old = rc.keep and rc.new or nil
        rc.new, rc.n, rc.memo = {}, 0, {}
    end
    rc.new[path] = v
    rc.n = rc.n + 1
end

-- get(tbl, path) -> the kept value (a {rule, sel} pair or a result table) | nil
function M.get(tbl, path)
    local rc = tbl.rc
    if rc then
        local v = rc.new[path]
        if v then
            M.count.hit = M.count.hit + 1
            return v
        end
        local old = rc.old
        if old then
            v = old[path]
            if v then
                M.count.hit = M.count.hit + 1
                insert(rc, path, v)
                return v
            end
        end
    end
    M.count.miss = M.count.miss + 1
    return nil
end

-- put(tbl, path, res, sel, cap): keep route's decision for path (rule, sel before the rule's
-- request checks, or a result with sel nil)
function M.put(tbl, path, res, sel, cap)
    if #path > M.MAX_KEY then return end
    local rc = tbl.rc
    if not rc or rc.cap ~= cap then
        rc = new_rc(cap)
        tbl.rc = rc
    end
    local v = res
    if sel then
        if res.lb_error then return end -- its answer reads the specify-domain header
        -- the pair of a rule (or, for the default rule, of the selector): one per generation
        local mk = res.selector_id and res or sel
        v = rc.memo[mk]
        if not v or v[2] ~= sel or v[1] ~= res then
            v = { res, sel }
            rc.memo[mk] = v
        end
    end
    insert(rc, path, v)
end

-- bypass(): one request routed without the cache (the table reads more than the path)
function M.bypass()
    M.count.bypass = M.count.bypass + 1
end

-- size(tbl) -> entries kept (both generations; tests)
function M.size(tbl)
    local rc = tbl.rc
    if not rc then return 0 end
    local n = 0
    for _ in pairs(rc.new) do n = n + 1 end
    if rc.old then
        for _ in pairs(rc.old) do n = n + 1 end
    end
    return n
end

-- report(log, now, interval): one notice line with the counts when they moved and `interval`
-- seconds have passed since the last line (the gateway's refresh timer calls it)
local last, reported = nil, -1
function M.report(log, now, interval)
    if not interval or interval <= 0 then return false end
    if last and now - last < interval then return false end
    local c = M.count
    local total = c.hit + c.miss + c.bypass
    if total == reported then return false end
    log("notice", string.format("gwsync: route cache: %d hits, %d misses, %d bypassed since the"
        .. " worker started (hit rate %.1f%%)", c.hit, c.miss, c.bypass,
        total > 0 and 100 * c.hit / total or 0))
    last, reported = now, total
    return true
end

return M
