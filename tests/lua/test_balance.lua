-- Load balancing and upstream choice (DIVIDE-SEMANTICS §6).
local T = require "tinytest"
local request = require "gwsync.request"
local balance = require "gwsync.balance"

local function up(url, weight, extra)
    local u = { url = url, protocol = "http://", weight = weight or 50, status = true, timestamp = 0, warmup = 0 }
    for k, v in pairs(extra or {}) do u[k] = v end
    return u
end
local function req(t)
    t = t or {}
    t.path = "/"; t.method = "GET"; t.headers = t.headers or {}; t.remote_addr = t.remote_addr or "127.0.0.1"
    t.now_ms = t.now_ms or 1000000
    return request.new(t)
end
local function result(lb, ups) return { handle = { load_balance = lb }, upstreams = ups } end
local THREE = { up("127.0.0.1:8081"), up("127.0.0.1:8082"), up("127.0.0.1:8083") }

T.case("hash(): md5 bytes 0..3 little-endian unsigned", function()
    T.eq(balance.hash("SHENYU-127.0.0.1:8081-HASH-0"), 3875795544)
    T.eq(balance.hash("127.0.0.1"), 1299589365)
end)

-- expected upstreams computed independently with Python's hashlib (see the report)
local HASH_CASES = {
    { "127.0.0.1", "127.0.0.1:8081" }, { "192.168.0.77", "127.0.0.1:8083" },
    { "10.0.0.1", "127.0.0.1:8082" }, { "::1", "127.0.0.1:8083" },
    { "10.0.167.1", "127.0.0.1:8081" }, -- hash above every node: wraps to the first node
}
for _, c in ipairs(HASH_CASES) do
    T.case("hash picks the first node >= hash(" .. c[1] .. ")", function()
        T.eq(balance.select(result("hash", THREE), req { remote_addr = c[1] }, {}).url, c[2])
    end)
end
T.case("hash uses the socket address, not X-Forwarded-For", function()
    local r = req { remote_addr = "127.0.0.1", headers = { { "X-Forwarded-For", "10.0.0.1, 1.1.1.1" } } }
    T.eq(balance.select(result("hash", THREE), r, {}).url, "127.0.0.1:8081")
end)

T.case("roundRobin is smooth weighted (5,1,1 -> a a b a c a a)", function()
    local ups = { up("a:1", 5), up("b:1", 1), up("c:1", 1) }
    local state, got = {}, {}
    for i = 1, 7 do got[i] = balance.select(result("roundRobin", ups), req(), state).url:sub(1, 1) end
    T.eq(table.concat(got), "aabacaa")
end)
T.case("roundRobin ties go to the earlier entry", function()
    local state, got = {}, {}
    for i = 1, 6 do got[i] = balance.select(result("roundRobin", THREE), req(), state).url:sub(-1) end
    T.eq(table.concat(got), "123123")
end)
T.case("roundRobin: a changed weight resets that upstream's current value", function()
    local state = {}
    local ups = { up("a:1", 1), up("b:1", 1) }
    T.eq(balance.select(result("roundRobin", ups), req(), state).url, "a:1")
    local ups2 = { up("a:1", 1), up("b:1", 3) }
    T.eq(balance.select(result("roundRobin", ups2), req(), state).url, "b:1")
end)

T.case("random is weighted when weights differ", function()
    local ups = { up("a:1", 1), up("b:1", 3) }
    local function pick(r) return balance.select(result("random", ups), req(), { random = function() return r end }).url end
    T.eq(pick(0), "a:1"); T.eq(pick(1), "b:1"); T.eq(pick(3), "b:1")
end)
T.case("random is uniform when all weights are equal", function()
    local seen = {}
    local state = { random = function(n) T.eq(n, 3); return 2 end }
    T.eq(balance.select(result("random", THREE), req(), state).url, "127.0.0.1:8083")
end)
T.case("random spreads over all upstreams with math.random", function()
    math.randomseed(7)
    local seen = {}
    for _ = 1, 200 do seen[balance.select(result("random", THREE), req(), {}).url] = true end
    T.truthy(seen["127.0.0.1:8081"] and seen["127.0.0.1:8082"] and seen["127.0.0.1:8083"], "all three")
end)
T.case("shortestResponse behaves as weighted random", function()
    local ups = { up("a:1", 1), up("b:1", 3) }
    T.eq(balance.select(result("shortestResponse", ups), req(), { random = function() return 0 end }).url, "a:1")
end)
T.case("leastActive picks the least picked so far", function()
    local state, got = {}, {}
    for i = 1, 4 do got[i] = balance.select(result("leastActive", THREE), req(), state).url:sub(-1) end
    T.eq(table.concat(got), "1231")
end)

T.case("warmup scales the weight linearly, at least 1", function()
    local u = up("a:1", 100, { timestamp = 1000, warmup = 1000 })
    T.eq(balance.weight(u, 1500), 50)
    T.eq(balance.weight(u, 1001), 1)
    T.eq(balance.weight(u, 2000), 100)
    T.eq(balance.weight(up("b:1", 7, { status = false }), 5000), 0)
end)

-- AbstractLoadBalancer.getWeight in Java float arithmetic with an (int) uptime; expected values
-- printed by that formula compiled with javac (17): {weight, warmup, timestamp, now, want}
local WARMUP_CASES = {
    { 9, 30, 1000, 1010, 3 },   -- double gives 10 / (30 / 9) = 2.9999999999999996 -> 2
    { 14, 2, 1000, 1001, 6 },   -- double gives 7
    { 14, 18, 1000, 1009, 7 },  -- double gives 6
    { 100, 600001, 1000, 601000, 99 },
    { 100, 1000, 1000, 4294968296 + 500, 50 }, -- (int) (now - timestamp) keeps the low 32 bits
    { 100, 1000, 1000, 1000, 100 },            -- uptime 0: full weight
    { 100, 1000, 1000, 999, 100 },             -- clock behind the timestamp: full weight
}
for _, c in ipairs(WARMUP_CASES) do
    T.case(string.format("warmup weight (w=%d warmup=%d uptime=%.0f) is Java's float result %d",
        c[1], c[2], c[4] - c[3], c[5]), function()
        T.eq(balance.weight(up("a:1", c[1], { timestamp = c[3], warmup = c[2] }), c[4]), c[5])
    end)
end

T.case("one upstream is returned directly", function()
    T.eq(balance.select(result("hash", { up("only:1") }), req(), {}).url, "only:1")
end)
T.case("specify-domain forces a known upstream", function()
    local r = req { headers = { { "specify-domain", "127.0.0.1:8082" } } }
    T.eq(balance.select(result("hash", THREE), r, {}).url, "127.0.0.1:8082")
end)
T.case("specify-domain naming an unknown url falls back to the balancer", function()
    local r = req { headers = { { "specify-domain", "9.9.9.9:1" } }, remote_addr = "127.0.0.1" }
    T.eq(balance.select(result("hash", THREE), r, {}).url, "127.0.0.1:8081")
end)
T.case("tried upstreams are left out (failover)", function()
    local r = req { remote_addr = "127.0.0.1" }
    T.eq(balance.select(result("hash", THREE), r, {}, { ["127.0.0.1:8081"] = true }).url ~= "127.0.0.1:8081", true)
    T.eq(balance.select(result("hash", THREE), r, {}, {
        ["127.0.0.1:8081"] = true, ["127.0.0.1:8082"] = true, ["127.0.0.1:8083"] = true }), nil)
end)
-- a lua_shared_dict as ngx.shared gives it: get / incr(key, 1, 0) -> new value
local function fake_dict()
    local d = { v = {} }
    function d:get(k) return self.v[k] end
    function d:incr(k, by, init) self.v[k] = (self.v[k] or init) + by; return self.v[k] end
    return d
end

T.case("rr_sequence is the smooth weighted round robin from a zero state, period total/gcd", function()
    local seq = balance.rr_sequence({ 5, 1, 1 }, 3)
    T.eq(#seq, 7); T.eq(table.concat(seq), "1121311")          -- a a b a c a a
    T.eq(#balance.rr_sequence({ 100, 50 }, 2), 3)
    T.eq(table.concat(balance.rr_sequence({ 0, 0 }, 2)), "1")   -- all weights 0: the first
    math.randomseed(3)
    for _ = 1, 300 do
        local m = math.random(1, 5)
        local ups, ws = {}, {}
        for i = 1, m do
            ws[i] = math.random(0, 12) * ({ 1, 5, 10 })[math.random(3)]
            ups[i] = up("u" .. i .. ":1", ws[i])
        end
        local seq = balance.rr_sequence(ws, m)
        local state = {}
        for k = 1, 2 * #seq do
            T.eq(balance.select(result("roundRobin", ups), req(), state).url,
                 ups[seq[(k - 1) % #seq + 1]].url, "pick " .. k)
        end
    end
end)

T.case("roundRobin with a shared dictionary: one sequence whichever worker picks", function()
    local dict = fake_dict()
    local w1, w2 = { shared = dict }, { shared = dict }   -- two workers' states, one dictionary
    local ups = { up("a:1", 2), up("b:1", 1) }
    local got = {}
    for i = 1, 6 do
        got[i] = balance.select(result("roundRobin", ups), req(), i % 2 == 1 and w1 or w2).url:sub(1, 1)
    end
    T.eq(table.concat(got), "abaaba")
    -- without the dictionary each worker has its own sequence
    local l1, l2 = {}, {}
    for i = 1, 6 do
        got[i] = balance.select(result("roundRobin", ups), req(), i % 2 == 1 and l1 or l2).url:sub(1, 1)
    end
    T.eq(table.concat(got), "aabbaa")
end)

T.case("roundRobin during an upstream's warm-up stays per worker (its weight moves)", function()
    local dict = fake_dict()
    local ups = { up("a:1", 100, { timestamp = 999000, warmup = 600000 }), up("b:1", 100) }
    balance.select(result("roundRobin", ups), req { now_ms = 1000000 }, { shared = dict })
    T.eq(next(dict.v), nil, "the shared counter is not used")
end)

T.case("leastActive with a shared dictionary counts every worker's picks", function()
    local dict = fake_dict()
    local ups = { up("a:1"), up("b:1"), up("c:1") }
    local got = {}
    for i = 1, 6 do got[i] = balance.select(result("leastActive", ups), req(), { shared = dict }).url:sub(1, 1) end
    T.eq(table.concat(got), "abcabc")
    T.eq(dict.v["la:http://a:1"], 2)
end)

-- The steady window (balance.steady): outside every warm-up the pick takes the weights worked
-- out once per list instead of weighing each upstream; these prove it picks what weighing
-- per pick does, at the exact millisecond a warm-up ends, and not one earlier.
local function shared_used(ups, now)
    local dict = fake_dict()
    balance.select(result("roundRobin", ups), req { now_ms = now }, { shared = dict })
    return next(dict.v) ~= nil
end
-- the argument rand() gets: the total weight (weighted) or the list size (uniform)
local function random_arg(ups, now)
    local got
    balance.select(result("random", ups), req { now_ms = now }, { random = function(n) got = n; return 0 end })
    return got
end

T.case("steady: the window opens at the latest warm-up end, not a millisecond earlier", function()
    -- a warms until 1100, c until 1500 (both weight 100, warmup from timestamp)
    local a = up("a:1", 100, { timestamp = 1000, warmup = 100 })
    local b = up("b:1", 100)
    local c = up("c:1", 100, { timestamp = 1300, warmup = 200 })
    local ups = { a, b, c }
    local s, still = balance.steady(ups, 1600)
    T.eq(still, true); T.eq(s.from, 1500); T.eq(s.till, 1000 + 4294967296 + 1)
    T.eq(select(2, balance.steady(ups, 1499)), false, "c ramping at 1499")
    T.eq(shared_used(ups, 1499), false, "c still warming at 1499 (weight 99)")
    T.eq(shared_used(ups, 1499.999), false, "floor(now) is still 1499")
    T.eq(shared_used(ups, 1500), true, "every weight constant from 1500")
    T.eq(random_arg(ups, 1499), 100 + 100 + 99, "weighted: c's ramp weight")
    T.eq(random_arg(ups, 1500), 3, "uniform: all equal")
    T.eq(random_arg(ups, 1200), 3, "a done; c before its timestamp (uptime < 0): full weight")
    T.eq(random_arg(ups, 1400), 100 + 100 + 50, "a done, c half way")
end)

T.case("steady: an upstream finishing its warm-up between two picks of one list", function()
    local ups = { up("a:1", 3, { timestamp = 5000, warmup = 30 }), up("b:1", 1) }
    local dict, st = fake_dict(), {}
    st.shared = dict
    -- at 5029 a's weight is (int) (29 / (30 / 3)) = 2: per worker, 2:1 smooth round robin
    local p1 = balance.select(result("roundRobin", ups), req { now_ms = 5029 }, st).url
    T.eq(p1, "a:1"); T.eq(next(dict.v), nil, "per worker while a warms")
    -- at 5030 a has its weight 3: the shared sequence (3,1 -> a a b a ... from 1)
    T.eq(balance.select(result("roundRobin", ups), req { now_ms = 5030 }, st).url, "a:1")
    T.eq(dict.v["rr:b:1"] or dict.v["rr:a:1"], 1, "the shared counter taken at 5030")
end)

T.case("steady: an upstream created 900 days ago is between two of its ramps", function()
    local ts = 1716890400000 -- 2024-05-28 10:00 UTC; now 900 days later
    local now = ts + 900 * 86400000
    local q = (now - ts) % 4294967296
    local ups = { up("a:1", 100, { timestamp = ts, warmup = 10 }), up("b:1", 100) }
    local s, still = balance.steady(ups, now)
    T.eq(still, true)
    local till = now - q + 4294967296 + 1
    T.eq(s.from, now - q + 10); T.eq(s.till, till)
    T.eq(shared_used(ups, now), true)
    -- the next ramp: (int) uptime 1..9 at now - q + 2^32 + 1 .. + 9
    T.eq(shared_used(ups, till - 1), true)
    T.eq(shared_used(ups, till), false, "the ramp is back")
    T.eq(random_arg(ups, till + 4), 100 + 50)
    T.eq(shared_used(ups, till + 9), true, "and over")
    T.eq(shared_used(ups, now), true, "and back in the first window (a clock set back)")
end)

T.case("steady: Java's (int) uptime wraps after 2^32 ms and the ramp comes back", function()
    local ts = 1000
    local ups = { up("a:1", 100, { timestamp = ts, warmup = 1000 }), up("b:1", 100) }
    T.eq(shared_used(ups, ts + 4294967296), true, "uptime (int) 0: full weight")
    T.eq(shared_used(ups, ts + 4294967296 + 1), false, "uptime (int) 1: ramping again (weight 1)")
    T.eq(random_arg(ups, ts + 4294967296 + 1), 101)
    T.eq(random_arg(ups, ts + 4294967296 + 500), 150)
    T.eq(random_arg(ups, ts + 4294967296 + 1000), 2)
end)

T.case("steady: a down upstream weighs 0 and keeps round robin per worker", function()
    local ups = { up("a:1", 50, { status = false }), up("b:1", 50), up("c:1", 100) }
    local s, still = balance.steady(ups, 1000000)
    T.eq(still, true); T.eq(s.from, -math.huge); T.eq(s.till, math.huge); T.eq(s.shared, false)
    T.eq(shared_used(ups, 1000000), false)
    T.eq(random_arg(ups, 1000000), 150)
    local state, got = {}, {}
    for i = 1, 3 do got[i] = balance.select(result("roundRobin", ups), req(), state).url:sub(1, 1) end
    T.eq(table.concat(got), "cbc")
end)

T.case("steady: a changed list (a new table) gets its own window", function()
    local a, b = up("a:1", 10), up("b:1", 10)
    local ups1 = { a, b }
    T.eq(shared_used(ups1, 2000), true)
    local ups2 = { a, b, up("c:1", 10, { timestamp = 1990, warmup = 20 }) }
    T.eq(shared_used(ups2, 2000), false, "c warms until 2010")
    T.eq(shared_used(ups2, 2010), true)
    T.eq(shared_used(ups1, 2000), true, "the first list's window is unchanged")
end)

-- Differential: random lists and clocks around every warm-up's ends; inside the window each
-- weight equals balance.weight's, and the window is tight (the millisecond before it opens
-- or after it closes has a weight that differs, or the window is unbounded on that side).
T.case("steady agrees with balance.weight at every clock around the warm-up boundaries", function()
    math.randomseed(11)
    for _ = 1, 400 do
        local m, ups, cands = math.random(1, 5), {}, { 0, 1 }
        for i = 1, m do
            local ts = math.random(0, 3) == 0 and 0 or math.random(1, 5000)
            local u = up("u" .. i .. ":1", math.random(-1, 12), {
                timestamp = ts, warmup = math.random(0, 400), status = math.random(8) > 1 })
            ups[i] = u
            -- its ramp's ends, now and (Java's (int) wrap) 2^32 ms before, after and 18 x later
            for _, k in ipairs({ -1, 0, 1, 18 }) do
                for _, d in ipairs({ -1, 0, 1, 2, u.warmup - 1, u.warmup, u.warmup + 1 }) do
                    cands[#cands + 1] = ts + k * 4294967296 + d
                end
            end
        end
        local function all_steady(t, s)
            for i = 1, m do
                if balance.weight(ups[i], t) ~= s.ws[i] then return false end
            end
            return true
        end
        for _, t in ipairs(cands) do
            -- a fresh list (its window worked out at t) and the shared one (a window kept
            -- from earlier clocks, or found again): the same answer
            local s, still = balance.steady({ unpack(ups) }, t)
            T.eq(select(2, balance.steady(ups, t)), still, "the kept window at " .. t)
            T.eq(still, all_steady(t, s), "the window says whether every weight is steady at " .. t)
            if still then
                T.truthy(t >= s.from and t < s.till, "t in its window")
                T.truthy(all_steady(s.from, s) and all_steady(s.till - 1, s), "the window's ends")
                -- tight: the millisecond before it opens and the one it closes at differ
                if s.from > -math.huge then T.eq(all_steady(s.from - 1, s), false, "opens at " .. s.from) end
                if s.till < math.huge then T.eq(all_steady(s.till, s), false, "closes at " .. s.till) end
            end
            -- the picks: what weighing every upstream at t gives
            local total, same, shared = 0, true, true
            for i = 1, m do
                local w = balance.weight(ups[i], t)
                total = total + w
                if w ~= balance.weight(ups[1], t) then same = false end
                if w ~= ups[i].weight or w < 0 then shared = false end
            end
            if m > 1 then
                T.eq(random_arg(ups, t), (total > 0 and not same) and total or m, "random at " .. t)
                T.eq(shared_used(ups, t), shared, "round robin's shared sequence at " .. t)
            end
        end
    end
end)

T.done()
