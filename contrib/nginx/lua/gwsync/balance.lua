-- gwsync.balance: pick one upstream of a routed request as ShenYu's divide plugin does (§6).
--
-- select(result, req, state, tried):
--   * a `specify-domain` header equal to one offered upstream's url forces that upstream;
--   * otherwise the rule handle's loadBalance: one upstream is returned directly
--     (AbstractLoadBalancer), else roundRobin / random / hash / leastActive / p2c /
--     shortestResponse.
-- `state` is a table the caller keeps per worker (round-robin weights, least-active counts);
-- state.shared, when set, is an nginx shared dictionary (lua_shared_dict) through which every
-- worker takes the same round-robin sequence and the same least-active counts, as one ShenYu
-- gateway has one of each (see roundRobin below for how);
-- `tried` an optional set {url = true} of upstreams already tried by a failover retry, left out.
-- Weights follow AbstractLoadBalancer.getWeight: status down -> 0, and within `warmup` ms of
-- `timestamp` the weight ramps up linearly (at least 1).
local ffi = require "ffi"

local M = {}

local floor = math.floor
local byte = string.byte

---------------------------------------------------------------------------------------------
-- md5 (hash load balancer): ngx.md5_bin inside nginx, libcrypto's MD5() under plain luajit
---------------------------------------------------------------------------------------------
local md5_bin
if ngx and ngx.md5_bin then
    md5_bin = ngx.md5_bin
else
    pcall(ffi.cdef, "unsigned char *MD5(const unsigned char *d, size_t n, unsigned char *md);")
    local crypto
    for _, name in ipairs({ "libcrypto.so.3", "crypto" }) do
        local ok, l = pcall(ffi.load, name)
        if ok then crypto = l break end
    end
    local out = ffi.new("unsigned char[16]")
    md5_bin = function(s)
        crypto.MD5(s, #s, out)
        return ffi.string(out, 16)
    end
end

-- HashLoadBalancer.hash: MD5 bytes 0..3 as a little-endian unsigned 32-bit number
function M.hash(key)
    local d = md5_bin(key)
    local b0, b1, b2, b3 = byte(d, 1, 4)
    return b0 + b1 * 256 + b2 * 65536 + b3 * 16777216
end

---------------------------------------------------------------------------------------------
-- weights
---------------------------------------------------------------------------------------------
-- Java float arithmetic: a double rounded to the nearest float (ties to even), as (float) does.
-- One float operation computed in double and then rounded gives the float result exactly
-- (double has more than 2*24+2 bits), so fround(fround(a) / fround(b)) == (float)a / (float)b.
local f32 = ffi.new("float[1]")
local function fround(x)
    f32[0] = x
    return f32[0]
end

-- Java's (int) cast of a long: the low 32 bits, signed (exact for |x| < 2^53).
local function int32(x)
    x = x % 4294967296
    if x >= 2147483648 then x = x - 4294967296 end
    return x
end

-- AbstractLoadBalancer.getWeight: status down -> 0; within `warmup` ms of `timestamp` the
-- weight ramps up: (int) ((float) uptime / ((float) warmup / (float) weight)), at least 1 and
-- at most weight, with uptime = (int) (now - timestamp). The float arithmetic matters: in
-- double, 10 / (30 / 9) is 2.9999999999999996 (-> 2) where Java's float gives 3.
function M.weight(u, now_ms)
    if not u.status then return 0 end
    local w, ts, warmup = u.weight or 0, u.timestamp or 0, u.warmup or 0
    if w > 0 and ts > 0 then
        local uptime = int32(floor(now_ms) - ts)
        if uptime > 0 and uptime < warmup then
            local ww = floor(fround(fround(uptime) / fround(fround(warmup) / fround(w))))
            if ww < 1 then return 1 end
            return ww < w and ww or w
        end
    end
    return w
end

-- the clock (ms): a test's state.now_ms() or req.raw.now_ms, else nginx's cached ngx.now()
-- (looked up once: resty.core has replaced it with its FFI version before this module loads)
local ngx_now = ngx and ngx.now
local function now_ms(state, req)
    if state.now_ms then return state.now_ms() end
    local t = req.raw.now_ms
    if t then return t end
    if ngx_now then return ngx_now() * 1000 end
    return (req.raw.now or os.time()) * 1000
end

-- steady(list, t) -> s, still: the weights of the list's upstreams worked out once per list
-- (lists are immutable per route table), and whether now (t, ms) is inside s's window
-- [s.from, s.till), in which no weight moves, so that a pick there does not weigh every
-- upstream (M.weight) again. A weight moves only while 0 < (int) (floor(now) - timestamp) <
-- warmup: Java's (int) keeps the low 32 bits, so the ramp comes back every 2^32 ms (49.7
-- days), and an upstream created 900 days ago sits between two of its ramps, not after its
-- only one. For each upstream that ramps, q = (floor(t) - timestamp - 1) mod 2^32 + 1 (in
-- [1, 2^32]; what (int) gives, with 0 read as 2^32) says where t is: q < warmup is inside a
-- ramp (no window), else t is in the gap [floor(t) - q + warmup, floor(t) - q + 2^32 + 1);
-- the window is the intersection of the gaps, found again when a pick falls outside it.
-- Upstreams that never ramp (down: 0; weight <= 1, timestamp <= 0 or warmup <= 1: their
-- weight) do not bound it; one whose numbers are not integers leaves the list without a
-- window (weighed per pick). As floor(t) >= n <=> t >= n for an integer n, the window is
-- tested on t itself.
-- s.ws[i]: the weights inside any window, s.total, s.same (all equal), s.shared (round robin
-- may take the one sequence: every weight is its upstream's configured one, none negative).
local TWO32 = 4294967296
local function window(list, s, t)
    local ft = floor(t)
    local from, till = -math.huge, math.huge
    for i = 1, #list do
        if s.ramps[i] then
            local u = list[i]
            local q = (ft - u.timestamp - 1) % TWO32 + 1
            if q < u.warmup then
                s.from, s.till = math.huge, -math.huge -- inside a ramp: weighed per pick
                return false
            end
            if ft - q + u.warmup > from then from = ft - q + u.warmup end
            if ft - q + TWO32 + 1 < till then till = ft - q + TWO32 + 1 end
        end
    end
    s.from, s.till = from, till
    return true
end

local function steady(list, t)
    local s = list._steady
    if s then
        if t >= s.from and t < s.till then return s, true end
        if s.never then return s, false end
        return s, window(list, s, t)
    end
    local ws, ramps, total, same, shared, never = {}, {}, 0, true, true, false
    for i = 1, #list do
        local u = list[i]
        local w, ts, warmup = u.weight or 0, u.timestamp or 0, u.warmup or 0
        if not u.status then
            w = 0
        elseif w > 1 and ts > 0 and warmup > 1 then -- (a ramp to weight 1 is 1 throughout)
            ramps[i] = true
            if w % 1 ~= 0 or ts % 1 ~= 0 or warmup % 1 ~= 0 then never = true end
        end
        ws[i] = w
        total = total + w
        if w ~= ws[1] then same = false end
        if w ~= (u.weight or 0) or w < 0 then shared = false end
    end
    s = { from = math.huge, till = -math.huge, ws = ws, ramps = ramps, total = total,
          same = same, shared = shared, never = never }
    list._steady = s
    if never then return s, false end
    return s, window(list, s, t)
end
M.steady = steady

local function rand(state, n) -- 0 <= r < n (integer)
    if state.random then return state.random(n) end
    return math.random(n) - 1
end

---------------------------------------------------------------------------------------------
-- algorithms: fn(list, req, state) -> upstream (list has >= 2 entries)
---------------------------------------------------------------------------------------------
local ALGOS = {}

-- RandomLoadBalancer: weighted random unless all weights are equal or the total is 0.
-- (ShenYu searches one half of the list first: the same distribution.)
ALGOS.random = function(list, req, state)
    local t = now_ms(state, req)
    local n = #list
    local total, same, ws
    local s, still = steady(list, t)
    if still then
        total, same, ws = s.total, s.same, s.ws
    else
        local first
        total, same = 0, true
        ws = state._ws or {}
        state._ws = ws
        for i = 1, n do
            local w = M.weight(list[i], t)
            ws[i] = w
            total = total + w
            if i == 1 then first = w elseif w ~= first then same = false end
        end
    end
    if total > 0 and not same then
        local offset = rand(state, total)
        for i = 1, n do
            offset = offset - ws[i]
            if offset < 0 then return list[i] end
        end
    end
    return list[rand(state, n) + 1]
end

-- ShortestResponseLoadBalancer ranks by succeededAverageElapsed * inflight; inflight is only
-- counted for p2c, so every estimate is 0, all upstreams tie, and ShenYu picks by the same
-- weighted random as `random`.
ALGOS.shortestResponse = ALGOS.random

-- P2cLoadBalancer needs in-flight counts and response lags measured after the response; the
-- router has no response hook, so we fall back to uniform random over the list (what p2c does
-- when every load is equal, apart from its forced re-pick of long-unpicked upstreams).
ALGOS.p2c = function(list, req, state)
    return list[rand(state, #list) + 1]
end

-- RoundRobinLoadBalancer: smooth weighted round robin; state keyed by the first upstream's
-- url; a changed weight resets that upstream's current value; ties go to the earlier entry;
-- entries not seen for 60 s are dropped when the list size differs from the map size.
local function rr_local(list, t, state, s, still) -- still: the weights are s.ws (steady)
    local ws = s.ws
    local rr = state.rr
    if not rr then rr = {}; state.rr = rr end
    local key = list[1].url
    local map = rr[key]
    if not map then map = { n = 0, e = {} }; rr[key] = map end
    local total, best, best_cur, best_e = 0, nil, nil, nil
    for i = 1, #list do
        local u = list[i]
        local w = still and ws[i] or M.weight(u, t)
        local e = map.e[u.url]
        if not e then
            e = { weight = w, current = 0 }
            map.e[u.url] = e
            map.n = map.n + 1
        elseif e.weight ~= w then
            e.weight = w
            e.current = 0
        end
        e.current = e.current + w
        e.last = t
        if best_cur == nil or e.current > best_cur then
            best, best_cur, best_e = u, e.current, e
        end
        total = total + w
    end
    if map.n ~= #list then
        for url, e in pairs(map.e) do
            if t - e.last > 60000 then map.e[url] = nil; map.n = map.n - 1 end
        end
    end
    best_e.current = best_e.current - total
    return best
end

-- Shared across workers: from a zero state, smooth weighted round robin over fixed weights is
-- periodic (period = total weight / their gcd: each upstream is chosen weight/gcd times and
-- every current value is back to 0), so the n-th pick of the one sequence is seq[n mod
-- period], with n from one atomic counter per key in the shared dictionary (incr). Every
-- worker then takes its turn in one sequence, ShenYu's. Kept per worker instead: an
-- upstream within its warm-up (its weight changes with time) and a period over RR_MAX_PERIOD.
-- Unlike ShenYu's stateful map, a weight or list change does not keep the other upstreams'
-- current values: the new sequence is entered at the counter's position.
local RR_MAX_PERIOD = 4096

local function gcd(a, b)
    while b ~= 0 do a, b = b, a % b end
    return a
end

-- the pick sequence for the list's weights (positions in list), or nil (too long)
local function rr_sequence(ws, m)
    local total, g = 0, 0
    for i = 1, m do
        total = total + ws[i]
        g = gcd(g, ws[i])
    end
    if total == 0 then return { 1 } end
    local period = total / g
    if period > RR_MAX_PERIOD then return nil end
    local cur, seq = {}, {}
    for i = 1, m do cur[i] = 0 end
    for k = 1, period do
        local best
        for i = 1, m do
            local c = cur[i] + ws[i] / g
            cur[i] = c
            if best == nil or c > cur[best] then best = i end
        end
        cur[best] = cur[best] - period
        seq[k] = best
    end
    return seq
end
M.rr_sequence = rr_sequence

local function rr_shared(list, t, dict, s, still)
    local m = #list
    if still then
        -- no weight moves now (steady above): s.shared says what the loop below would
        if not s.shared then return nil end
    else
        for i = 1, m do
            local u = list[i]
            local w = M.weight(u, t)
            -- warming up (the weight moves with time), or a negative weight: per worker
            if w ~= (u.weight or 0) or w < 0 then return nil end
        end
    end
    local seq = s.seq
    if seq == nil then
        local ws = {}
        for i = 1, m do ws[i] = list[i].weight or 0 end
        seq = rr_sequence(ws, m) or false
        s.seq = seq -- lists are immutable per route table
    end
    if not seq then return nil end
    -- the counter's key, made once per list (a concatenation per request is a new string)
    local key = s.key
    if not key then key = "rr:" .. list[1].url; s.key = key end
    local n = dict:incr(key, 1, 0)
    if not n then return nil end
    return list[seq[(n - 1) % #seq + 1]]
end

ALGOS.roundRobin = function(list, req, state)
    local t = now_ms(state, req)
    local s, still = steady(list, t)
    local dict = state.shared
    if dict then
        local u = rr_shared(list, t, dict, s, still)
        if u then return u end
    end
    return rr_local(list, t, state, s, still)
end

-- HashLoadBalancer: 5 virtual nodes per upstream at hash("SHENYU-"..url.."-HASH-"..i), the key
-- is the socket peer address (no X-Forwarded-For); first node >= hash(ip), else the first node.
local function ring_of(list)
    local ring = list._ring
    if ring then return ring end
    local by = {}
    for _, u in ipairs(list) do
        for i = 0, 4 do by[M.hash("SHENYU-" .. u.url .. "-HASH-" .. i)] = u end -- later wins
    end
    local keys = {}
    for k in pairs(by) do keys[#keys + 1] = k end
    table.sort(keys)
    local ups = {}
    for i, k in ipairs(keys) do ups[i] = by[k] end
    ring = { keys = keys, ups = ups }
    list._ring = ring -- lists are immutable per route table: cache the ring on it
    return ring
end
M.ring_of = ring_of

ALGOS.hash = function(list, req)
    local ring = ring_of(list)
    local h = M.hash(req:peer_ip())
    local keys = ring.keys
    local lo, hi = 1, #keys
    if keys[hi] < h then return ring.ups[1] end
    while lo < hi do
        local mid = floor((lo + hi) / 2)
        if keys[mid] >= h then hi = mid else lo = mid + 1 end
    end
    return ring.ups[lo]
end

-- LeastActiveLoadBalance: ShenYu counts picks per protocol+url and never decrements them, so
-- it is "least picked so far"; ties go to the first in ConcurrentHashMap order in ShenYu (not
-- reproducible), to the first in list order here. With a shared dictionary the counts are
-- the gateway's (every worker's picks), read and incremented without a lock: two workers
-- picking at the same moment may both take the same least-picked upstream, as two threads of
-- ShenYu's may.
ALGOS.leastActive = function(list, req, state)
    local dict = state.shared
    local la = state.la
    if not la then la = {}; state.la = la end
    local best, best_n
    for i = 1, #list do
        local u = list[i]
        local k = u.protocol .. u.url
        local n
        if dict then n = dict:get("la:" .. k) else n = la[k] end
        n = n or 0
        if best_n == nil or n < best_n then best, best_n = u, n end
    end
    local k = best.protocol .. best.url
    if not (dict and dict:incr("la:" .. k, 1, 0)) then la[k] = (la[k] or 0) + 1 end
    return best
end

M.ALGORITHMS = ALGOS

-- is_known(name) -> true if ShenYu has a load balancer of that name
function M.is_known(name)
    return ALGOS[name] ~= nil
end

---------------------------------------------------------------------------------------------
-- select
---------------------------------------------------------------------------------------------
local function without(list, tried)
    if not tried or next(tried) == nil then return list end
    local out = {}
    for i = 1, #list do
        if not tried[list[i].url] then out[#out + 1] = list[i] end
    end
    return out
end

-- specified(list, req) -> the upstream named by the `specify-domain` header, or nil
function M.specified(list, req)
    local want = req:specify_domain()
    if not want then return nil end
    for i = 1, #list do
        if list[i].url == want then return list[i] end
    end
    return nil
end

-- select_in(upstreams, handle, req, state, tried): select() for a route's upstream list and
-- rule handle as two values (the gateway keeps no result table per request)
function M.select_in(upstreams, h, req, state, tried)
    local list = without(upstreams or {}, tried)
    if #list == 0 then return nil end
    local forced = M.specified(list, req)
    if forced then return forced end
    if #list == 1 then return list[1] end
    local algo = ALGOS[h and h.load_balance or "random"]
    if not algo then return nil end -- router.route already answered 400/500 for these
    return algo(list, req, state or {})
end

function M.select(result, req, state, tried)
    return M.select_in(result.upstreams, result.handle, req, state, tried)
end

return M
