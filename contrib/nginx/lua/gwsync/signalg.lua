-- gwsync.signalg: the signature functions of ShenYu's sign plugin (SignUtils.sign), as
-- upper-case hex: `MD5` = MD5(data .. key), `HMD5` = HMAC-MD5, `HS256` = HMAC-SHA256,
-- `HS512` = HMAC-SHA512 (SIGN-SEMANTICS.md §4).
--
-- libcrypto through the FFI, in nginx and under plain luajit alike: nginx links OpenSSL, so
-- the library is already in the worker, and one code path is what the unit tests check. The
-- output buffer is made once (one request at a time per worker). The key is the app's secret:
-- nothing here logs, and errors never carry the key or the data.
local ffi = require "ffi"

local M = {}

pcall(ffi.cdef, [[
typedef struct evp_md_st EVP_MD;
const EVP_MD *EVP_md5(void);
const EVP_MD *EVP_sha256(void);
const EVP_MD *EVP_sha512(void);
unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len,
                    const unsigned char *d, size_t n, unsigned char *md, unsigned int *md_len);
unsigned char *MD5(const unsigned char *d, size_t n, unsigned char *md);
]])

local crypto
for _, name in ipairs({ "libcrypto.so.3", "crypto", "libcrypto.so.1.1" }) do
    local ok, l = pcall(ffi.load, name)
    if ok then crypto = l break end
end

local out = ffi.new("unsigned char[64]")
local outlen = ffi.new("unsigned int[1]")
local HEX = "0123456789ABCDEF"
local hexbuf = ffi.new("char[128]")

local function upper_hex(n)
    for i = 0, n - 1 do
        local b = out[i]
        hexbuf[2 * i] = HEX:byte(math.floor(b / 16) + 1)
        hexbuf[2 * i + 1] = HEX:byte(b % 16 + 1)
    end
    return ffi.string(hexbuf, 2 * n)
end

local function hmac(md)
    return function(key, data)
        local p = crypto.HMAC(md(), key, #key, data, #data, out, outlen)
        if p == nil then error("HMAC failed", 0) end
        return upper_hex(outlen[0])
    end
end

-- name -> fn(key, data) -> upper-case hex
local FUNCTIONS = {
    MD5 = function(key, data)
        local s = data .. key
        crypto.MD5(s, #s, out)
        return upper_hex(16)
    end,
    HMD5 = hmac(function() return crypto.EVP_md5() end),
    HS256 = hmac(function() return crypto.EVP_sha256() end),
    HS512 = hmac(function() return crypto.EVP_sha512() end),
}

-- supported(name) -> whether SignUtils knows the algorithm (case-sensitive, as its map is)
function M.supported(name)
    return name ~= nil and FUNCTIONS[name] ~= nil
end

-- sign(name, key, data) -> upper-case hex | nil, why (ShenYu: NullPointerException for a null
-- key or data, UnsupportedOperationException for an unknown name; both HTTP 500)
function M.sign(name, key, data)
    if type(key) ~= "string" or type(data) ~= "string" then return nil, "Key or data is null." end
    local f = name ~= nil and FUNCTIONS[name]
    if not f then return nil, "unsupported sign algorithm:" .. tostring(name) end
    return f(key, data)
end

return M
