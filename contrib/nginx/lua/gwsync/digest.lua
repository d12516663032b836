-- gwsync.digest: what a worker keeps of an item's JSON text to tell, at the next whole read of
-- its group, whether the item changed: the MD5 of the text (16 bytes), computed where the text
-- lies (an LMDB value in the map, or a Lua string) with libcrypto's MD5() through the FFI.
--
-- Why a digest and why MD5: the text itself (about 430 bytes for a rule) was a seventh of a
-- worker's table; 16 bytes are 40 as a Lua string. Two different texts with the same MD5 are
-- not found by accident (a 2^-128 chance per pair; crafting one needs the admin's own hand,
-- and the admin is who writes the routes anyway); a 64-bit hash would be about as fast but
-- would have to be written here. libcrypto is in every nginx that has TLS and costs about
-- 0.8 us for a rule's text. Without libcrypto (M.exact) the digest is the text itself:
-- exact, and as large as before.
local ffi = require "ffi"

local M = {}

pcall(ffi.cdef, "unsigned char *MD5(const unsigned char *d, size_t n, unsigned char *md);")

local crypto
for _, name in ipairs({ "libcrypto.so.3", "libcrypto.so.1.1", "crypto" }) do
    local ok, lib = pcall(ffi.load, name)
    if ok and pcall(function() return lib.MD5 end) then crypto = lib break end
end

local out = ffi.new("unsigned char[16]")
local fstr = ffi.string

M.exact = crypto == nil

-- of(p, n) -> the digest of the n bytes at p (a pointer, or a Lua string of length n)
if crypto then
    function M.of(p, n)
        crypto.MD5(p, n, out)
        return fstr(out, 16)
    end
else
    function M.of(p, n)
        if type(p) == "string" then return p end
        return fstr(p, n)
    end
end

return M
