-- gwsync.routes.sort_nodes: the order the route table keeps its selectors and each selector's
-- rules in ((sort, key), ShenYu's list order) equals table.sort's with routes.node_lt, for
-- empty, short (insertion) and long (merge) lists, sorted, reversed and random, ties on sort.
local T = require "tinytest"
local routes = require "gwsync.routes"

local function check(list, what)
    local ref = {}
    for i = 1, #list do ref[i] = list[i] end
    table.sort(ref, routes.node_lt)
    routes.sort_nodes(list, #list)
    for i = 1, #ref do
        if list[i] ~= ref[i] then
            T.eq(list[i].key, ref[i].key, what .. ": position " .. i)
            return
        end
    end
    T.eq(#list, #ref, what .. ": length")
end

T.case("short and long lists sort as table.sort with node_lt", function()
    math.randomseed(7)
    for trial = 1, 600 do
        local n = math.random(0, trial % 20 == 0 and 3000 or 60)
        local l = {}
        for i = 1, n do
            l[i] = { sort = math.random(1, 20), key = string.format("k%07d-%d", math.random(1, 1e6), i) }
        end
        check(l, "trial " .. trial .. ", " .. n .. " nodes")
    end
end)

T.case("already sorted and reversed lists, every length around the two methods", function()
    for n = 0, 70 do
        local up, down = {}, {}
        for i = 1, n do
            up[i] = { sort = math.floor(i / 3), key = string.format("k%03d", i) }
            down[n - i + 1] = { sort = math.floor(i / 3), key = string.format("k%03d", i) }
        end
        check(up, "sorted, " .. n)
        check(down, "reversed, " .. n)
    end
end)

T.done()
