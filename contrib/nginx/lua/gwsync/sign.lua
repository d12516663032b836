-- gwsync.sign: ShenYu's `sign` plugin for one request (SignPlugin, ComposableSignService,
-- DefaultExtractor, VersionOne/TwoSignProvider; contrib/nginx/SIGN-SEMANTICS.md).
--
--   check(tbl, req, ctx) -> nil, app_param   the request goes on (app_param: the value of the
--                                            `appParam` header to send upstream, or nil)
--                         | answer            { code, message, http_status, plain_status }
-- tbl: a gwsync.signtable; req: the gwsync.request the router matches (path = raw path,
-- header(name) = first value, case-insensitive); ctx = { query = raw query | nil (no "?"),
-- now_ms = clock, delay = minutes (shenyu.sign.delay), body = fn() -> raw body text }.
--
-- Steps, in ShenYu's order (each failure answers at once):
--   1. the sign plugin's selector and rule (signtable.match): none -> the request goes on;
--   2. the sign parameters from the `version` header's extractor (1.0.0: headers appKey,
--      timestamp, sign; 2.0.0: a token "base64(json).SIGN" in ShenYu-Authorization, else
--      Authorization) -> "sign version does not exist or is wrong!" /
--      "sign parameters are incomplete!";
--   3. the timestamp within `delay` whole minutes of now -> "The signature timestamp has
--      exceeded 5 minutes!";
--   4. the app: known and not disabled -> "sign appKey does not exist.";
--   5. `open: true` apps: an enabled pathDataList entry's Ant pattern matches the raw path ->
--      "you have not configured the sign path.";
--   6. the signature (upper-case hex, compared exactly) -> "signature value is error!".
-- Failures answer ShenYu's {"code":401,"message":<reason>} with HTTP 200; what ShenYu throws
-- on the way (a timestamp that is not a long: 400; a null secret, an unknown `alg`: 500...)
-- answers as its GlobalErrorHandler does.
--
-- Secrets: the app's secret is used only to compute the expected signature, which is
-- compared and dropped; nothing here logs, and no answer carries either.
local signalg = require "gwsync.signalg"
local signbody = require "gwsync.signbody"
local conditions = require "gwsync.conditions"
local antpath = require "gwsync.antpath"
local errors = require "gwsync.errors"
local cjson = require "cjson.safe"

local M = {}

local byte, sub, find, format, char = string.byte, string.sub, string.find, string.format, string.char
local is_blank = conditions.is_blank

M.VERSION_1 = "1.0.0"
M.VERSION_2 = "2.0.0"
M.DELAY = 5

-- Constants.SIGN_* and ShenyuResultEnum.SIGN_TIME_IS_TIMEOUT
M.VERSION_ERROR = "sign version does not exist or is wrong!"
M.PARAMS_ERROR = "sign parameters are incomplete!"
M.APP_KEY_NOT_EXIST = "sign appKey does not exist."
M.PATH_NOT_EXIST = "you have not configured the sign path."
M.VALUE_ERROR = "signature value is error!"
M.TIMEOUT = "The signature timestamp has exceeded %s minutes!"

-- ShenyuResultEnum.SIGN_IS_NOT_PASS's code with the reason; HTTP status not set (200)
local function refuse(reason)
    return { action = "error", code = 401, message = reason, http_status = 200, plain_status = 401 }
end
M.refuse = refuse

local function internal() errors.raise_internal("sign") end

---------------------------------------------------------------------------------------------
-- extracting the parameters (DefaultExtractor)
---------------------------------------------------------------------------------------------

-- java.util.Base64.getDecoder().decode: the basic alphabet, "=" ends the data and is
-- optional; an illegal character raises IllegalArgumentException (HTTP 400)
local B64 = {}
do
    local a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for i = 1, 64 do B64[byte(a, i)] = i - 1 end
end
local function base64_decode(s)
    local out, n = {}, 0
    local acc, bits = 0, 0
    local len = #s
    local i = 1
    while i <= len do
        local c = byte(s, i)
        if c == 61 then -- "=": padding must complete the unit and end the text
            if bits < 12 or (bits == 12 and byte(s, i + 1) ~= 61) then
                errors.raise_bad_request("Input byte array has wrong 4-byte ending unit")
            end
            i = i + (bits == 12 and 2 or 1)
            if i <= len then
                errors.raise_bad_request("Input byte array has incorrect ending byte at " .. (i - 1))
            end
            break
        end
        local v = B64[c]
        if not v then errors.raise_bad_request("Illegal base64 character " .. format("%x", c)) end
        acc = acc * 64 + v
        bits = bits + 6
        if bits == 24 then
            n = n + 1
            out[n] = char(math.floor(acc / 65536), math.floor(acc / 256) % 256, acc % 256)
            acc, bits = 0, 0
        end
        i = i + 1
    end
    if bits == 6 then errors.raise_bad_request("Last unit does not have enough valid bits") end
    if bits == 12 then
        n = n + 1; out[n] = char(math.floor(acc / 16))
    elseif bits == 18 then
        n = n + 1; out[n] = char(math.floor(acc / 1024), math.floor(acc / 4) % 256)
    end
    return table.concat(out, "", 1, n)
end
M.base64_decode = base64_decode

-- commons-lang3 StringUtils.split(s, '.'): the pieces between dots, empty ones dropped
local function split_dots(s)
    local out, i = {}, 1
    while true do
        local j = find(s, ".", i, true)
        local piece = sub(s, i, (j or #s + 1) - 1)
        if piece ~= "" then out[#out + 1] = piece end
        if not j then return out end
        i = j + 1
    end
end

-- a token field read as `(String) map.get(name)`: a string or null, anything else throws
local function token_string(map, name)
    local v = map[name]
    if v == nil or v == cjson.null then return nil end
    if type(v) ~= "string" then internal() end -- ClassCastException
    return v
end

-- extract(req) -> params | false (the version is missing or unknown)
local function extract(req)
    local version = req:header("version")
    if version == M.VERSION_1 then
        return { version = version, alg = "MD5", app_key = req:header("appKey"),
                 timestamp = req:header("timestamp"), signature = req:header("sign") }
    elseif version ~= M.VERSION_2 then
        return false
    end
    local token = req:header("ShenYu-Authorization")
    if token == nil then token = req:header("Authorization") end
    if token == nil or token == "" or not find(token, ".", 1, true) then
        return { version = version } -- every parameter null
    end
    local parts = split_dots(token)
    if #parts < 2 then internal() end -- ArrayIndexOutOfBoundsException
    local json = base64_decode(parts[1])
    local map = cjson.decode(json)
    if map == cjson.null then internal() end -- jsonToMap gives null: NullPointerException
    if type(map) ~= "table" or (next(map) == 1) then map = {} end -- not an object: empty map
    return { version = version, parameters = parts[1], signature = parts[2],
             app_key = token_string(map, "appKey"), timestamp = token_string(map, "timestamp"),
             alg = token_string(map, "alg") }
end
M.extract = extract

---------------------------------------------------------------------------------------------
-- the checks (ComposableSignService.verify)
---------------------------------------------------------------------------------------------

-- Long.parseLong: [+-]digits within a signed 64-bit range, else NumberFormatException (400)
local function parse_long(s)
    local sign, digits = s:match("^([+-]?)(%d+)$")
    if digits then
        digits = digits:gsub("^0+(%d)", "%1")
        local limit = sign == "-" and "9223372036854775808" or "9223372036854775807"
        if #digits < #limit or (#digits == #limit and digits <= limit) then
            local v = tonumber(digits)
            return sign == "-" and -v or v
        end
    end
    errors.raise_bad_request('For input string: "' .. s .. '"')
end

-- |whole minutes between the timestamp's second and now| <= delay
local function within(ts_ms, now_ms, delay)
    local start_s = ts_ms >= 0 and math.floor(ts_ms / 1000) or -math.floor(-ts_ms / 1000)
    local d = now_ms / 1000 - start_s
    local minutes = d >= 0 and math.floor(d / 60) or -math.floor(-d / 60)
    return math.abs(minutes) <= delay
end
M.within = within

local function path_allowed(app, path)
    if app.open ~= true then return true end
    local paths = app.paths
    if not paths or #paths == 0 then return false end
    for i = 1, #paths do
        local p = paths[i]
        if not p or p.enabled == nil then internal() end -- NullPointerException
        if p.enabled then
            if not p.P then internal() end
            if antpath.matches(p.P, path) then return true end
        end
    end
    return false
end

-- UriComponentsBuilder's query parameters, not decoded: name -> first value (nil: "?a")
local function raw_query_params(q)
    local out, seen = {}, {}
    for name, eq, value in q:gmatch("([^&=]+)(=?)([^&]*)") do
        if not seen[name] then
            seen[name] = true
            if value ~= "" then out[name] = value
            elseif eq ~= "" then out[name] = ""
            else out[name] = false end
        end
    end
    return out
end

-- java.net.URI.getQuery(): the raw query with %XX decoded
local function uri_decode(q)
    return (q:gsub("%%(%x%x)", function(h) return char(tonumber(h, 16)) end))
end

-- VersionOneSignProvider: sorted key..value of timestamp, path, version (and, when the body
-- is signed, the body's fields, then the query's, which override), without `sign`, trimmed
local function data_v1(p, path, query, body)
    local params = { timestamp = p.timestamp, path = path, version = p.version }
    if body ~= nil then
        if body ~= "" then
            local map, why = signbody.parse(body)
            if not map and why == "null" then internal() end
            for k, v in pairs(map) do
                if params[k] == nil then params[k] = v end
            end
        end
        if query then
            for k, v in pairs(raw_query_params(query)) do params[k] = v end
        end
    end
    local keys = {}
    for k in pairs(params) do if k ~= "sign" then keys[#keys + 1] = k end end
    table.sort(keys)
    local parts = {}
    for i = 1, #keys do
        local v = params[keys[i]]
        parts[i] = keys[i] .. (v == false and "null" or v)
    end
    return conditions.java_trim(table.concat(parts))
end

-- VersionTwoSignProvider: parameters .. path ["?" .. decoded query] .. body
local function data_v2(p, path, query, body)
    return p.parameters .. path .. (query and ("?" .. uri_decode(query)) or "") .. (body or "")
end

-- verify(tbl, rule, req, ctx) -> app (passed) | refusal (raises ShenYu's exceptions)
local function verify(tbl, rule, req, ctx)
    local p = extract(req)
    if not p then return refuse(M.VERSION_ERROR) end
    if is_blank(p.app_key) or is_blank(p.timestamp) or is_blank(p.signature) then
        return refuse(M.PARAMS_ERROR)
    end
    local delay = ctx.delay or M.DELAY
    if not within(parse_long(p.timestamp), ctx.now_ms, delay) then
        return refuse(format(M.TIMEOUT, tostring(delay)))
    end
    local app = tbl:app(p.app_key)
    if not app or app.enabled == false then return refuse(M.APP_KEY_NOT_EXIST) end
    local path = req.path
    if not path_allowed(app, path) then return refuse(M.PATH_NOT_EXIST) end
    local body = nil
    if rule.sign_body then body = ctx.body and ctx.body() or "" end
    local data = (p.version == M.VERSION_1 and data_v1 or data_v2)(p, path, ctx.query, body)
    local expected = signalg.sign(p.alg, app.secret, data)
    if not expected then internal() end -- null secret or unknown algorithm
    if expected ~= p.signature then return refuse(M.VALUE_ERROR) end
    return app
end

-- handleExchange: the `appParam` header for the app named by the path's first segment
-- (the request's module is "divide-http": no META_DATA is read here)
local function app_param(app, path)
    local list = app.params
    if not list or #list == 0 then return nil end
    local first = path:match("^/*([^/]+)")
    if not first then internal() end -- "Cannot find the context path(AppName)"
    for i = 1, #list do
        local e = list[i]
        if not e or e.app_name == nil then internal() end
        if e.app_name == first and not is_blank(e.app_param) then return e.app_param end
    end
    return nil
end

local function check_raising(tbl, rule, req, ctx)
    local res = verify(tbl, rule, req, ctx)
    if res.action == "error" then return res end
    return nil, app_param(res, req.path)
end

-- check_rule(tbl, rule, req, ctx) -> as check(), for the rule signtable.match() chose
local function check_rule(tbl, rule, req, ctx)
    local ok, res, param = pcall(check_raising, tbl, rule, req, ctx)
    if ok then return res, param end
    if errors.is_ours(res) then return errors.result(res.status, res.message) end
    error(res, 0)
end

function M.check(tbl, req, ctx)
    if not tbl or not tbl.enabled then return nil end
    local rule = tbl:match(req)
    if rule == nil then return nil end
    if rule.action == "error" then return rule end
    return check_rule(tbl, rule, req, ctx)
end

-- the request body as ShenYu's sign plugin reads it (in memory, or from the temporary file
-- nginx wrote a large one to); "" for none
local function read_body()
    ngx.req.read_body()
    local b = ngx.req.get_body_data()
    if b then return b end
    local f = ngx.req.get_body_file()
    if not f then return "" end
    local fh = io.open(f, "rb")
    if not fh then return "" end
    b = fh:read("*a")
    fh:close()
    return b or ""
end

local function now_ms() return ngx.now() * 1000 end

-- access(tbl, req, delay) -> nil | answer: check() in nginx's access phase; a passed request
-- gets the app's `appParam` header, as ShenYu sends it upstream. A request no sign selector
-- and rule matches (most of them) costs the match alone: nothing else is read or made.
function M.access(tbl, req, delay)
    local rule = tbl:match(req)
    if rule == nil then return nil end
    if rule.action == "error" then return rule end
    local uri = ngx.var.request_uri or "/"
    local q = find(uri, "?", 1, true)
    local deny, param = check_rule(tbl, rule, req, { query = q and sub(uri, q + 1) or nil,
                                                     delay = delay, now_ms = now_ms(), body = read_body })
    if deny then return deny end
    if param then ngx.req.set_header("appParam", param) end
    return nil
end

return M
