-- gwsync.upstreams: a divide selector's upstream list, built once per route table (§6).
--
-- ShenYu 2.6+ takes upstreams from the DISCOVER_UPSTREAM group (DivideUpstreamDataHandler:
-- status 0 = up, props JSON text with warmup (default 10 ms) / gray / healthCheckEnabled,
-- timestamp = dateCreated) and, when any upstream of the selector is gray, keeps only the gray
-- ones. Admins before 2.6 carry the list in the selector's `handle` (a JSON string of
-- DivideUpstream: upstreamUrl, protocol, weight, status true/false, timestamp, warmup).
-- UpstreamCacheManager then offers only status-up upstreams to the load balancer; an upstream
-- with healthCheckEnabled=false is forced up. Active health checking (UpstreamCheckTask) is off
-- in ShenYu's bootstrap config and is not modelled: "healthy" = status up.
local cjson = require "cjson.safe"

local M = {}

local find, sub, byte = string.find, string.sub, string.byte

local function num(v, default)
    if type(v) == "number" then return v end
    if type(v) == "string" and tonumber(v) then return tonumber(v) end
    return default
end

local function bool(v, default)
    if type(v) == "boolean" then return v end
    if type(v) == "string" then
        -- Boolean.parseBoolean: "true" in any case is true, anything else false
        return v:lower() == "true"
    end
    return default
end

-- "host:port" (or "[v6]:port", or "host") -> host, port
function M.split_url(url, protocol)
    local hostport = url:match("^[^/]*")
    local host, port
    if byte(hostport, 1) == 91 then
        host, port = hostport:match("^%[(.-)%]:?(%d*)$")
    else
        host, port = hostport:match("^([^:]*):?(%d*)$")
    end
    port = tonumber(port)
    if not port then port = (protocol == "https://") and 443 or 80 end
    return host or hostport, port
end

-- "yyyy-MM-dd HH:mm:ss" (server-local) or epoch milliseconds -> epoch milliseconds
local function date_ms(v, now_ms)
    if type(v) == "number" then return v end
    if type(v) == "string" then
        local y, mo, d, h, mi, s = v:match("^(%d+)%-(%d+)%-(%d+)[ T](%d+):(%d+):(%d+)")
        if y then
            return os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d),
                hour = tonumber(h), min = tonumber(mi), sec = tonumber(s) }) * 1000
        end
    end
    return now_ms -- ShenYu: Optional.ofNullable(dateCreated)...orElse(currentTimeMillis())
end

local function make(url, protocol, weight, status, timestamp, warmup, gray, hc)
    if type(url) ~= "string" or url == "" then return nil end
    if type(protocol) ~= "string" or protocol == "" then protocol = "http://" end
    local host, port = M.split_url(url, protocol)
    if hc == false then status = true end
    return { url = url, protocol = protocol, host = host, port = port, weight = weight,
             status = status, timestamp = timestamp, warmup = warmup, gray = gray,
             health_check = hc }
end

-- from_discovery(entry_table, now_ms) -> upstream list (healthy only, gray filter applied)
function M.from_discovery(entry, now_ms)
    local all, gray = {}, {}
    local list = entry.upstreamDataList
    if type(list) ~= "table" then return {} end
    for _, u in ipairs(list) do
        if type(u) == "table" then
            local props = u.props
            if type(props) == "string" then props = cjson.decode(props) end
            if type(props) ~= "table" then props = {} end
            local up = make(u.url, u.protocol, math.floor(num(u.weight, 0)),
                num(u.status, 1) == 0, date_ms(u.dateCreated, now_ms),
                math.floor(num(props.warmup, 10)), bool(props.gray, false),
                bool(props.healthCheckEnabled, true))
            if up then
                all[#all + 1] = up
                if up.gray then gray[#gray + 1] = up end
            end
        end
    end
    local chosen = #gray > 0 and gray or all
    return M.healthy(chosen)
end

-- from_selector_handle(handle_json_text, now_ms) -> upstream list (older admins)
function M.from_selector_handle(handle, now_ms)
    local list = type(handle) == "string" and cjson.decode(handle) or handle
    if type(list) ~= "table" then return {} end
    local all = {}
    for _, u in ipairs(list) do
        if type(u) == "table" then
            local up = make(u.upstreamUrl, u.protocol, math.floor(num(u.weight, 50)),
                bool(u.status, true), num(u.timestamp, 0), math.floor(num(u.warmup, 0)),
                bool(u.gray, false), bool(u.healthCheckEnabled, true))
            if up then all[#all + 1] = up end
        end
    end
    return M.healthy(all)
end

function M.healthy(list)
    local out = {}
    for _, u in ipairs(list) do
        if u.status then out[#out + 1] = u end
    end
    return out
end

return M
