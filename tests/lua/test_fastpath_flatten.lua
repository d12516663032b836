-- gwsync.fastpath.flatten: an item of one uri condition (Ant "/a/**", Ant "/a/b/**",
-- startsWith) tested from fields on the item answers every request exactly as the
-- condition's own test does, "//" paths and blank paths included.
local T = require "tinytest"
local request = require "gwsync.request"
local conditions = require "gwsync.conditions"
local fastpath = require "gwsync.fastpath"

local PATHS = { "/a", "/a/", "/a/b", "/a/bc", "/a/b/", "/a/b/c", "//a/b", "/a//b", "/a//b/c",
    "//a//b//", "/ab", "/A/b", "/b/a", "", " ", "\t", "/", "//", "a/b", "/a/b;x", "/a/b%2Fc",
    "/a/b?x", "/s12/r3/item", "/s12/r3", "/s12/r30/item", "/s1/r3/item" }

-- one item of one condition, as gwsync.items makes it: its test, then the flattened copy
local function items_of(op, pv)
    local c = conditions.compile({ paramType = "uri", operator = op, paramName = "/", paramValue = pv })
    local test = fastpath.item_test(0, { c })
    local plain = { conds = { c }, test = test, match_mode = 0 }
    local flat = { conds = { c }, test = test, match_mode = 0 }
    fastpath.flatten(flat)
    return plain, flat
end

for _, k in ipairs({ { "match", "/a/**" }, { "match", "/a/b/**" }, { "match", "/s12/r3/**" },
                     { "startsWith", "/a/b" }, { "startsWith", "/a/" }, { "startsWith", "/s12/r3/" },
                     { "startsWith", "" } }) do
    T.case(k[1] .. " " .. k[2] .. ": flattened, and the same answer for every path", function()
        local plain, flat = items_of(k[1], k[2])
        T.truthy(flat.test ~= plain.test, "the item has its own test")
        for _, p in ipairs(PATHS) do
            local a = plain.test(plain, request.new({ path = p, method = "GET" }))
            local b = flat.test(flat, request.new({ path = p, method = "GET" }))
            T.eq(b, a, p)
        end
    end)
end

T.case("other items keep their test (two conditions, a regex, a header)", function()
    local a = conditions.compile({ paramType = "uri", operator = "match", paramName = "/", paramValue = "/a/**" })
    local b = conditions.compile({ paramType = "uri", operator = "regex", paramName = "/", paramValue = "/a.*" })
    local h = conditions.compile({ paramType = "header", operator = "startsWith", paramName = "X-A", paramValue = "v" })
    for _, conds in ipairs({ { a, a }, { b }, { h } }) do
        local test = fastpath.item_test(0, conds)
        local e = { conds = conds, test = test, match_mode = 0 }
        fastpath.flatten(e)
        T.eq(e.test, test)
        T.eq(e.f1, nil)
    end
end)
T.done()
