-- gwsync.digest: XXH64 as its specification computes it (the reference implementation's test
-- vectors), on every length around its 32-, 8- and 4-byte steps, from a pointer or a string;
-- and a digest that tells apart texts that differ in one byte anywhere, or in length only.
local T = require "tinytest"
local ffi = require "ffi"
local digest = require "gwsync.digest"

local u8p = ffi.typeof("const uint8_t *")
local function hex(s, seed)
    return string.format("%016x", digest.xxh64(ffi.cast(u8p, s), #s, seed or 0))
end

T.case("XXH64 test vectors", function()
    T.eq(hex(""), "ef46db3751d8e999")
    T.eq(hex("a"), "d24ec4f1a98c6e5b")
    T.eq(hex("abc"), "44bc2cf5ad770999")
    T.eq(hex("message digest"), "066ed728fceeb3be")
    T.eq(hex("abcdefghijklmnopqrstuvwxyz"), "cfe1f278fa89835c")
    T.eq(hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"), "aaa46907d3047814")
    T.eq(hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
        "e04a477f19ee145d")
    T.eq(hex("Nobody inspects the spammish repetition"), "fbcea83c8a378bf1")
    T.eq(hex("", 1), "d5afba1336a3be4b")
end)

T.case("a digest is the low 52 bits of XXH64, as a number", function()
    T.eq(type(digest.of("abc", 3)), "number")
    T.eq(string.format("%x", digest.of("abc", 3)), "c2cf5ad770999")
    local s = "Nobody inspects the spammish repetition"
    T.eq(string.format("%x", digest.of(s, #s)), "ea83c8a378bf1")
end)

T.case("a digest from a pointer equals the digest from the string", function()
    for n = 0, 80 do
        local s = string.rep("x", n)
        T.eq(digest.of(s, #s), digest.of(ffi.cast(u8p, s), #s), "length " .. n)
    end
end)

T.case("texts that differ in one byte or in length have different digests", function()
    local seen = {}
    local base = string.rep('{"id":"r-00001-00","sort":1}', 6) -- 168 bytes
    local n = 0
    for len = 0, #base do
        local s = base:sub(1, len)
        local d = digest.of(s, #s)
        T.truthy(not seen[d], "length " .. len .. " collides with " .. tostring(seen[d]))
        seen[d] = "length " .. len
        n = n + 1
    end
    for i = 1, #base do
        for _, c in ipairs({ 0, 1, 0x7f, 0x80, 0xff }) do
            if base:byte(i) ~= c then
                local s = base:sub(1, i - 1) .. string.char(c) .. base:sub(i + 1)
                local d = digest.of(s, #s)
                T.truthy(not seen[d], "byte " .. i .. " = " .. c .. " collides with " .. tostring(seen[d]))
                seen[d] = "byte " .. i .. " = " .. c
                n = n + 1
            end
        end
    end
    T.truthy(n > 900, "many texts")
end)

T.case("libxxhash's XXH64 is used, and equals the Lua code on every length and byte", function()
    -- libxxhash0 is on every Debian host (apt depends on it) and in dev.sh's packages
    T.truthy(digest.native, "libxxhash.so.0 not loaded: digests fall back to the Lua code")
    local rnd = 12345
    local bytes = {}
    for n = 0, 300 do
        for i = 1, n do
            rnd = (rnd * 1103515245 + 12345) % 2147483648
            bytes[i] = string.char(rnd % 256)
        end
        local s = table.concat(bytes, "", 1, n)
        for _, seed in ipairs({ 0, 1, 0x9E3779B1 }) do
            T.eq(tostring(digest.native_xxh64(s, n, seed)),
                tostring(digest.xxh64(ffi.cast(u8p, s), n, seed) + 0ULL), "length " .. n)
        end
    end
end)

T.done()
