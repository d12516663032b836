-- gwsync.sign / signtable / signalg / signbody under plain luajit: ShenYu's own sign test cases
-- (shenyu-plugin-sign's SignServiceVersionOneTest, SignServiceVersionTwoTest,
-- DefaultSignProviderTest, DefaultExtractorTest; shenyu-common's SignUtilsTest) as vectors, and
-- the selector/rule matching, app changes and error answers of SIGN-SEMANTICS.md.
-- tests/lua/test_sign_nginx.py runs the same kinds of requests through real nginx.
local T = require "tinytest"
local cjson = require "cjson"
local sign = require "gwsync.sign"
local signtable = require "gwsync.signtable"
local signalg = require "gwsync.signalg"
local signbody = require "gwsync.signbody"
local request = require "gwsync.request"

local APP_KEY = "D1DFC83F3BC64FABB89DFBD54E5A28C8"
local SECRET = "692C479F98C841FCBEB444B7CA775F63"
local PATH = "/test-api/demo/test"
local NOW = 1700000000000

local function md5_upper(s) return signalg.sign("MD5", "", s) end

-- SignServiceVersionOneTest.buildSign
local function sign_v1(secret, ts, path, body, query)
    local p = {}
    for k, v in pairs(body or {}) do p[k] = v end
    for k, v in pairs(query or {}) do p[k] = v end
    p.timestamp, p.path, p.version = ts, path, "1.0.0"
    local keys = {}
    for k in pairs(p) do if k ~= "sign" then keys[#keys + 1] = k end end
    table.sort(keys)
    local s = {}
    for i, k in ipairs(keys) do s[i] = k .. p[k] end
    return md5_upper(table.concat(s) .. secret)
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
    return ((s:gsub(".", function(x)
        local r, b = "", x:byte()
        for i = 8, 1, -1 do r = r .. (b % 2 ^ i - b % 2 ^ (i - 1) > 0 and "1" or "0") end
        return r
    end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(x)
        if #x < 6 then return "" end
        local c = 0
        for i = 1, 6 do c = c + (x:sub(i, i) == "1" and 2 ^ (6 - i) or 0) end
        return B64:sub(c + 1, c + 1)
    end) .. ({ "", "==", "=" })[#s % 3 + 1])
end

-- SignServiceVersionTwoTest.buildParameters / buildSign (JsonUtils.toJson of a HashMap)
local function params_v2(ts, ak, alg)
    local parts = {}
    if ts then parts[#parts + 1] = '"timestamp":"' .. ts .. '"' end
    if ak then parts[#parts + 1] = '"appKey":"' .. ak .. '"' end
    parts[#parts + 1] = '"alg":"' .. (alg or "MD5") .. '"'
    return b64("{" .. table.concat(parts, ",") .. "}")
end
local function sign_v2(secret, params, rel, body, alg)
    return signalg.sign(alg or "MD5", secret, params .. rel .. (body or ""))
end

-- the cache items
local function plugin(enabled) return cjson.encode({ id = "20", name = "sign", enabled = enabled }) end
local function sel(id, conds, extra)
    local o = { id = id, pluginName = "sign", type = 1, matchMode = 0, sort = 1, enabled = true,
                logged = true, continued = true, conditionList = conds }
    for k, v in pairs(extra or {}) do o[k] = v end
    return cjson.encode(o)
end
local function rul(id, sid, conds, handle, extra)
    local o = { id = id, selectorId = sid, pluginName = "sign", matchMode = 0, sort = 1,
                enabled = true, loged = true, conditionDataList = conds, handle = handle }
    for k, v in pairs(extra or {}) do o[k] = v end
    return cjson.encode(o)
end
local function uri(op, v) return { paramType = "uri", operator = op, paramName = "/", paramValue = v } end
local function app(extra)
    local o = { appKey = APP_KEY, appSecret = SECRET, enabled = true, open = true,
                pathDataList = { { appName = "test-api", path = PATH, enabled = true } } }
    for k, v in pairs(extra or {}) do o[k] = v end
    return cjson.encode(o)
end

local function table_of(items)
    local t = signtable.new()
    for _, it in ipairs(items) do t:set(it[1], it[2], signtable.compile(it[1], it[2], it[3])) end
    t:finish()
    return t
end

local function std_table(handle, app_json)
    return table_of({
        { "PLUGIN", "sign", plugin(true) },
        { "SELECTOR", "s1", sel("s1", { uri("startsWith", "/") }) },
        { "RULE", "r1", rul("r1", "s1", { uri("startsWith", "/") }, handle) },
        { "APP_AUTH", APP_KEY, app_json or app() },
    })
end

local function req_of(url, headers)
    local path, query = url:match("^([^?]*)%??(.*)$")
    local hs = {}
    for k, v in pairs(headers or {}) do hs[#hs + 1] = { k, v } end
    table.sort(hs, function(a, b) return a[1] < b[1] end)
    return request.new({ path = path, method = "GET", headers = hs }), url:find("?", 1, true) and query or nil
end

local function run(tbl, url, headers, body, now)
    local req, query = req_of(url, headers)
    return sign.check(tbl, req, { query = query, now_ms = now or NOW, delay = 5,
                                  body = body and function() return body end or nil })
end

local function v1_headers(ts, ak, sg)
    return { timestamp = ts, appKey = ak, sign = sg, version = "1.0.0" }
end

local function expect_pass(res, param)
    T.eq(res, nil, "refusal " .. (res and tostring(res.message) or ""))
    return param
end
local function expect_refusal(res, msg, code)
    T.truthy(res, "a refusal")
    T.eq(res.message, msg)
    T.eq(res.code, code or 401)
end

local TS = tostring(NOW)

-- version 1 (SignServiceVersionOneTest)
T.case("v1 normalTest", function()
    expect_pass(run(std_table(), "/test-api/demo/test",
        v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH))))
end)
T.case("v1 normalTestWithinConfiguredDelay (60 s old)", function()
    local ts = tostring(NOW - 60000)
    expect_pass(run(std_table(), PATH, v1_headers(ts, APP_KEY, sign_v1(SECRET, ts, PATH))))
end)
T.case("v1 nullTimestampTest", function()
    expect_refusal(run(std_table(), PATH, v1_headers(nil, APP_KEY, sign_v1(SECRET, TS, PATH))),
        "sign parameters are incomplete!")
end)
T.case("v1 nullSignTest", function()
    expect_refusal(run(std_table(), PATH, v1_headers(TS, APP_KEY, nil)), "sign parameters are incomplete!")
end)
T.case("v1 nullAppKeyTest", function()
    expect_refusal(run(std_table(), PATH, v1_headers(TS, nil, sign_v1(SECRET, TS, PATH))),
        "sign parameters are incomplete!")
end)
T.case("v1 overdueTest (6 minutes old)", function()
    local ts = tostring(NOW - 6 * 60000)
    expect_refusal(run(std_table(), PATH, v1_headers(ts, APP_KEY, sign_v1(SECRET, ts, PATH))),
        "The signature timestamp has exceeded 5 minutes!")
end)
T.case("v1 errorAppKeyTest", function()
    expect_refusal(run(std_table(), PATH, v1_headers(TS, "errorKey", sign_v1(SECRET, TS, PATH))),
        "sign appKey does not exist.")
end)
T.case("v1 emptyAuthPath", function()
    expect_refusal(run(std_table(nil, app({ pathDataList = {} })), PATH,
        v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH))), "you have not configured the sign path.")
end)
T.case("v1 fillParamPath / emptyParamPath", function()
    local a = app({ paramDataList = { { appName = "appParam", appParam = "appParam" } } })
    T.eq(expect_pass(run(std_table(nil, a), PATH, v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH)))), nil)
    -- the path's first segment names the app whose appParam goes upstream
    a = app({ paramDataList = { { appName = "test-api", appParam = "{\"tenant\":1}" } } })
    T.eq(expect_pass(run(std_table(nil, a), PATH, v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH)))),
        "{\"tenant\":1}")
end)
T.case("v1 errorAuthPath", function()
    expect_refusal(run(std_table(), "/errorPath", v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, "/errorPath"))),
        "you have not configured the sign path.")
end)
T.case("v1 errorSign", function()
    expect_refusal(run(std_table(), PATH, v1_headers(TS, APP_KEY, "errorSign")), "signature value is error!")
end)
T.case("v1 errorBodySign", function()
    expect_refusal(run(std_table('{"signRequestBody":true}'), PATH, v1_headers(TS, APP_KEY, "errorSign"),
        '{"data":"data"}'), "signature value is error!")
end)
T.case("v1 bodySign", function()
    expect_pass(run(std_table('{"signRequestBody":true}'), PATH,
        v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH, { data = "data" })), '{"data":"data"}'))
end)
T.case("v1 bodyAndUrlQueryParamsSign", function()
    expect_pass(run(std_table('{"signRequestBody":true}'), PATH .. "?data2=data",
        v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH, { data = "data" }, { data2 = "data" })),
        '{"data":"data"}'))
end)
T.case("v1 without body signing ignores the query and the body", function()
    expect_pass(run(std_table(), PATH .. "?name=Lee", v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH)),
        '{"x":1}'))
end)
T.case("v1 body values as Java renders them; the query overrides the body", function()
    local body = '{"n":12345678901234567890,"f":1.5,"e":1e7,"z":-0,"b":true,"nil":null,'
        .. '"o":{"a":1,"b":[1,"x"]},"q":"body"}'
    local expected = { n = "12345678901234567890", f = "1.5", e = "1.0E7", z = "0", b = "true",
        ["nil"] = "null", o = "{a=1, b=[1, x]}", q = "query" }
    expect_pass(run(std_table('{"signRequestBody":true}'), PATH .. "?q=query&flag",
        v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH, expected, { flag = "null" })), body))
end)

-- version 2 (SignServiceVersionTwoTest)
local function v2_headers(params, sg)
    return { Authorization = sg and (params .. "." .. sg) or params, version = "2.0.0" }
end
T.case("v2 normalTest", function()
    local p = params_v2(TS, APP_KEY)
    expect_pass(run(std_table(), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))))
end)
T.case("v2 normalTestWithinConfiguredDelay", function()
    local p = params_v2(tostring(NOW - 60000), APP_KEY)
    expect_pass(run(std_table(), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))))
end)
T.case("v2 nullTimestampTest", function()
    local p = params_v2(nil, APP_KEY)
    expect_refusal(run(std_table(), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))), "sign parameters are incomplete!")
end)
T.case("v2 nullSignTest (a token without a dot)", function()
    expect_refusal(run(std_table(), PATH, v2_headers(params_v2(TS, APP_KEY), nil)), "sign parameters are incomplete!")
end)
T.case("v2 nullAppKeyTest", function()
    local p = params_v2(TS, nil)
    expect_refusal(run(std_table(), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))), "sign parameters are incomplete!")
end)
T.case("v2 overdueTest", function()
    local p = params_v2(tostring(NOW - 6 * 60000), APP_KEY)
    expect_refusal(run(std_table(), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))),
        "The signature timestamp has exceeded 5 minutes!")
end)
T.case("v2 errorAppKeyTest", function()
    local p = params_v2(TS, "errorKey")
    expect_refusal(run(std_table(), PATH, v2_headers(p, sign_v2("errorKey", p, PATH))), "sign appKey does not exist.")
end)
T.case("v2 emptyAuthPath / errorAuthPath", function()
    local p = params_v2(TS, APP_KEY)
    expect_refusal(run(std_table(nil, app({ pathDataList = {} })), PATH, v2_headers(p, sign_v2(SECRET, p, PATH))),
        "you have not configured the sign path.")
    expect_refusal(run(std_table(), "/errorPath", v2_headers(p, sign_v2(SECRET, p, "/errorPath"))),
        "you have not configured the sign path.")
end)
T.case("v2 errorSign / errorBodySign", function()
    local p = params_v2(TS, APP_KEY)
    expect_refusal(run(std_table(), PATH, v2_headers(p, "errorSign")), "signature value is error!")
    expect_refusal(run(std_table('{"signRequestBody":true}'), PATH, v2_headers(p, "errorSign"), '{"data":"data"}'),
        "signature value is error!")
end)
T.case("v2 bodySign / bodyAndUrlQueryParamsSign / errorBodyAndUrlQueryParamsSign", function()
    local p = params_v2(TS, APP_KEY)
    local t = std_table('{"signRequestBody":true}')
    expect_pass(run(t, PATH, v2_headers(p, sign_v2(SECRET, p, PATH, '{"data":"data"}')), '{"data":"data"}'))
    expect_pass(run(t, PATH .. "?data2=data", v2_headers(p, sign_v2(SECRET, p, PATH .. "?data2=data", '{"data":"data"}')),
        '{"data":"data"}'))
    expect_refusal(run(t, PATH .. "?data=data", v2_headers(p, sign_v2(SECRET, p, PATH .. "?data=data", '{"data":"data"}')),
        '{"data":"data2"}'), "signature value is error!")
end)
T.case("v2 ShenYu-Authorization wins over Authorization; HMAC algorithms", function()
    for _, alg in ipairs({ "HMD5", "HS256", "HS512" }) do
        local p = params_v2(TS, APP_KEY, alg)
        local h = { ["ShenYu-Authorization"] = p .. "." .. sign_v2(SECRET, p, PATH, nil, alg),
                    Authorization = "x.y", version = "2.0.0" }
        expect_pass(run(std_table(), PATH, h))
    end
end)
T.case("v2 the query is signed %-decoded (URI.getQuery)", function()
    local p = params_v2(TS, APP_KEY)
    expect_pass(run(std_table(), PATH .. "?a=%20b", v2_headers(p, sign_v2(SECRET, p, PATH .. "?a= b"))))
end)

-- DefaultSignProviderTest's fixed vectors
T.case("DefaultSignProviderTest testGenerateSign / testGenerateSignWithBody", function()
    local token = '{"alg":"MD5","appKey":"108C27175A2C43C1BC29B1E483D57E3D","timestamp":"1673093719090"}'
    local p = b64(token)
    T.eq(signalg.sign("MD5", "061521A73DD94A3FA873C25D050685BB", p .. "/http/test/path/456?name=Lee&data=3"),
        "4892285C655127FE0B05BCAA4A47B093")
    T.eq(signalg.sign("MD5", "061521A73DD94A3FA873C25D050685BB",
        p .. "/http/test/payment?userName=Lee&userId=3" .. '{"userName":"Lee","userId":"3"}'),
        "61A097079016A18B1246A375482BEDBC")
end)
T.case("SignUtilsTest: MD5(data+key); unknown algorithm; null key", function()
    T.eq(signalg.sign("MD5", "test", "a1b2"), "7AA98F7D67F8E4730E2D1D3902295CE6")
    local ok, why = signalg.sign("supported_algorithm", "key", "data")
    T.eq(ok, nil); T.eq(why, "unsupported sign algorithm:supported_algorithm")
    T.eq(select(2, signalg.sign("HS256", nil, "data")), "Key or data is null.")
end)
T.case("DefaultExtractorTest: version 1 headers and a version 2 token", function()
    local req = req_of("/springcloud/class/annotation/get", { timestamp = "1660659201000",
        appKey = "BD7980F5688A4DE6BCF1B5327FE07F5C", version = "1.0.0", sign = "BF485842D2C08A3378308BA9992A309F" })
    local p = sign.extract(req)
    T.eq(p.app_key, "BD7980F5688A4DE6BCF1B5327FE07F5C"); T.eq(p.alg, "MD5")
    T.eq(p.signature, "BF485842D2C08A3378308BA9992A309F")
    local params = b64('{"timestamp":"1660659201000","appKey":"BD7980F5688A4DE6BCF1B5327FE07F5C",'
        .. '"sign":"BF485842D2C08A3378308BA9992A309F","alg":"MD5"}')
    req = req_of("/x", { Authorization = params .. ".BF485842D2C08A3378308BA9992A309F", version = "2.0.0" })
    p = sign.extract(req)
    T.eq(p.timestamp, "1660659201000"); T.eq(p.parameters, params); T.eq(p.alg, "MD5")
end)

-- versions, parameters and exceptions
T.case("a missing or unknown version", function()
    expect_refusal(run(std_table(), PATH, { timestamp = TS }), "sign version does not exist or is wrong!")
    expect_refusal(run(std_table(), PATH, { version = "1.0.2" }), "sign version does not exist or is wrong!")
end)
T.case("a timestamp that is not a long: HTTP 400 NumberFormatException", function()
    local r = run(std_table(), PATH, v1_headers("12a", APP_KEY, "X"))
    T.eq(r.code, 400); T.eq(r.http_status, 400); T.eq(r.message, 'For input string: "12a"')
    r = run(std_table(), PATH, v1_headers("9223372036854775808", APP_KEY, "X"))
    T.eq(r.code, 400)
end)
T.case("the window: whole minutes, either side, delay 5", function()
    T.truthy(sign.within(NOW, NOW + 359999, 5)); T.truthy(not sign.within(NOW, NOW + 360000, 5))
    T.truthy(sign.within(NOW, NOW - 359999, 5)); T.truthy(not sign.within(NOW, NOW - 361000, 5))
    -- the timestamp's milliseconds are dropped (LocalDateTime.ofEpochSecond(ts / 1000))
    T.truthy(not sign.within(NOW + 999, NOW + 999 + 360000 - 998, 5))
end)
T.case("a disabled app is refused; a null enabled counts as enabled", function()
    local p = sign_v1(SECRET, TS, PATH)
    expect_refusal(run(std_table(nil, app({ enabled = false })), PATH, v1_headers(TS, APP_KEY, p)),
        "sign appKey does not exist.")
    expect_pass(run(std_table(nil, app({ enabled = cjson.null })), PATH, v1_headers(TS, APP_KEY, p)))
end)
T.case("open false or null: any path; open true: enabled Ant patterns only", function()
    local ts = TS
    local sg = sign_v1(SECRET, ts, "/other/x")
    expect_pass(run(std_table(nil, app({ open = false })), "/other/x", v1_headers(ts, APP_KEY, sg)))
    expect_pass(run(std_table(nil, app({ open = cjson.null, pathDataList = cjson.null })), "/other/x",
        v1_headers(ts, APP_KEY, sg)))
    local paths = { { appName = "a", path = "/other/**", enabled = false }, { appName = "a", path = "/oth*/*", enabled = true } }
    expect_pass(run(std_table(nil, app({ pathDataList = paths })), "/other/x", v1_headers(ts, APP_KEY, sg)))
    paths[2].enabled = false
    expect_refusal(run(std_table(nil, app({ pathDataList = paths })), "/other/x", v1_headers(ts, APP_KEY, sg)),
        "you have not configured the sign path.")
    -- a null enabled reached before a match: NullPointerException, HTTP 500
    local r = run(std_table(nil, app({ pathDataList = { { path = "/x" } } })), "/other/x", v1_headers(ts, APP_KEY, sg))
    T.eq(r.code, 500); T.eq(r.message, "Internal Server Error")
end)
T.case("a null secret or an unknown alg: HTTP 500", function()
    local r = run(std_table(nil, app({ appSecret = cjson.null })), PATH, v1_headers(TS, APP_KEY, "X"))
    T.eq(r.code, 500)
    local p = params_v2(TS, APP_KEY, "SHA1")
    r = run(std_table(), PATH, v2_headers(p, "X"))
    T.eq(r.code, 500)
end)
T.case("v2 tokens: bad base64 is HTTP 400; one piece is HTTP 500", function()
    local r = run(std_table(), PATH, v2_headers("ab!c", "X"))
    T.eq(r.code, 400); T.eq(r.message, "Illegal base64 character 21")
    r = run(std_table(), PATH, { Authorization = "abc.", version = "2.0.0" })
    T.eq(r.code, 500)
    -- a token whose JSON is not an object: an empty map, so the parameters are incomplete
    expect_refusal(run(std_table(), PATH, v2_headers(b64("[1]"), "X")), "sign parameters are incomplete!")
end)

-- which requests the plugin checks (AbstractShenyuPlugin with the sign plugin's own data)
T.case("plugin off, no selector, no rule: the request goes on unchecked", function()
    local base = { { "SELECTOR", "s1", sel("s1", { uri("startsWith", "/a/") }) },
                   { "RULE", "r1", rul("r1", "s1", { uri("startsWith", "/a/b") }) },
                   { "APP_AUTH", APP_KEY, app() } }
    local function with(pl)
        local items = { { "PLUGIN", "sign", pl } }
        for _, x in ipairs(base) do items[#items + 1] = x end
        return table_of(items)
    end
    expect_pass(run(with(plugin(false)), "/a/b", {}))
    expect_refusal(run(with(plugin(true)), "/a/b", {}), "sign version does not exist or is wrong!")
    expect_pass(run(with(plugin(true)), "/x", {}))      -- no selector
    expect_pass(run(with(plugin(true)), "/a/c", {}))    -- no rule
    expect_pass(run(with(cjson.encode({ name = "sign" })), "/a/b", {})) -- null enabled: skipped
end)
T.case("selector ranking, continued false, full flow, disabled rules", function()
    local t = table_of({
        { "PLUGIN", "sign", plugin(true) },
        { "SELECTOR", "s1", sel("s1", { uri("startsWith", "/a/") }, { sort = 1 }) },
        { "SELECTOR", "s2", sel("s2", { uri("startsWith", "/a/"), uri("endsWith", "/open") }, { sort = 9, continued = false }) },
        { "RULE", "r1", rul("r1", "s1", { uri("startsWith", "/a/") }, nil, { enabled = false }) },
        { "SELECTOR", "s3", sel("s3", {}, { type = 0, sort = 2 }) },
    })
    -- s2 (two AND conditions) wins over s1 despite its sort; continued false: default rule
    T.truthy(run(t, "/a/open", {}))
    -- s1 and the full-flow s3 match; equal score 1 vs 0: s1 wins, its only rule is disabled
    expect_pass(run(t, "/a/x", {}))
    -- only the full-flow selector: no rules, the request goes on
    expect_pass(run(t, "/b", {}))
end)
T.case("many selectors: the fifth one can win (past the unrolled three)", function()
    local items = { { "PLUGIN", "sign", plugin(true) } }
    for i = 1, 5 do
        local conds = { uri("startsWith", "/m/") }
        if i == 5 then conds[2] = uri("endsWith", "/x") end
        items[#items + 1] = { "SELECTOR", "s" .. i, sel("s" .. i, conds, { sort = i, continued = i == 5 }) }
    end
    items[#items + 1] = { "RULE", "r5", rul("r5", "s5", { uri("startsWith", "/m/") }) }
    local t = table_of(items)
    -- /m/x: s5 (two AND conditions) wins and its rule asks for a signature
    expect_refusal(run(t, "/m/x", {}), "sign version does not exist or is wrong!")
    -- /m/y: s1..s4 tie on score 1, s1 (sort 1) wins: continued false, the default rule checks
    expect_refusal(run(t, "/m/y", {}), "sign version does not exist or is wrong!")
    T.eq(t:match(req_of("/m/y")), signtable.DEFAULT_RULE)
    T.eq(t:match(req_of("/m/x")).id, "r5")
    T.eq(t:match(req_of("/n")), nil)
end)
T.case("an unknown operator in a sign selector: HTTP 400, as ShenYu", function()
    local t = table_of({ { "PLUGIN", "sign", plugin(true) },
        { "SELECTOR", "s1", sel("s1", { { paramType = "uri", operator = "like", paramValue = "/a" } }) } })
    local r = run(t, "/a", {})
    T.eq(r.code, 400); T.eq(r.message, "like name is error")
end)
T.case("apps change in place: disable, rotate, delete, two items with one appKey", function()
    local t = std_table()
    local h = v1_headers(TS, APP_KEY, sign_v1(SECRET, TS, PATH))
    expect_pass(run(t, PATH, h))
    t:set("APP_AUTH", APP_KEY, signtable.compile("APP_AUTH", APP_KEY, app({ enabled = false }))); t:finish()
    expect_refusal(run(t, PATH, h), "sign appKey does not exist.")
    t:set("APP_AUTH", APP_KEY, signtable.compile("APP_AUTH", APP_KEY, app({ appSecret = "NEW" }))); t:finish()
    expect_refusal(run(t, PATH, h), "signature value is error!")
    expect_pass(run(t, PATH, v1_headers(TS, APP_KEY, sign_v1("NEW", TS, PATH))))
    t:set("APP_AUTH", "zz", signtable.compile("APP_AUTH", "zz", app({ appSecret = "Z" }))); t:finish()
    expect_pass(run(t, PATH, v1_headers(TS, APP_KEY, sign_v1("Z", TS, PATH))))
    t:set("APP_AUTH", "zz", nil); t:finish()
    expect_pass(run(t, PATH, v1_headers(TS, APP_KEY, sign_v1("NEW", TS, PATH))))
    t:set("APP_AUTH", APP_KEY, nil); t:finish()
    expect_refusal(run(t, PATH, h), "sign appKey does not exist.")
    T.eq(t.napps, 0)
end)
T.case("signRequestBody from the rule handle (Gson: true, \"true\"; else off)", function()
    for handle, want in pairs({ ['{"signRequestBody":true}'] = true, ['{"signRequestBody":"TRUE"}'] = true,
                                ['{"signRequestBody":false}'] = false, ['{}'] = false, ['not json'] = false }) do
        local r = signtable.compile("RULE", "r", rul("r", "s", {}, handle))
        T.eq(r.sign_body, want, handle)
    end
end)
T.case("signbody: Jackson's map as Java prints it", function()
    local m = signbody.parse('{"a":"x\\u00e9\\n","b":[],"c":{},"d":0.001,"e":1.0E-4,"f":123.0,"a":"last"}')
    T.eq(m.a, "last"); T.eq(m.b, "[]"); T.eq(m.c, "{}"); T.eq(m.d, "0.001"); T.eq(m.e, "1.0E-4"); T.eq(m.f, "123.0")
    T.eq(next(signbody.parse("[1,2]")), nil)
    T.eq(next(signbody.parse("{bad")), nil)
    T.eq(next(signbody.parse('{"a":01}')), nil)
    local none, why = signbody.parse(" null ")
    T.eq(none, nil); T.eq(why, "null")
    T.eq(signbody.java_double(1e21), "1.0E21"); T.eq(signbody.java_double(1234567.0), "1234567.0")
    T.eq(signbody.java_double(0.1), "0.1"); T.eq(signbody.java_double(-2.5e-5), "-2.5E-5")
    -- deep nesting ends in an empty map, never a Lua error
    T.eq(next(signbody.parse(string.rep("[", 5000))), nil)
    T.eq(next(signbody.parse('{"a":' .. string.rep("[", 2000) .. string.rep("]", 2000) .. "}")), nil)
end)
T.case("signbody never raises on random input", function()
    math.randomseed(7)
    local alphabet = '{}[]":,0123456789.eE+-tfnrulasx\\ u'
    for _ = 1, 3000 do
        local n = math.random(0, 40)
        local s = {}
        for i = 1, n do local k = math.random(#alphabet); s[i] = alphabet:sub(k, k) end
        local ok, err = pcall(signbody.parse, table.concat(s))
        if not ok then error("raised on " .. table.concat(s) .. ": " .. tostring(err)) end
    end
end)

T.case("random headers and tokens: an answer or a pass, never a Lua error", function()
    math.randomseed(11)
    local t = std_table('{"signRequestBody":true}')
    local pieces = { "1.0.0", "2.0.0", APP_KEY, TS, "-1", "9999999999999999999", "", " ", ".",
                     "..", "a.b", params_v2(TS, APP_KEY), params_v2(TS, APP_KEY, "HS256") .. ".X",
                     b64('{"appKey":1}') .. ".s", b64("null") .. ".s", b64('{"timestamp":"x"}') .. ".s",
                     "=", "ab=c", "YQ", "Y", "%", "\\u0000", "{}" }
    local function pick() return pieces[math.random(#pieces)] end
    local bodies = { nil, "", "null", "[1]", '{"a":', '{"a":1}', '{"a":{"b":[1,2,{"c":null}]}}' }
    for _ = 1, 3000 do
        local h = { version = pick(), appKey = pick(), timestamp = pick(), sign = pick(),
                    Authorization = pick() .. (math.random() < 0.5 and ("." .. pick()) or "") }
        local ok, res = pcall(run, t, PATH .. (math.random() < 0.5 and "?a=%41&b" or ""), h,
            bodies[math.random(#bodies)])
        if not ok then error("raised: " .. tostring(res)) end
        if res ~= nil then T.truthy(res.code == 401 or res.code == 400 or res.code == 500, tostring(res.code)) end
    end
end)

T.done()
