-- gwsync.upstreams: a divide selector's upstream list, built once per route table (§6).
--
-- ShenYu 2.6+ takes upstreams from the DISCOVER_UPSTREAM group (DivideUpstreamDataHandler:
-- status 0 = up, props JSON text with warmup (default 10 ms) / gray / healthCheckEnabled,
-- timestamp = dateCreated) and, when any upstream of the selector is gray, keeps only the gray
-- ones. Admins before 2.6 carry the list in the selector's `handle` (a JSON string of
-- DivideUpstream: upstreamUrl, protocol, weight, status true/false, timestamp, warmup).
-- UpstreamCacheManager then offers only status-up upstreams to the load balancer, one per
-- protocol+url (the first of duplicates); a DISCOVER_UPSTREAM upstream with
-- healthCheckEnabled=false is forced up.
-- Not modelled: ShenYu's upstream cache is stateful across updates (an upstream already known
-- keeps its first timestamp and list position, and one that disappears from a later list
-- without being marked down stays in ShenYu's list); we rebuild each list from the current
-- data, which is what a freshly started ShenYu gateway would hold. Active health checking (UpstreamCheckTask) is off
-- in ShenYu's bootstrap config and is not modelled: "healthy" = status up.
local cjson = require "cjson.safe"

local M = {}

local find, sub, byte, format = string.find, string.sub, string.byte, string.format

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

-- dates read (upstreams repeat them, and os.time is costly): text -> ms, emptied past 256
local dates, ndates = {}, 0

-- "yyyy-MM-dd HH:mm:ss" (server-local) or epoch milliseconds -> epoch milliseconds
local function date_ms(v, now_ms)
    if type(v) == "number" then return v end
    if type(v) == "string" then
        local ms = dates[v]
        if ms then return ms end
        local y, mo, d, h, mi, s = v:match("^(%d+)%-(%d+)%-(%d+)[ T](%d+):(%d+):(%d+)")
        if y then
            ms = os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d),
                hour = tonumber(h), min = tonumber(mi), sec = tonumber(s) }) * 1000
            if ndates >= 256 then dates, ndates = {}, 0 end
            dates[v], ndates = ms, ndates + 1
            return ms
        end
    end
    return now_ms -- ShenYu: Optional.ofNullable(dateCreated)...orElse(currentTimeMillis())
end

-- Upstream.buildDomain: a blank protocol means "http://", the url is trimmed. The raw protocol
-- and url stay the upstream's identity (Upstream.equals, specify-domain, round-robin keys).
-- Upstream objects are never modified once made, so equal ones are shared (real tables list
-- the same upstreams under many selectors): a weak pool by every field, as a text.
local pool = setmetatable({}, { __mode = "v" })

-- a number as a text that tells any two apart (tostring keeps 14 digits only)
local function exact(x)
    if type(x) == "number" then return format("%.17g", x) end
    return tostring(x)
end

local function make(url, protocol, weight, status, timestamp, warmup, gray, hc)
    if type(url) ~= "string" or url == "" then return nil end
    if type(protocol) ~= "string" then protocol = nil end
    -- the key: every field, NUL-separated (a url or protocol with a NUL is not shared)
    local key = nil
    if not find(url, "\0", 1, true) and not (protocol and find(protocol, "\0", 1, true)) then
        key = format("%s\0%s\0%s\0%s\0%s\0%s\0%s\0%s", url,
            protocol and ("S" .. protocol) or "N", exact(weight), tostring(status), exact(timestamp),
            exact(warmup), tostring(gray), tostring(hc))
        local u = pool[key]
        if u then return u end
    end
    local scheme = (protocol and find(protocol, "%S")) and protocol or "http://"
    local host, port = M.split_url(url:match("^%s*(.-)%s*$"), scheme)
    local u = { url = url, protocol = scheme, raw_protocol = protocol, host = host, port = port,
          weight = weight, status = status, timestamp = timestamp, warmup = warmup,
          gray = gray, health_check = hc }
    if key then pool[key] = u end
    return u
end

-- props texts decoded (upstreams repeat them): weak, by text
local props_of = setmetatable({}, { __mode = "v" })
local EMPTY_PROPS = {}

local function decode_props(props)
    if type(props) == "string" then
        local t = props_of[props]
        if t == nil then
            t = cjson.decode(props)
            if type(t) ~= "table" then return EMPTY_PROPS end
            props_of[props] = t
        end
        return t
    end
    if type(props) ~= "table" then return EMPTY_PROPS end
    return props
end

-- UpstreamCheckTask.putToMap keeps one upstream per Upstream.equals (protocol and url): the
-- first of duplicates in a list is the one offered to the load balancer.
local function dedupe(list)
    local seen, out = {}, {}
    for _, u in ipairs(list) do
        local key = (u.raw_protocol or "\0") .. "\0" .. u.url
        if not seen[key] then
            seen[key] = true
            out[#out + 1] = u
        end
    end
    return out
end

-- Gson's int: a JSON number or a numeric string; absent or null keeps Java's default.
local function int(v, default)
    local n = num(v, nil)
    if not n then return default end
    return n >= 0 and math.floor(n) or math.ceil(n)
end

-- from_discovery(entry_table, now_ms) -> upstream list (healthy only, gray filter applied)
-- DiscoveryUpstreamData.status and .weight are Java ints: absent or null is 0, so an upstream
-- without `status` is up (0 == status).
function M.from_discovery(entry, now_ms)
    local all, gray = {}, {}
    local list = entry.upstreamDataList
    if type(list) ~= "table" then return {} end
    for _, u in ipairs(list) do
        if type(u) == "table" then
            local props = decode_props(u.props)
            local hc = bool(props.healthCheckEnabled, true)
            local status = int(u.status, 0) == 0
            -- UpstreamCacheManager.initializeUpstreamHealthStatus: no health check -> up
            if hc == false then status = true end
            local up = make(u.url, u.protocol, int(u.weight, 0), status,
                date_ms(u.dateCreated, now_ms), int(props.warmup, 10), bool(props.gray, false), hc)
            if up then
                all[#all + 1] = up
                if up.gray then gray[#gray + 1] = up end
            end
        end
    end
    local chosen = #gray > 0 and gray or all
    return dedupe(M.healthy(chosen))
end

-- from_selector_handle(handle_json_text, now_ms) -> upstream list (older admins)
-- ShenYu <= 2.6.0 (DividePluginDataHandler.convertUpstreamList) read DivideUpstream with Gson:
-- weight and warmup default to 0 (no field initializer), status to true, timestamp to 0; gray
-- and healthCheckEnabled were not passed on, so neither filters nor forces anything here.
function M.from_selector_handle(handle, now_ms)
    local list = type(handle) == "string" and cjson.decode(handle) or handle
    if type(list) ~= "table" then return {} end
    local all = {}
    for _, u in ipairs(list) do
        if type(u) == "table" then
            local up = make(u.upstreamUrl, u.protocol, int(u.weight, 0), bool(u.status, true),
                int(u.timestamp, 0), int(u.warmup, 0), false, true)
            if up then all[#all + 1] = up end
        end
    end
    return dedupe(M.healthy(all))
end

function M.healthy(list)
    local out = {}
    for _, u in ipairs(list) do
        if u.status then out[#out + 1] = u end
    end
    return out
end

return M
