-- gwsync.changes: what changed in the cache since the generation a reader last applied, from
-- the cache's change log (the `changes` database: include/gwsync/cache.h, GW_CACHE_CHANGES_DB,
-- and docs/lmdb-cache.md; names from gwsync.contract).
--
--   changes database: key = the generation as 20 ASCII decimal digits (zero-padded), value =
--   {"group":"RULE","put":["k1"],"del":["k2"]} or {"group":"RULE","replace":true}
--   meta `changes_from`: the oldest generation the log holds (absent: no log)
--
-- read(txn, dbis, from, to, groups) -> plan | nil, why
-- In the reader's open transaction (the one that read `generation` = to), reads the entries
-- from+1 .. to and folds them per group: plan[GROUP] = { replace = true } (re-read the group
-- whole) or { keys = { key = true, ... } } (look each key up: found = upsert, absent =
-- deleted; a key put then deleted is deleted, and the other way round, by that lookup).
-- Groups outside `groups` are ignored. nil, why when the log cannot say (no log, the reader
-- is behind what it holds, a missing or unreadable entry): the caller reads everything.
local cjson = require "cjson.safe"
local contract = require "gwsync.contract"

local M = {}

local format = string.format
local KEY_FORMAT = "%0" .. contract.LOG_KEY_DIGITS .. "d"

-- key(generation) -> the log key of a generation
function M.key(g)
    return format(KEY_FORMAT, g)
end

-- add the keys of a put/del list to set; false when the list is not a list of strings
local function add_keys(set, list)
    if list == nil then return true end
    if type(list) ~= "table" then return false end
    for i = 1, #list do
        local key = list[i]
        if type(key) ~= "string" then return false end
        set[key] = true
    end
    return true
end

function M.read(txn, dbis, from, to, groups)
    local meta, log = dbis.meta, dbis.changes
    if not log then return nil, "no change log" end
    local cf = txn:get(meta, contract.KEY_CHANGES_FROM)
    cf = cf and tonumber(cf)
    if not cf then return nil, "no change log" end
    if cf > from + 1 then
        return nil, "the change log starts at generation " .. format("%d", cf)
            .. ", after " .. format("%d", from + 1)
    end
    local plan = {}
    local cur, err = txn:cursor(log)
    if not cur then return nil, "the change log: " .. tostring(err) end
    local want = from + 1
    local k, v = cur:seek(M.key(want), true)
    local why
    while want <= to do
        if not k then why = "the change log has no entry for generation " .. format("%d", want) break end
        if k ~= M.key(want) then why = "the change log skips generation " .. format("%d", want) break end
        local e = cjson.decode(v)
        if type(e) ~= "table" or type(e.group) ~= "string" then
            why = "the change log entry of generation " .. format("%d", want) .. " is not understood"
            break
        end
        if groups[e.group] then
            local p = plan[e.group]
            if not p then p = { keys = {} }; plan[e.group] = p end
            if e.replace == true then
                p.replace = true
            elseif not p.replace then
                if not add_keys(p.keys, e.put) or not add_keys(p.keys, e.del) then
                    why = "the change log entry of generation " .. format("%d", want)
                        .. " is not understood"
                    break
                end
            end
        end
        want = want + 1
        if want <= to then k, v = cur:next() end
    end
    cur:close()
    if why then return nil, why end
    return plan
end

return M
