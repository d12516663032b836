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

T.done()
