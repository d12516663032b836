-- gwsync.request: one HTTP request as ShenYu's conditions see it (DIVIDE-SEMANTICS §2).
--
-- new(raw) wraps the neutral request description (path, method, headers as ordered
-- {name, value} lines, query, remote_addr, now, client_address) and answers real_data(paramType,
-- paramName) with the value ShenYu's *ParameterData class would compute. Everything derived
-- (header index, query parameters, cookies, client address, path tokens) is computed on first
-- use and kept in the request object, so conditions that look at the same thing share work and
-- a request that only has uri conditions never parses its headers.
local errors = require "gwsync.errors"
local antpath = require "gwsync.antpath"
local pathpattern = require "gwsync.pathpattern"

local M = {}

local byte, sub, find, lower, char = string.byte, string.sub, string.find, string.lower, string.char
local SLASH = 47

local Req = {}
Req.__index = Req

function M.new(raw)
    return setmetatable({ raw = raw, path = raw.path or "/", method = raw.method or "GET" }, Req)
end

---------------------------------------------------------------------------------------------
-- headers: Spring HttpHeaders.get(name).get(0): case-insensitive name, first line's value
---------------------------------------------------------------------------------------------
function Req:_index_headers()
    local first, count = {}, {}
    local hs = self.raw.headers or {}
    for i = 1, #hs do
        local h = hs[i]
        local k = lower(h[1])
        if first[k] == nil then first[k] = h[2] end
        count[k] = (count[k] or 0) + 1
    end
    self._hfirst, self._hcount = first, count
end

-- header(name) -> first value or nil
function Req:header(name)
    if not self._hfirst then self:_index_headers() end
    return self._hfirst[lower(name)]
end

-- header_lc(lname) -> header(lname) for a name already in lower case (no lower() per call)
function Req:header_lc(lname)
    local first = self._hfirst
    if not first then
        self:_index_headers()
        first = self._hfirst
    end
    return first[lname]
end

-- specify_domain() -> header("specify-domain"), asked for every routed request by the load
-- balancer. A gateway that can tell cheaply that the request has no such header sets
-- raw.no_specify_domain (true), so that a request whose conditions need no header is not
-- made to split its header lines just for this.
function Req:specify_domain()
    if not self._hfirst and self.raw.no_specify_domain == true then return nil end
    return self:header_lc("specify-domain")
end

function Req:header_count(name)
    if not self._hfirst then self:_index_headers() end
    return self._hcount[lower(name)] or 0
end

---------------------------------------------------------------------------------------------
-- query: AbstractServerHttpRequest.initQueryParams (regex ([^&=]+)(=?)([^&]+)? over the raw
-- query, names and values URLDecoder-decoded, first value wins)
---------------------------------------------------------------------------------------------
local function hexval(c)
    if not c then return nil end
    if c >= 48 and c <= 57 then return c - 48 end
    if c >= 65 and c <= 70 then return c - 55 end
    if c >= 97 and c <= 102 then return c - 87 end
    return nil
end

-- java.net.URLDecoder.decode(s, UTF_8): "+" -> " ", "%XX" -> byte. A bad escape throws, and
-- Spring's decodeQueryParam then keeps the raw text. (Integer.parseInt accepts a sign: "%+1"
-- is byte 1, "%-1" is an error.) Decoded bytes are kept as they are: Java would replace
-- invalid UTF-8 with U+FFFD.
local function url_decode(s)
    if not find(s, "[%%+]") then return s end
    local out, n, i, len = {}, 0, 1, #s
    while i <= len do
        local c = byte(s, i)
        if c == 43 then
            n = n + 1; out[n] = " "; i = i + 1
        elseif c == 37 then
            if i + 2 > len then return s end -- "Incomplete trailing escape"
            local a, b = byte(s, i + 1), byte(s, i + 2)
            local v
            if a == 43 then v = hexval(b) else
                local u, l = hexval(a), hexval(b)
                v = u and l and (u * 16 + l)
            end
            if not v then return s end -- "Illegal hex characters"
            n = n + 1; out[n] = char(v); i = i + 3
        else
            local j = find(s, "[%%+]", i) or len + 1
            n = n + 1; out[n] = sub(s, i, j - 1); i = j
        end
    end
    return table.concat(out, "", 1, n)
end
M.url_decode = url_decode

local function parse_query(q)
    local params = {}
    local i, len = 1, #q
    while i <= len do
        local c = byte(q, i)
        if c == 38 or c == 61 then -- "&" or "=": no match can start here
            i = i + 1
        else
            local ne = find(q, "[&=]", i) or len + 1
            local name = url_decode(sub(q, i, ne - 1))
            local value
            i = ne
            if byte(q, i) == 61 then
                i = i + 1
                local ve = find(q, "&", i, true) or len + 1
                value = ve > i and url_decode(sub(q, i, ve - 1)) or ""
                i = ve
            end
            if params[name] == nil then params[name] = value or false end
        end
    end
    return params
end
M.parse_query = parse_query

-- query_param(name) -> first value, "" for "?a=", nil for "?a" or absent
function Req:query_param(name)
    local qp = self._query
    if not qp then
        qp = self.raw.query and parse_query(self.raw.query) or {}
        self._query = qp
    end
    local v = qp[name]
    if v == false then return nil end
    return v
end

---------------------------------------------------------------------------------------------
-- cookies: the first cookie named exactly paramName over all Cookie lines, decoded as Reactor
-- Netty decodes them (Netty's ServerCookieDecoder.STRICT):
--  * cookies are separated by ";"; before a name, blanks (\t \n \v \f \r space), "," and ";"
--    are skipped; the name runs to "=" (or ";"), the value from "=" to the next ";", neither
--    trimmed;
--  * a cookie without "=" is dropped, a value in double quotes is unwrapped (an unbalanced
--    opening quote drops the cookie);
--  * STRICT drops a cookie whose name is not an RFC 2616 token or whose value has a byte
--    outside RFC 6265's cookie-octet (so "a=1 ; b" or "a=x y" drop a);
--  * a header starting with "$Version" (RFC 2965) skips to after its first ";" and ignores
--    names starting with $Path, $Domain and $Port.
---------------------------------------------------------------------------------------------
local COOKIE_SKIP = { [9] = true, [10] = true, [11] = true, [12] = true, [13] = true, [32] = true,
    [44] = true, [59] = true }

local NAME_OK, VALUE_OK = {}, {}
for c = 32, 126 do NAME_OK[c] = true end
for _, c in ipairs({ 40, 41, 60, 62, 64, 44, 59, 58, 92, 34, 47, 91, 93, 63, 61, 123, 125, 32, 9 }) do
    NAME_OK[c] = nil
end
for c = 0x21, 0x7E do VALUE_OK[c] = true end
for _, c in ipairs({ 0x22, 0x2C, 0x3B, 0x5C }) do VALUE_OK[c] = nil end

local function all_in(s, set)
    for i = 1, #s do
        if not set[byte(s, i)] then return false end
    end
    return true
end

local function decode_cookie_line(h, jar)
    local len = #h
    if len == 0 then return end
    local i = 1
    local rfc2965 = lower(sub(h, 1, 8)) == "$version"
    if rfc2965 then i = (find(h, ";", 1, true) or 0) + 1 end
    while true do
        while i <= len and COOKIE_SKIP[byte(h, i)] do i = i + 1 end
        if i > len then return end
        local nb = i
        local ne, value
        while true do
            local c = byte(h, i)
            if c == 59 then -- ";": a name without a value
                ne = i
                break
            elseif c == 61 then -- "="
                ne = i
                local semi = find(h, ";", i + 1, true)
                value = sub(h, i + 1, (semi or len + 1) - 1)
                i = semi or len + 1
                break
            end
            i = i + 1
            if i > len then ne = i break end
        end
        local name = sub(h, nb, ne - 1)
        local skip = rfc2965 and (sub(name, 1, 5) == "$Path" or sub(name, 1, 7) == "$Domain"
            or sub(name, 1, 5) == "$Port")
        if not skip and name ~= "" and value then
            if byte(value, 1) == 34 then
                if #value >= 2 and byte(value, -1) == 34 then value = sub(value, 2, -2) else value = nil end
            end
            if value and all_in(name, NAME_OK) and all_in(value, VALUE_OK) and jar[name] == nil then
                jar[name] = value
            end
        end
    end
end
M.decode_cookie_line = decode_cookie_line

function Req:_parse_cookies()
    local jar = {}
    local hs = self.raw.headers or {}
    for i = 1, #hs do
        local h = hs[i]
        if lower(h[1]) == "cookie" then decode_cookie_line(h[2], jar) end
    end
    self._cookies = jar
end

function Req:cookie(name)
    if not self._cookies then self:_parse_cookies() end
    return self._cookies[name]
end

---------------------------------------------------------------------------------------------
-- client address for `ip` and `host` conditions. Two rules, chosen by raw.client_address:
--  * "nginx": the peer address the gateway gives (nginx's $remote_addr, which the realip
--    module rewrites only for the proxies an operator trusts with set_real_ip_from). The
--    gateway's default: a client cannot choose it.
--  * "shenyu" (or absent: this module models ShenYu): ShenYu's ForwardedRemoteAddressResolver(1)
--    -- the left-most X-Forwarded-For entry when the request has exactly one such header
--    line with two or more ", "-separated entries, else the peer -- then
--    getAddress().getHostAddress() (ip) or getHostString() (host). Any client can send that
--    header, so an `ip` rule is then no protection unless a proxy in front rewrites it.
---------------------------------------------------------------------------------------------

-- Java's String.split(", "): leading empty piece kept, trailing empty pieces removed.
local function split_comma_space(s)
    local out, n, i = {}, 0, 1
    while true do
        local j = find(s, ", ", i, true)
        if not j then break end
        n = n + 1; out[n] = sub(s, i, j - 1)
        i = j + 2
    end
    n = n + 1; out[n] = sub(s, i)
    while n > 0 and out[n] == "" do out[n] = nil; n = n - 1 end
    if n == 0 and s == "" then out[1] = "" end -- "".split(..) is [""]
    return out
end
M.split_comma_space = split_comma_space

local function ipv4_literal(s)
    local a, b, c, d = s:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
    if not a then return nil end
    for _, x in ipairs({ a, b, c, d }) do
        -- leading zeros are "ambiguous" literals Java refuses (then it would try DNS)
        if #x > 3 or tonumber(x) > 255 or (#x > 1 and byte(x, 1) == 48) then return nil end
    end
    return s
end

-- Java Inet6Address.getHostAddress(): 8 groups, lower-case hex without leading zeros, no "::"
-- compression; an IPv4-mapped address (::ffff:a.b.c.d) is an Inet4Address in Java.
local function ipv6_literal(s)
    if byte(s, 1) == 91 and byte(s, -1) == 93 then s = sub(s, 2, -2) end
    local zone = ""
    local pct = find(s, "%", 1, true)
    if pct then zone = sub(s, pct); s = sub(s, 1, pct - 1) end
    if not find(s, ":", 1, true) or find(s, "[^%x:%.]") then return nil end
    local tail4
    local last = s:match("([^:]*)$")
    if find(last, ".", 1, true) then
        tail4 = ipv4_literal(last)
        if not tail4 then return nil end
        s = sub(s, 1, #s - #last) .. "0:0" -- placeholder groups, replaced below
    end
    local head, rest = s, nil
    local dc = find(s, "::", 1, true)
    if dc then
        head, rest = sub(s, 1, dc - 1), sub(s, dc + 2)
        if find(rest, "::", 1, true) then return nil end
    end
    local function groups(part)
        local g = {}
        if part == "" then return g end
        for x in (part .. ":"):gmatch("([^:]*):") do
            if x == "" or #x > 4 then return nil end
            g[#g + 1] = tonumber(x, 16)
        end
        return g
    end
    local hg, rg = groups(head), rest and groups(rest) or {}
    if not hg or not rg then return nil end
    local all = {}
    for _, v in ipairs(hg) do all[#all + 1] = v end
    if rest then
        local fill = 8 - #hg - #rg
        if fill < 1 then return nil end
        for _ = 1, fill do all[#all + 1] = 0 end
    end
    for _, v in ipairs(rg) do all[#all + 1] = v end
    if #all ~= 8 then return nil end
    if tail4 then
        local a, b, c, d = tail4:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
        all[7] = tonumber(a) * 256 + tonumber(b)
        all[8] = tonumber(c) * 256 + tonumber(d)
    end
    if all[1] == 0 and all[2] == 0 and all[3] == 0 and all[4] == 0 and all[5] == 0 and all[6] == 0xffff then
        return string.format("%d.%d.%d.%d", all[7] / 256, all[7] % 256, all[8] / 256, all[8] % 256)
    end
    local out = {}
    for i = 1, 8 do out[i] = string.format("%x", all[i]) end
    return table.concat(out, ":") .. zone
end

-- java_host_address(text) -> InetAddress.getByName(text).getHostAddress() for literals, or nil
function M.java_host_address(text)
    if text == "" or text == "localhost" then return "127.0.0.1" end
    return ipv4_literal(text) or ipv6_literal(text)
end

-- The resolved client: (address_text_for_ip | false when unresolvable, host_string)
function Req:_resolve_client()
    local entry
    if self.raw.client_address ~= "nginx" and self:header_count("x-forwarded-for") == 1 then
        local values = split_comma_space(self:header("x-forwarded-for"))
        if #values >= 2 or (#values == 1 and values[1] == "") then entry = values[1] end
    end
    local ip, host
    if entry then
        -- new InetSocketAddress(entry, 0): getHostString() is the entry as written
        host = entry
        ip = M.java_host_address(entry) or false
    else
        local peer = self.raw.remote_addr or ""
        ip = M.java_host_address(peer) or peer
        host = ip
    end
    self._ip, self._host = ip, host
end

-- client_ip_or_false() -> client_ip(), or false where client_ip() would raise (the fast
-- path's non-raising form)
function Req:client_ip_or_false()
    if self._ip == nil then self:_resolve_client() end
    return self._ip
end

function Req:client_ip()
    if self._ip == nil then self:_resolve_client() end
    if self._ip == false then
        -- A non-literal X-Forwarded-For entry: Java resolves it by DNS and, when unresolvable,
        -- getAddress() is null -> NullPointerException (500). We do no DNS in the gateway.
        errors.raise_internal("X-Forwarded-For entry is not an IP literal")
    end
    return self._ip
end

function Req:client_host()
    if self._ip == nil then self:_resolve_client() end
    return self._host
end

-- the socket peer address in Java form (hash load balancer key: no X-Forwarded-For)
function Req:peer_ip()
    local peer = self.raw.remote_addr or ""
    return M.java_host_address(peer) or peer
end

---------------------------------------------------------------------------------------------
-- domain: request.getURI().getHost(): the Host header's host part (IPv6 keeps brackets);
-- java.net.URI gives null for a host that is not a valid hostname (e.g. with "_").
---------------------------------------------------------------------------------------------
local function uri_host(h)
    if not h or h == "" then return nil end
    if byte(h, 1) == 91 then
        local e = find(h, "]", 1, true)
        if not e then return nil end
        return sub(h, 1, e)
    end
    local c = find(h, ":", 1, true)
    if c then h = sub(h, 1, c - 1) end
    if h == "" then return nil end
    if ipv4_literal(h) then return h end
    local labels = {}
    local hh = h
    if byte(hh, -1) == 46 then hh = sub(hh, 1, -2) end -- a trailing dot is allowed
    for label in (hh .. "."):gmatch("([^.]*)%.") do
        if label == "" or find(label, "[^%w%-]") or byte(label, 1) == 45 or byte(label, -1) == 45 then
            return nil
        end
        labels[#labels + 1] = label
    end
    if #labels > 1 and not labels[#labels]:match("^%a") then return nil end
    return h
end
M.uri_host = uri_host

function Req:domain()
    if self._domain == nil then self._domain = uri_host(self:header("host")) or false end
    return self._domain or nil
end

---------------------------------------------------------------------------------------------
-- path forms shared by all uri conditions of the request
---------------------------------------------------------------------------------------------
function Req:ant_tokens()
    local t = self._ant
    if not t then t = antpath.tokenize(self.path); self._ant = t end
    return t
end

-- path_container_or_false() -> the parsed path (pathpattern.parse_path), or false when the
-- path does not parse (path_container() then raises ShenYu's 400)
function Req:path_container_or_false()
    local c = self._pc
    if c == nil then
        local err
        c, err = pathpattern.parse_path(self.path)
        if not c then self._pc_err = err; c = false end
        self._pc = c
    end
    return c
end

function Req:path_container()
    local c = self:path_container_or_false()
    if c == false then errors.raise_bad_request(self._pc_err) end
    return c
end

-- ant_key() -> the path's first AntPathMatcher token ("" when it has none): the key of the
-- router's selector index, found without splitting the whole path.
function Req:ant_key()
    local k = self._akey
    if k == nil then
        local p = self.path
        local i = 1
        if byte(p, 1) == SLASH then
            i = 2
            if byte(p, 2) == SLASH then i = find(p, "[^/]", 3) or #p + 1 end
        end
        local j = find(p, "/", i, true)
        k = sub(p, i, (j or #p + 1) - 1)
        self._akey = k
    end
    return k
end

-- pp_key() -> the path's first PathContainer segment when the path is "/segment..." ("" when
-- the path's elements do not start with a separator and a segment), or nil when the path has
-- a "%" (then only parse_path can tell the decoded segment, or that the path is invalid).
function Req:pp_key()
    local k = self._ppkey
    if k == nil then
        local p = self.path
        if find(p, "%", 1, true) then
            k = false
        elseif byte(p, 1) ~= SLASH then
            k = ""
        else
            local j = find(p, "/", 2, true)
            k = sub(p, 2, (j or #p + 1) - 1)
            local semi = find(k, ";", 1, true)
            if semi then k = sub(k, 1, semi - 1) end
        end
        self._ppkey = k
    end
    return k or nil
end

---------------------------------------------------------------------------------------------
-- post: String fields of ShenyuContext as the divide decorator fills them for an http call
---------------------------------------------------------------------------------------------
local CONTEXT_FIELDS = { path = true, method = true, realUrl = true, rpcType = true,
    httpMethod = true, module = true, contextPath = false, sign = false, timestamp = false,
    appKey = false }

function Req:context_field(name)
    if name == "startDateTime" or name == "serialVersionUID" then
        -- not a String: (String) cast -> ClassCastException -> 500
        errors.raise_internal("ShenyuContext." .. name .. " is not a String")
    end
    local known = CONTEXT_FIELDS[name]
    if not known then return nil end
    if name == "rpcType" then return "http" end
    if name == "httpMethod" then return self.method end
    if name == "module" then return "divide-http" end
    return self.path -- path, method (sic: the decorator stores the path) and realUrl
end

---------------------------------------------------------------------------------------------
-- real_data(paramType, paramName): ParameterDataFactory.builderData
---------------------------------------------------------------------------------------------
local BUILDERS = {
    uri = function(r) return r.path end,
    header = function(r, name) return r:header(name) or "" end,
    query = function(r, name) return r:query_param(name) end,
    cookie = function(r, name) return r:cookie(name) or "" end,
    ip = function(r) return r:client_ip() end,
    host = function(r) return r:client_host() end,
    domain = function(r) return r:domain() end,
    req_method = function(r) return r.method end,
    post = function(r, name) return r:context_field(name) end,
}
M.PARAM_TYPES = BUILDERS

function Req:real_data(ptype, pname)
    local b = BUILDERS[ptype]
    if not b then
        if ptype == nil or not find(ptype, "%S") then
            errors.raise_internal("get join name is null")
        end
        -- includes "path" and "form-data": in ParamTypeEnum but without a ParameterData
        errors.raise_bad_request(ptype .. " name is error")
    end
    if ptype == "header" or ptype == "query" or ptype == "cookie" then
        if pname == nil then
            if ptype == "header" then return "" end -- HttpHeaders.get(null) -> null -> ""
            if ptype == "cookie" then return "" end
            return nil
        end
    end
    return b(self, pname)
end

return M
