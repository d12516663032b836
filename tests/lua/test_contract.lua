-- The router's copy of the cache layout's names (gwsync.contract) against the C header that
-- defines them (include/gwsync/cache.h): every GW_CACHE_* macro, and the change-log key width
-- its comment states. A macro added to the header and not to the router fails here.
local T = require "tinytest"
local contract = require "gwsync.contract"

local src = os.getenv("GWSYNC_SRCDIR") or "."
local f = assert(io.open(src .. "/include/gwsync/cache.h", "r"))
local header = f:read("*a")
f:close()

-- the GW_CACHE_* macros: name without the prefix -> value (string literal or number)
local macros, n = {}, 0
for name, value in header:gmatch("\n#define GW_CACHE_([%w_]+)[ \t]+([^\n]+)") do
    value = value:gsub("%s+$", "")
    local str = value:match('^"(.*)"$')
    macros[name] = str or tonumber(value)
    n = n + 1
end

T.case("cache.h has the macros this test reads", function()
    T.truthy(n >= 9, "found " .. n .. " GW_CACHE_* macros")
end)

T.case("every GW_CACHE_* macro has the same value in gwsync.contract", function()
    for name, value in pairs(macros) do
        local mine = contract[name]
        T.truthy(mine ~= nil, "gwsync.contract lacks " .. name)
        if name == "FORMAT" then
            T.eq(mine, tostring(value), name .. " (kept as the text meta `format` holds)")
        else
            T.eq(mine, value, name)
        end
    end
end)

T.case("the change-log key width is the one cache.h states", function()
    local width = header:match("exactly (%d+) ASCII decimal digits")
    T.truthy(width, "cache.h states the width")
    T.eq(contract.LOG_KEY_DIGITS, tonumber(width))
    T.eq(require("gwsync.changes").key(42), string.rep("0", tonumber(width) - 2) .. "42")
end)

T.case("gwsync.contract holds nothing cache.h does not define", function()
    for name in pairs(contract) do
        if name ~= "LOG_KEY_DIGITS" then T.truthy(macros[name] ~= nil, name .. " not in cache.h") end
    end
end)

T.done()
