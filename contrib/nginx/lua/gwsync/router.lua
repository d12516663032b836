-- gwsync.router: route one request with a route table (gwsync.routes), as ShenYu's divide
-- plugin does (DIVIDE-SEMANTICS §4, §5).
--
-- The table is built and kept up to date item by item by gwsync.routes (compiled items from
-- gwsync.items); build(groups) here makes one from whole groups (tests, tools). route(tbl, req)
-- only evaluates conditions and returns what the table holds: no JSON decoding and, for a
-- proxied request, no allocation beyond the request's own caches. A proxied request gets two
-- values, the rule (the compiled RULE item: id, handle) and the selector node (id,
-- upstreams): no result object per rule or per request.
--
-- route() has two evaluations of the same semantics. The fast one (route_fast) asks the
-- table's index (gwsync.index) for the selectors whose tests are true for the request (the
-- index runs only the tests of selectors the path can match, and every selector it cannot
-- file), runs without a pcall and is what LuaJIT compiles; when a test says "ShenYu might throw
-- here" (rare: an invalid condition, a bad X-Forwarded-For entry, an undecodable path under
-- pathPattern) it gives up and the plain evaluation (route_plain: every selector in order,
-- conditions.match, errors raised as ShenYu throws them) answers the request under pcall.
--
-- Order: ShenYu sorts selectors (per plugin) and rules (per selector) stably by `sort`, ties
-- kept in arrival order (the admin's list order). The cache gives items in LMDB key order (by
-- id), the only order available, so ties are broken by key order: the list order is (sort,
-- key), and the fast path, whose candidates come from the index in no order, ranks them by
-- (score, sort, key), which picks the same winner as ShenYu's first-in-list.
-- Items that ShenYu would accept but then fail on with a NullPointerException (HTTP 500) for
-- every request that reaches them are left out (gwsync.items), with a warning.
local items = require "gwsync.items"
local routes = require "gwsync.routes"
local conditions = require "gwsync.conditions"
local handle = require "gwsync.handle"
local balance = require "gwsync.balance"
local errors = require "gwsync.errors"
local routecache = require "gwsync.routecache"

local M = {}

M.SKIP = { action = "skip" }
M.NO_SELECTOR = { action = "error", code = -107, plain_status = 404, http_status = 200,
    message = "divide:Can not find selector, please check your configuration!" }
M.NO_RULE = { action = "error", code = -102, plain_status = 404, http_status = 200,
    message = "divide:Rule not found!" }
M.NO_UPSTREAM = { action = "error", code = -119, plain_status = 503, http_status = 200,
    message = "Can not find healthy upstream url, please check your configuration!" }
M.HEADER_TOO_LARGE = { action = "error", code = 431, plain_status = 431, http_status = 200,
    message = "Request Header Fields Too Large" }
M.ENTITY_TOO_LARGE = { action = "error", code = 413, plain_status = 413, http_status = 200,
    message = "Request Entity Too Large" }

-- build(groups, opts) -> tbl
-- groups[NAME] is a list of raw item JSON texts in cache key order (their keys are made up:
-- the position, zero-padded) or { keys = {...}, values = {...} } with the cache keys.
-- opts.now_ms: the clock for upstream timestamps (tests); opts.flat: no index (tests).
-- tbl.warnings lists the warnings.
function M.build(groups, opts)
    groups = groups or {}
    local now_ms = (opts and opts.now_ms) or ((ngx and ngx.now) and ngx.now() * 1000 or os.time() * 1000)
    local tbl = routes.new(opts)
    for _, name in ipairs(routes.GROUPS) do
        local g = groups[name] or {}
        local keys, values = g.keys, g.values
        if not values then values = g end
        for i = 1, #values do
            local key = keys and keys[i] or string.format("%09d", i)
            tbl:set(name, key, items.compile(name, key, values[i], now_ms))
        end
    end
    tbl:finish()
    tbl.warnings = tbl:all_warnings()
    return tbl
end

---------------------------------------------------------------------------------------------
-- route
---------------------------------------------------------------------------------------------

-- pick(candidates, n) -> the winner by ShenYu's manyMatch*: max score, then min sort, then first
local function pick(cands, n)
    if n == 1 then return cands[1] end
    local best
    for i = 1, n do
        local c = cands[i]
        if c.score == nil then errors.raise_internal("conditionList is null") end
        if not best or c.score > best.score or (c.score == best.score and c.sort < best.sort) then
            best = c
        end
    end
    return best
end

local function header_bytes(req)
    local hs = req.raw.headers or {}
    local total = 0
    for i = 1, #hs do total = total + #hs[i][2] end
    return total
end

local DEFAULT_RULE = routes.DEFAULT_RULE

-- the rule's checks before proxying -> rule, sel | an error result
local function finish(rule, h, lb_error, sel, req)
    if h.header_max_size > 0 and header_bytes(req) > h.header_max_size then
        return M.HEADER_TOO_LARGE
    end
    if h.request_max_size > 0 and (req.raw.content_length or -1) > h.request_max_size then
        return M.ENTITY_TOO_LARGE
    end
    if #sel.upstreams == 0 then return M.NO_UPSTREAM end
    if lb_error and not balance.specified(sel.upstreams, req) then
        if lb_error.status == 400 then errors.raise_bad_request(lb_error.message) end
        errors.raise_internal(lb_error.message)
    end
    return rule, sel
end

-- route_plain: ShenYu's evaluation as written, raising its errors (gwsync.errors)
local function route_plain(tbl, req, cands)
    local sels = tbl.selectors
    if #sels == 0 then return M.NO_SELECTOR end
    local n = 0
    for i = 1, #sels do -- every selector is evaluated: a later one's error still counts
        local s = sels[i]
        if s.enabled then
            local hit
            if s.type == 1 then
                hit = s.has_conditions and conditions.match(s.match_mode, s.conds, req)
            else
                hit = true -- full flow (and any other type): conditions ignored
            end
            if hit then n = n + 1; cands[n] = s end
        end
    end
    if n == 0 then return M.NO_SELECTOR end
    local sel = pick(cands, n)

    if not sel.continued then
        return DEFAULT_RULE, sel -- its handle is handle.DEFAULT
    end
    local rules = sel.rules
    if #rules == 0 then return M.NO_RULE end
    local rule
    if sel.type == 0 then
        rule = rules[#rules] -- full flow: the last rule, its conditions and `enabled` unchecked
    else
        n = 0
        for i = 1, #rules do
            local r = rules[i]
            if r.raw_conds then items.compile_conds(r) end -- first use (gwsync.items)
            if r.enabled and conditions.match(r.match_mode, r.conds, req) then
                n = n + 1; cands[n] = r
            end
        end
        if n == 0 then return M.NO_RULE end -- no backtracking to other selectors
        rule = pick(cands, n)
    end
    return rule, sel -- before the rule's request checks (plain_whole, route())
end

-- route_plain's decision and the rule's request checks: the whole answer (raises)
local function plain_whole(tbl, req, cands)
    local rule, sel = route_plain(tbl, req, cands)
    if not sel then return rule end
    return finish(rule, rule.handle, rule.lb_error, sel, req)
end

-- run fn under pcall; ShenYu's errors it raises become results
local function caught(fn, a, b, c, d, e)
    local ok, res, sel = pcall(fn, a, b, c, d, e)
    if ok then return res, sel end
    if errors.is_ours(res) then return errors.result(res.status, res.message) end
    error(res, 0)
end

-- pick, or nil where pick raises (a candidate's score is nil); candidates come in any
-- order: ties on score and sort go to the smaller key (the earlier in list order)
local function pick_fast(cands, n)
    local best = cands[1]
    if best.score == nil then return nil end
    for i = 2, n do
        local c = cands[i]
        local cs = c.score
        if cs == nil then return nil end
        local bs = best.score
        if cs > bs or (cs == bs and (c.sort < best.sort or (c.sort == best.sort and c.key < best.key))) then
            best = c
        end
    end
    return best
end

-- route_fast: route_plain's answer, or nil where route_plain might raise. Same steps, with
-- the candidates the index finds and each selector's and rule's non-raising test
-- (gwsync.fastpath).
local function route_fast(tbl, req, cands)
    local n = tbl.index:match(req, cands, 0)
    if not n then return nil end
    if n == 0 then return M.NO_SELECTOR end
    local sel = cands[1]
    if n > 1 then
        sel = pick_fast(cands, n)
        if not sel then return nil end
    end

    if not sel.continued then
        return DEFAULT_RULE, sel -- its handle is handle.DEFAULT
    end
    local rules = sel.rules
    if #rules == 0 then return M.NO_RULE end
    local rule
    if sel.type == 0 then
        rule = rules[#rules] -- full flow: the last rule, its conditions and `enabled` unchecked
    else
        local rix = sel.rule_index
        if rix then
            n = rix:match(req, cands, 0)
            if not n then return nil end
        else
            -- the active rules packed (gwsync.fastpath.pack): the same tests, fewer tables read
            local P = sel.rpack
            n = 0
            for b = 1, #P, 4 do
                local hit = P[b](P, b, req)
                if hit then
                    n = n + 1; cands[n] = P[b + 3]
                elseif hit == nil then
                    return nil
                end
            end
        end
        if n == 0 then return M.NO_RULE end -- no backtracking to other selectors
        rule = cands[1]
        if n > 1 then rule = pick_fast(cands, n) end -- a rule's score is never nil
    end
    -- a load balancer that fails raises unless `specify-domain` names an upstream: leave
    -- that to route_plain (finish() without lb_error cannot raise)
    if rule.lb_error then return nil end
    return rule, sel -- the caller runs finish(): a cached decision runs it again per request
end

-- decide(tbl, req, cands) -> rule, sel before the rule's request checks (finish), or a
-- result, nil: what the route cache keeps
local function decide(tbl, req, cands)
    local res, sel = route_fast(tbl, req, cands)
    if res then return res, sel end
    return caught(route_plain, tbl, req, cands)
end

-- route(tbl, req, cache) -> rule, selector node (proxy: rule.id, rule.handle, rule.lb_error;
-- sel.id, sel.upstreams) | result, nil (SKIP, or an error: code, message, http_status,
-- plain_status); req is a gwsync.request object.
-- cache: the route cache's entries (gwsync.routecache; nil: its default, 0: off). While the
-- table's items read only the path, an answer is kept by req.path and given again until the
-- table changes; a kept proxy answer still runs the rule's request checks (finish).
-- No pcall unless route_fast gives up: a trace that returns through a pcall frame aborts
-- ("NYI: return to lower frame"), so the common request must not run inside one.
function M.route(tbl, req, cache)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands -- scratch list reused across requests (one request at a time)
    if not cands then cands = {}; tbl._cands = cands end
    cache = cache or routecache.DEFAULT
    local res, sel
    if cache > 0 and tbl.rc_other == 0 then
        local path = req.path
        local v = routecache.get(tbl, path)
        if v then
            local rule = v[1]
            if rule then return finish(rule, rule.handle, nil, v[2], req) end
            return v
        end
        res, sel = decide(tbl, req, cands)
        routecache.put(tbl, path, res, sel, cache) -- not a rule whose load balancer fails
    else
        if cache > 0 then routecache.bypass() end
        res, sel = route_fast(tbl, req, cands)
        if not res then return M.route_plain(tbl, req) end
    end
    if not sel then return res end
    if res.lb_error then return caught(finish, res, res.handle, res.lb_error, sel, req) end
    return finish(res, res.handle, nil, sel, req)
end

-- route_plain(tbl, req) -> as route(): the plain evaluation alone (route() without its fast
-- path; the differential test compares the two)
function M.route_plain(tbl, req)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands
    if not cands then cands = {}; tbl._cands = cands end
    return caught(plain_whole, tbl, req, cands)
end

-- result(rule, sel) -> { action = "proxy", selector = sel, rule = rule, handle, upstreams }
-- for a proxy answer of route(), the answer itself otherwise: one table to look at (tests,
-- tools; the gateway keeps the two values)
function M.result(res, sel)
    if not sel then return res end
    return { action = "proxy", selector = sel, rule = res, handle = res.handle,
             upstreams = sel.upstreams }
end

-- route_fast(tbl, req) -> as route(), or nil when the plain evaluation must decide (tests)
function M.route_fast(tbl, req)
    if not tbl.enabled then return M.SKIP end
    local cands = tbl._cands
    if not cands then cands = {}; tbl._cands = cands end
    local res, sel = route_fast(tbl, req, cands)
    if not sel then return res end
    return finish(res, res.handle, nil, sel, req)
end

return M
