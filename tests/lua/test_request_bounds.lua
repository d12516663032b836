-- What a request can cost (issue 29 part 2, contrib/nginx/README.md): large and odd request
-- input is matched as ShenYu matches it (the raw path, no %-decoding under `match`, no
-- dot-segment removal, empty tokens dropped), each part parsed once per request whatever the
-- number of conditions reading it; an item too large for the gateway (a million conditions)
-- is left out without holding the build, and the other selectors route. The CPU figures are
-- bench/README.md's (tests/lua/bench_bounds.lua); these cases check the answers.
local T = require "tinytest"
local cjson = require "cjson.safe"
local request = require "gwsync.request"
local router = require "gwsync.router"
local items = require "gwsync.items"

local DIVIDE_ON = cjson.encode({ id = "5", name = "divide", enabled = true })
local UPS = cjson.encode({ { upstreamUrl = "127.0.0.1:8081", protocol = "http://", weight = 50, status = true } })
local HANDLE = cjson.encode({ loadBalance = "random", retry = 0, timeout = 2000 })

local function cond(ptype, op, pv, pname)
    return { paramType = ptype, operator = op, paramValue = pv, paramName = pname or "/" }
end
local function sel(id, sort, conds)
    return cjson.encode({ id = id, pluginName = "divide", name = id, type = 1, matchMode = 0,
        sort = sort, enabled = true, logged = false, continued = true, handle = UPS,
        conditionList = conds })
end
local function rule(id, sid)
    return cjson.encode({ id = id, selectorId = sid, pluginName = "divide", name = id, matchMode = 0,
        sort = 1, enabled = true, loged = false, handle = HANDLE,
        conditionDataList = { cond("uri", "match", "/**") } })
end
-- a table of selectors (id, conditions) each with one catch-all rule
local function build(sels, extra)
    local S, R = {}, {}
    for i, s in ipairs(sels) do
        S[i] = sel(s[1], i, s[2])
        R[i] = rule("r-" .. s[1], s[1])
    end
    for _, text in ipairs(extra or {}) do S[#S + 1] = text end
    return router.build({ PLUGIN = { DIVIDE_ON }, SELECTOR = S, RULE = R }, { now_ms = 0 })
end
local function who(tbl, path, t)
    t = t or {}
    t.path = path; t.method = t.method or "GET"; t.headers = t.headers or {}
    t.remote_addr = "127.0.0.1"
    local res, s = router.route(tbl, request.new(t))
    if s then return s.id end
    return res.code or res.action
end

T.case("a selector of a million conditions is left out unread; the others route", function()
    local one = '{"paramType":"header","operator":"=","paramName":"x-a","paramValue":"1"},'
    local body = string.rep(one, 1000000)
    local big = '{"id":"big","pluginName":"divide","name":"big","type":1,"matchMode":1,"sort":0,'
        .. '"enabled":true,"logged":false,"continued":true,"conditionList":['
        .. body:sub(1, -2) .. '],"handle":' .. cjson.encode(UPS) .. '}'
    T.truthy(#big > items.MAX_BYTES, "over the limit")
    local tbl = build({ { "small", { cond("uri", "startsWith", "/s/") } } }, { big })
    -- left out before a byte is scanned or hashed (a compile of it holds a worker for seconds):
    -- its digest is its length, not a hash
    T.eq(tbl:get("SELECTOR", "000000002").digest, -#big, "not hashed")
    T.eq(who(tbl, "/s/x"), "small")
    T.eq(who(tbl, "/t", { headers = { { "x-a", "1" } } }), -107, "the big selector is absent")
    local warned = false
    for _, w in ipairs(tbl.warnings) do
        if w:find("over the " .. items.MAX_BYTES, 1, true) then warned = true end
    end
    T.truthy(warned, "a warning names it")
end)

T.case("an 8 KB path is matched whole (match, startsWith, regex, pathPattern)", function()
    local tail = string.rep("abcdefg/", 1000)
    local tbl = build({
        { "ant", { cond("uri", "match", "/ant/**/end") } },
        { "pre", { cond("uri", "startsWith", "/pre/") } },
        { "rx", { cond("uri", "regex", "/rx/[a-g/]+end") } },
        { "pp", { cond("uri", "pathPattern", "/pp/**") } },
    })
    T.eq(who(tbl, "/ant/" .. tail .. "end"), "ant")
    T.eq(who(tbl, "/ant/" .. tail .. "nd"), -107)
    T.eq(who(tbl, "/pre/" .. tail), "pre")
    T.eq(who(tbl, "/rx/" .. tail .. "end"), "rx")
    T.eq(who(tbl, "/pp/" .. tail), "pp")
end)

T.case("100 query arguments, 100 headers, 100 cookies: the last of each is found", function()
    local q, hs, ck = {}, {}, {}
    for i = 1, 100 do
        q[i] = "q" .. i .. "=v" .. i
        hs[i] = { "X-H" .. i, "h" .. i }
        ck[i] = "c" .. i .. "=k" .. i
    end
    hs[#hs + 1] = { "Cookie", table.concat(ck, "; ") }
    local tbl = build({
        { "q", { cond("query", "=", "v100", "q100") } },
        { "h", { cond("header", "=", "h100", "x-h100") } },
        { "c", { cond("cookie", "=", "k100", "c100") } },
    })
    T.eq(who(tbl, "/x", { query = table.concat(q, "&"), headers = hs }), "q")
    T.eq(who(tbl, "/x", { query = "q1=v1", headers = hs }), "h")
    local noh = {}
    for i = 1, 99 do noh[i] = hs[i] end
    noh[100] = hs[101]
    T.eq(who(tbl, "/x", { query = "q1=v1", headers = noh }), "c")
end)

T.case("%2F, dot segments and // are matched raw, as ShenYu matches them", function()
    local tbl = build({
        { "a", { cond("uri", "match", "/a/**") } },
        { "b", { cond("uri", "match", "/b/**") } },
        { "enc", { cond("uri", "match", "/e/x%2Fy") } },
        { "ppenc", { cond("uri", "pathPattern", "/p/{seg}") } },
    })
    -- no dot-segment removal: /a/../b is under /a as ShenYu's raw path is
    T.eq(who(tbl, "/a/../b/x"), "a")
    T.eq(who(tbl, "/b/./x"), "b")
    -- AntPathMatcher drops empty tokens: //b//x is /b/x
    T.eq(who(tbl, "//b//x"), "b")
    -- match: no %-decoding, %2F is not a separator
    T.eq(who(tbl, "/e/x%2Fy"), "enc")
    T.eq(who(tbl, "/e/x/y"), -107)
    -- pathPattern: the segment is %-decoded, but %2F stays inside one segment
    T.eq(who(tbl, "/p/x%2Fy"), "ppenc")
    T.eq(who(tbl, "/p/x/y"), -107)
end)

T.done()
