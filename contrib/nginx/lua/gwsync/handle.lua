-- gwsync.handle: a divide rule's `handle` JSON text -> DivideRuleHandle, parsed at build time.
--
-- ShenYu parses the handle with Gson into DivideRuleHandle (defaults: loadBalance "random",
-- retryStrategy "current", retry 3, timeout 3000, headerMaxSize 0, requestMaxSize 0). Gson keeps
-- a default when a key is missing or a primitive is JSON null, sets a String to "" when it
-- is JSON null (GsonUtils registers a StringTypeAdapter that reads null as ""), accepts numbers written as strings ("3000"), and rejects non-integral numbers
-- for int/long fields (then the handle is never cached and the rule fails with an NPE: we
-- report that as a parse error so the caller skips the rule).
-- loadBalance is looked up by name only when a request is balanced: unknown -> 400
-- "<name> name is error", "" or null -> 500; parse() returns that as `lb_error`.
local cjson = require "cjson.safe"
local balance = require "gwsync.balance"

local M = {}

M.DEFAULT = { load_balance = "random", retry_strategy = "current", retry = 3, timeout = 3000,
              header_max_size = 0, request_max_size = 0 }

-- gson_int(v, default, key) -> the int Gson reads | nil, err (nil, err as everywhere in the
-- router: README, "Errors")
local function gson_int(v, default, key)
    if v == nil or v == cjson.null then return default end
    if type(v) == "string" then v = tonumber(v) end
    if type(v) ~= "number" or v ~= math.floor(v) then
        return nil, "handle field " .. key .. " is not an integer"
    end
    return v
end

-- gson_string(v, default, key) -> the String Gson reads (nil: absent) | false, err
local function gson_string(v, default, key)
    if v == nil then return default end
    if v == cjson.null then return "" end -- GsonUtils' StringTypeAdapter: null -> ""
    if type(v) == "string" then return v end
    if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
    return false, "handle field " .. key .. " is not a string"
end

-- the DivideRuleHandle fields of a decoded handle object -> handle | nil, err
local INTS = { { "retry", "retry", 3 }, { "timeout", "timeout", 3000 },
               { "headerMaxSize", "header_max_size", 0 }, { "requestMaxSize", "request_max_size", 0 } }
local function fields(obj)
    local lb, err = gson_string(obj.loadBalance, "random", "loadBalance")
    if lb == false then return nil, err end
    local rs
    rs, err = gson_string(obj.retryStrategy, "current", "retryStrategy")
    if rs == false then return nil, err end
    local h = {
        load_balance = lb,
        -- DividePlugin: StringUtils.defaultIfEmpty(retryStrategy, "current")
        retry_strategy = (rs == nil or rs == "") and "current" or rs,
    }
    for i = 1, #INTS do
        local f = INTS[i]
        local v
        v, err = gson_int(obj[f[1]], f[3], f[1])
        if v == nil then return nil, err end
        h[f[2]] = v
    end
    return h
end

local function lb_error_of(h)
    if h.load_balance == nil or not h.load_balance:find("%S") then
        return { status = 500, message = "get join name is null" }
    elseif not balance.is_known(h.load_balance) then
        return { status = 400, message = h.load_balance .. " name is error" }
    end
    return nil
end

-- Parsed handles by text: rules share their handle text a lot, a handle is read-only once
-- parsed (weak values: a handle no rule uses goes with the next garbage collection).
local parsed = setmetatable({}, { __mode = "v" })

-- parse_new(text) -> handle | nil, err
local function parse_new(text)
    local obj = cjson.decode(text)
    if type(obj) ~= "table" then return nil, "rule handle is not a JSON object" end
    return fields(obj)
end

-- parse(text) -> handle, lb_error | nil, err   (the handle is shared: never modify it)
-- The handle keeps its lb_error (false: none), worked out once.
function M.parse(text)
    if type(text) ~= "string" then return nil, "rule has no handle" end
    local h = parsed[text]
    if not h then
        local err
        h, err = parse_new(text)
        if not h then return nil, err end
        h.lb_error = lb_error_of(h) or false
        parsed[text] = h
    end
    return h, h.lb_error or nil
end

return M
