-- gwsync.index: the router's index over `uri` conditions, so that a request evaluates the
-- selectors (and the rules of a selector with many) that its path can match, not all of them.
--
-- An entry (a selector or rule node with a `test`) is filed under each of its places (see
-- fastpath.list_test), or in the `always` list when it has none:
--   exact   a hash of paths (uri `=`)
--   raw     a trie by "/"-separated piece of the raw path, empty pieces counted (uri
--           `startsWith`: the pieces of the prefix that end in "/", then a partial piece kept
--           per node in `part`, looked up by the lengths present at that node)
--   ant     a trie by Ant token (empty tokens dropped, as AntPathMatcher splits) for uri
--           `match`: the pattern's leading literal tokens
--   pp      a trie by PathContainer segment (%-decoded, ";params" dropped, empty segments
--           ending the walk) for uri `pathPattern`: the pattern's leading literal segments
-- like ShenYu's own ShenyuTrie, keyed by path segment. match(req, cands, n) walks each trie
-- along the request's path once, and runs the tests of the entries it meets (and of every
-- `always` entry): the cost is the path's depth plus the entries that can match, whatever
-- the number of entries. There is no size limit and no fallback to a scan.
--
-- Why it is sound: an entry is filed only where its test answers false, without raising, for
-- every path outside its places (fastpath.list_test); ShenYu evaluates every selector, and
-- the ones skipped would have answered false. One exception is kept exact: a pathPattern test
-- raises (HTTP 400) for a path that does not parse; when the index holds such entries
-- (`risky`) and the request's path does not parse, match() answers nil and the router's plain
-- evaluation decides.
-- Candidates come out in no particular order: the router ranks them by (score, sort, key),
-- which is ShenYu's list order (stable sort by `sort`, ties in cache key order).
--
-- Entries are added and removed one at a time (O(depth)): a change touches only the entries
-- of the items that changed. The index remembers each entry's slots (list and position, in
-- its own table: an entry may be a compiled rule shared with another route table's index)
-- and removes it by moving the list's last entry into its slot; emptied nodes are unlinked,
-- so the tries hold no garbage after any number of changes.
-- An entry is called as entry.test(entry, req). The index writes two fields on its entries,
-- the same whatever index holds them: ix_multi (filed under several places: run once per
-- match) and ix_seen (the match that last ran it: a stamp from one counter shared by every
-- index, so that an entry moved from one table's index to another's is never taken as seen).
local M = {}

local byte, sub, find = string.byte, string.sub, string.find
local SLASH = 47

local Index = {}
Index.__index = Index

-- A trie node: parent, seg, and kids, here, part, plens once it has them. Made by new_tab
-- and stores, not by a constructor: a constructor is a template copied (TDUP), and one with
-- nil fields (kids = nil, ...) lost nodes in LuaJIT 2.1.0-beta3 (Debian 12's): once the
-- build's traces were compiled, a parent's `kids` was found nil again after a child had been
-- linked into it, so the child's entries were filed in a node no walk reaches and the index
-- missed selectors (tests/lua/test_router_index.lua caught it in about one run in five,
-- depending on the process's addresses and the traces they gave).
local new_tab = require "table.new"
local function node(parent, seg)
    local t = new_tab(0, 8)
    t.parent, t.seg, t.n = parent, seg, 0
    return t
end

-- new(flat): flat = true files every entry in `always` (an index that indexes nothing: the
-- tests compare routing with and without the index)
function M.new(flat)
    return setmetatable({ always = {}, exact = {}, raw = node(), ant = node(), pp = node(),
                          risky = 0, count = 0, nraw = 0, nant = 0, npp = 0, nexact = 0,
                          slots = {}, flat = flat or nil }, Index)
end

-- the stamp of the last match, over every index (see above)
local stamp = 0

-- self.slots[ent]: where the entry is, to find it again: 4 values per place (list, position,
-- owner node, owner key), then, at [0], whether it counts as risky
local function put(self, ent, list, owner, okey)
    local i = #list + 1
    list[i] = ent
    local sl = self.slots[ent]
    local k = #sl
    sl[k + 1], sl[k + 2], sl[k + 3], sl[k + 4] = list, i, owner or false, okey or false
end

local function descend(root, segs)
    local n = root
    for i = 1, #segs do
        local s = segs[i]
        local kids = n.kids
        if not kids then kids = {}; n.kids = kids end
        local c = kids[s]
        if not c then c = node(n, s); kids[s] = c end
        n = c
    end
    return n
end

-- unlink empty nodes upwards
local function prune(n)
    while n and n.parent and n.here == nil and n.part == nil and n.kids == nil do
        local p = n.parent
        p.kids[n.seg] = nil
        if next(p.kids) == nil then p.kids = nil end
        n = p
    end
end

local function file(self, ent, d)
    local kind = d.kind
    if kind == "exact" then
        local list = self.exact[d.value]
        if not list then list = {}; self.exact[d.value] = list end
        put(self, ent, list, self.exact, d.value)
        self.nexact = self.nexact + 1
        return
    end
    local root = kind == "prefix" and self.raw or kind == "ant" and self.ant or self.pp
    local n = descend(root, d.segs)
    if kind == "prefix" then self.nraw = self.nraw + 1
    elseif kind == "ant" then self.nant = self.nant + 1
    else self.npp = self.npp + 1 end
    if kind == "prefix" and d.part ~= "" then
        local part = n.part
        if not part then part = {}; n.part = part; n.plens = {} end
        local list = part[d.part]
        if not list then
            list = {}
            part[d.part] = list
            local L = #d.part
            local plens = n.plens
            local found = false
            for i = 1, #plens do
                if plens[i][1] == L then plens[i][2] = plens[i][2] + 1; found = true break end
            end
            if not found then plens[#plens + 1] = { L, 1 } end
        end
        put(self, ent, list, n, d.part)
        return
    end
    local list = n.here
    if not list then list = {}; n.here = list end
    put(self, ent, list, n, false)
end

-- add(ent, places, risky): file ent under places (nil: always evaluated); risky: ent's test
-- raises for a path that does not parse (fastpath.list_test)
function Index:add(ent, places, risky)
    if self.slots[ent] then return end
    self.count = self.count + 1
    -- what remove() must undo
    risky = risky and not self.flat or false
    self.slots[ent] = { [0] = risky }
    if risky then self.risky = self.risky + 1 end
    if not places or self.flat then
        put(self, ent, self.always, nil, nil)
        return
    end
    if #places > 1 then ent.ix_multi = true end
    for i = 1, #places do file(self, ent, places[i]) end
end

-- take ent out of list at pos (the list's last entry moves there)
local function unput(self, list, pos)
    local last = #list
    local moved = list[last]
    list[pos] = moved
    list[last] = nil
    if pos ~= last then
        -- the moved entry (maybe ent itself, filed twice in this list) now sits at pos
        local ms = self.slots[moved]
        for i = 1, #ms, 4 do
            if ms[i] == list and ms[i + 1] == last then ms[i + 1] = pos break end
        end
    end
    return last - 1
end

-- remove(ent): take ent out of every list it is in
function Index:remove(ent)
    local slots = self.slots[ent]
    if not slots then return end
    self.count = self.count - 1
    if slots[0] then self.risky = self.risky - 1 end
    for i = 1, #slots, 4 do
        local left = unput(self, slots[i], slots[i + 1])
        local owner, okey = slots[i + 2], slots[i + 3]
        if owner == self.exact then
            self.nexact = self.nexact - 1
            if left == 0 then self.exact[okey] = nil end
        elseif owner then
            -- which trie: walk up to the root
            local r = owner
            while r.parent do r = r.parent end
            if r == self.raw then self.nraw = self.nraw - 1
            elseif r == self.ant then self.nant = self.nant - 1
            else self.npp = self.npp - 1 end
            if left == 0 then
                if okey then
                    owner.part[okey] = nil
                    local L = #okey
                    local plens = owner.plens
                    for k = 1, #plens do
                        if plens[k][1] == L then
                            plens[k][2] = plens[k][2] - 1
                            if plens[k][2] == 0 then table.remove(plens, k) end
                            break
                        end
                    end
                    if next(owner.part) == nil then owner.part = nil; owner.plens = nil end
                else
                    owner.here = nil
                end
                prune(owner)
            end
        end
    end
    self.slots[ent] = nil
end

-- has(ent) -> whether ent is in this index
function Index:has(ent)
    return self.slots[ent] ~= nil
end

---------------------------------------------------------------------------------------------
-- lookup
---------------------------------------------------------------------------------------------

-- scan(list, req, cands, n, stamp) -> n | nil: run each entry's test, keep the hits; nil as
-- soon as a test says "might raise". An entry filed under several places is run once.
local function scan(list, req, cands, n, stamp)
    for i = 1, #list do
        local e = list[i]
        local run = true
        if e.ix_multi then
            if e.ix_seen == stamp then run = false else e.ix_seen = stamp end
        end
        if run then
            local hit = e.test(e, req)
            if hit then
                n = n + 1; cands[n] = e
            elseif hit == nil then
                return nil
            end
        end
    end
    return n
end

-- the raw trie along the path's "/"-separated pieces
local function walk_raw(nd, p, req, cands, n, stamp)
    local pos, len = 1, #p
    while nd do
        local slash = find(p, "/", pos, true)
        local pend = (slash or len + 1) - 1
        local here = nd.here
        if here then
            n = scan(here, req, cands, n, stamp)
            if not n then return nil end
        end
        local part = nd.part
        if part then
            local plen = pend - pos + 1
            local plens = nd.plens
            for i = 1, #plens do
                local L = plens[i][1]
                if L <= plen then
                    local list = part[sub(p, pos, pos + L - 1)]
                    if list then
                        n = scan(list, req, cands, n, stamp)
                        if not n then return nil end
                    end
                end
            end
        end
        local kids = nd.kids
        if not slash or not kids then break end
        nd = kids[sub(p, pos, pend)]
        pos = slash + 1
    end
    return n
end

-- the Ant trie along the path's tokens (empty tokens dropped)
local function walk_ant(nd, p, req, cands, n, stamp)
    local here = nd.here
    if here then
        n = scan(here, req, cands, n, stamp)
        if not n then return nil end
    end
    local pos, len = 1, #p
    while nd.kids do
        if byte(p, pos) == SLASH then
            pos = pos + 1
            while byte(p, pos) == SLASH do pos = pos + 1 end
        end
        if pos > len then break end
        local slash = find(p, "/", pos, true)
        nd = nd.kids[sub(p, pos, (slash or len + 1) - 1)]
        if not nd then break end
        here = nd.here
        if here then
            n = scan(here, req, cands, n, stamp)
            if not n then return nil end
        end
        if not slash then break end
        pos = slash + 1
    end
    return n
end

-- the PathContainer trie: segments of a path without "%" are its pieces with ";params"
-- dropped; a path with "%" is parsed (decoded) by the request, once
local function walk_pp(nd, req, cands, n, stamp)
    local here = nd.here
    if here then
        n = scan(here, req, cands, n, stamp)
        if not n then return nil end
    end
    if not nd.kids then return n end
    local p = req.path
    if find(p, "%", 1, true) then
        local els = req:path_container_or_false()
        if not els then return n end -- the caller has answered "might raise" already
        if els[1] ~= false then return n end -- not a separator first: only the root's entries
        local k = 2
        while nd.kids do
            local seg = els[k]
            if type(seg) ~= "string" then break end
            nd = nd.kids[seg]
            if not nd then break end
            here = nd.here
            if here then
                n = scan(here, req, cands, n, stamp)
                if not n then return nil end
            end
            if els[k + 1] ~= false then break end
            k = k + 2
        end
        return n
    end
    if byte(p, 1) ~= SLASH then return n end
    local pos, len = 2, #p
    while nd.kids and pos <= len do
        local slash = find(p, "/", pos, true)
        local pend = (slash or len + 1) - 1
        local semi = find(p, ";", pos, true)
        if semi and semi <= pend then pend = semi - 1 end
        if pend < pos then break end -- an empty segment: no literal matches it
        nd = nd.kids[sub(p, pos, pend)]
        if not nd then break end
        here = nd.here
        if here then
            n = scan(here, req, cands, n, stamp)
            if not n then return nil end
        end
        if not slash then break end
        pos = slash + 1
    end
    return n
end

-- match(req, cands, n) -> n | nil: append to cands[n+1..] every entry whose test is true for
-- req (each once); nil when a test (or the path, for pathPattern entries) says ShenYu might
-- raise: the caller then evaluates the plain way.
function Index:match(req, cands, n)
    stamp = stamp + 1
    local stamp = stamp
    local p = req.path
    if self.risky > 0 and find(p, "%", 1, true) and not req:path_container_or_false() then
        return nil
    end
    n = scan(self.always, req, cands, n, stamp)
    if not n then return nil end
    if self.nexact > 0 then
        local list = self.exact[p]
        if list then
            n = scan(list, req, cands, n, stamp)
            if not n then return nil end
        end
    end
    if self.nraw > 0 then
        n = walk_raw(self.raw, p, req, cands, n, stamp)
        if not n then return nil end
    end
    if self.nant > 0 then
        n = walk_ant(self.ant, p, req, cands, n, stamp)
        if not n then return nil end
    end
    if self.npp > 0 then
        n = walk_pp(self.pp, req, cands, n, stamp)
    end
    return n
end

return M
