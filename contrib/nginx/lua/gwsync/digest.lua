-- gwsync.digest: what a worker keeps of an item's JSON text to tell, at the next whole read of
-- its group, whether the item changed: the low 52 bits of the text's XXH64, as a Lua number,
-- computed where the text lies (an LMDB value in the map, or a Lua string).
--
-- Why a digest: the text itself (about 450 bytes for a rule) was a seventh of a worker's
-- table. Why a number: it is held in the item's field itself, no object at all, where an
-- 8-byte Lua string was 32 bytes and one more object (of 120,000) for the collector to walk
-- at every cycle and for a first load to make and intern; 52 bits are what a double holds
-- exactly.
-- Why XXH64 (Yann Collet's xxHash, 64-bit; the specification's algorithm, written here in
-- LuaJIT's 64-bit FFI arithmetic, checked against its published test vectors by
-- tests/lua/test_digest.lua): it is what decides "unchanged", so it must not collide by
-- accident, and it runs once per item of a first load (120,000 at 10,000 selectors). Two
-- different texts of an item have the same digest with a chance of about 2^-52 (the texts'
-- lengths are mixed in too); XXH64 is not made to resist a crafted collision, which only the
-- admin, who writes the routes anyway, could send. libcrypto's MD5 (16 bytes, through the FFI)
-- was measured at about 5,000 instructions for a 512-byte text (10 per byte, with OpenSSL 3's
-- per-call overhead): a fifth of a first load; XXH64 here costs about a third of that.
-- Where libxxhash is installed (Debian's libxxhash0, which apt itself depends on, so every
-- Debian and Ubuntu host has it) its XXH64 is called through the FFI instead: the same
-- function of the same bytes, about four times faster than the Lua code on a rule's text
-- (a tenth of a first load). The Lua code is kept for hosts without it, and the test checks
-- one against the other.
local ffi = require "ffi"
local bit = require "bit"

local M = {}

local rol, bxor, rshift, band = bit.rol, bit.bxor, bit.rshift, bit.band
local cast = ffi.cast
local u8p = ffi.typeof("const uint8_t *")
local u64p = ffi.typeof("const uint64_t *")
local u32p = ffi.typeof("const uint32_t *")

local P1, P2, P3 = 0x9E3779B185EBCA87ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL
local P4, P5 = 0x85EBCA77C2B2AE63ULL, 0x27D4EB2F165667C5ULL
local ZERO = 0ULL


-- xxh64(p, n, seed) -> the XXH64 of the n bytes at p (a uint64_t cdata)
local function xxh64(p, n, seed)
    local s = seed + ZERO
    local h
    local i = 0
    if n >= 32 then
        local v1, v2, v3, v4 = s + P1 + P2, s + P2, s, s - P1
        local last = n - 32
        repeat
            local w = cast(u64p, p + i)
            v1 = rol(v1 + w[0] * P2, 31) * P1
            v2 = rol(v2 + w[1] * P2, 31) * P1
            v3 = rol(v3 + w[2] * P2, 31) * P1
            v4 = rol(v4 + w[3] * P2, 31) * P1
            i = i + 32
        until i > last
        h = rol(v1, 1) + rol(v2, 7) + rol(v3, 12) + rol(v4, 18)
        h = bxor(h, rol(v1 * P2, 31) * P1) * P1 + P4
        h = bxor(h, rol(v2 * P2, 31) * P1) * P1 + P4
        h = bxor(h, rol(v3 * P2, 31) * P1) * P1 + P4
        h = bxor(h, rol(v4 * P2, 31) * P1) * P1 + P4
    else
        h = s + P5
    end
    h = h + n
    while i + 8 <= n do
        h = rol(bxor(h, rol(cast(u64p, p + i)[0] * P2, 31) * P1), 27) * P1 + P4
        i = i + 8
    end
    if i + 4 <= n then
        h = rol(bxor(h, (cast(u32p, p + i)[0] + ZERO) * P1), 23) * P2 + P3
        i = i + 4
    end
    while i < n do
        h = rol(bxor(h, (p[i] + ZERO) * P5), 11) * P1
        i = i + 1
    end
    h = bxor(h, rshift(h, 33)) * P2
    h = bxor(h, rshift(h, 29)) * P3
    return bxor(h, rshift(h, 32))
end
M.xxh64 = xxh64

-- libxxhash's XXH64, when the host has the library
local native
do
    pcall(ffi.cdef, "unsigned long long XXH64(const void *input, size_t length, unsigned long long seed);")
    for _, name in ipairs({ "libxxhash.so.0", "xxhash" }) do
        local ok, lib = pcall(ffi.load, name)
        if ok and pcall(function() return lib.XXH64 end) then
            native = lib
            break
        end
    end
end
M.native = native ~= nil
M.native_xxh64 = native and function(p, n, seed) return native.XXH64(p, n, seed or 0) end

-- of(p, n) -> the digest of the n bytes at p (a pointer, or a Lua string of length n): a
-- number, the low 52 bits of their XXH64
local LOW52 = 0xFFFFFFFFFFFFFULL
if native then
    function M.of(p, n)
        return tonumber(band(native.XXH64(p, n, 0), LOW52))
    end
else
    function M.of(p, n)
        if type(p) == "string" then p = cast(u8p, p) end
        return tonumber(band(xxh64(p, n, 0), LOW52))
    end
end

return M
