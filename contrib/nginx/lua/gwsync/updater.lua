-- gwsync.updater: keeps one nginx worker's route table in step with the cache, off the
-- request path.
--
-- A timer (ngx.timer.every, `interval` seconds) runs cache:refresh(); a request that finds a
-- newer generation in the cache (cache:current(), one mdb_get) calls wake(), which runs the
-- refresh at once in a timer of its own (ngx.timer.at(0)), never in the request. Only one
-- refresh runs at a time: a wake() during a run asks for one more run after it, so whatever
-- arrived meanwhile is read in one go (coalescing). Requests go on with the last good table
-- the whole time; the only request that waits is one that arrives before the worker has any
-- table (wait_first()).
--
-- Long work (a first load of 100,000 items, a large batch) is done in slices: the cache calls
-- pace() between slices, which updates nginx's clock (ngx.update_time) and, when the slice has
-- lasted `slice` seconds, yields to the event loop for 1 ms (ngx.sleep(0.001)). So no request
-- waits long behind it (a few ms at most), and nginx's cached clock is never left stale for
-- the upstream timers that requests start meanwhile (a stale clock makes upstream timeouts fire
-- early). Before the worker has its first table no request is routed (those that come wait for
-- it), so that build runs in longer slices (`first_slice`, 50 ms): a yield every 3 ms would add
-- a third to its time (each yield is at least a 1 ms timer) and let no routed request through;
-- the worker's other locations still get the event loop every 50 ms. Not ngx.sleep(0): without OpenResty's "delayed events" nginx patch (Debian's nginx
-- has none) it is a 0 ms timer, which nginx's timer loop runs again at once, before looking
-- at any connection, and it logs a warning on every call.
--
-- How fresh a worker's view is (contrib/nginx/README.md): a change committed to the cache is
-- in a busy worker's table after its next request plus the time to apply it (the request
-- that notices is served by the previous table); an idle worker has it within `interval`
-- plus the apply time.
local M = {}

local Updater = {}
Updater.__index = Updater

-- new(cache, { interval = 0.1, slice = 0.003, first_slice = 0.05, log = fn(level, msg) })
function M.new(cache, opts)
    opts = opts or {}
    local u = setmetatable({
        cache = cache,
        interval = opts.interval or 0.1,
        slice = opts.slice or 0.003,
        first_slice = opts.first_slice or 0.05,
        log = opts.log or function() end,
        running = false, again = false, scheduled = false,
        started = 0, finished = 0,    -- runs started / completed
        timers = false,
        deadline = 0,
        followers = {},               -- refreshed after the cache, in the same run (follow())
    }, Updater)
    u.tick = function(premature)
        if premature then return end
        u.scheduled = false
        u:run()
    end
    cache.pace = function() u:pace() end
    return u
end

-- slice_now() -> how long the work may run before it yields: longer while no table exists
function Updater:slice_now()
    return self.cache.tbl and self.slice or self.first_slice
end

-- pace(): called by the cache between slices of long work
function Updater:pace()
    ngx.update_time()
    if ngx.now() >= self.deadline then
        ngx.sleep(0.001)
        ngx.update_time()
        self.deadline = ngx.now() + self:slice_now()
    end
end

-- follow(x): x:refresh() runs right after the cache's in every run (the sign plugin's table,
-- gwsync.signcache), paced like it: a commit that wakes the route table wakes x too
function Updater:follow(x)
    x.pace = function() self:pace() end
    self.followers[#self.followers + 1] = x
end

-- run(): refresh until no more runs were asked for (only in a timer, or by wait_first when
-- no timer can be made)
function Updater:run()
    if self.running then
        self.again = true
        return
    end
    self.running = true
    repeat
        self.again = false
        self.started = self.started + 1
        ngx.update_time()
        self.deadline = ngx.now() + self:slice_now()
        local ok, err = pcall(self.cache.refresh, self.cache)
        if not ok then
            self.log("error", "gwsync: refreshing the route table failed: " .. tostring(err))
        end
        for i = 1, #self.followers do
            local f = self.followers[i]
            ok, err = pcall(f.refresh, f)
            if not ok then self.log("error", "gwsync: refreshing the sign table failed: " .. tostring(err)) end
        end
        ngx.update_time()
        self.finished = self.started
    until not self.again
    self.running = false
end

-- start(): the periodic timer and a first run now (idempotent; init_worker_by_lua, or the
-- first request when that is not configured)
function Updater:start()
    if self.timers then return end
    self.timers = true
    local ok, err
    if ngx.timer.every then
        ok, err = ngx.timer.every(self.interval, self.tick)
    else
        local function again(premature)
            if premature then return end
            self.tick(false)
            ngx.timer.at(self.interval, again)
        end
        ok, err = ngx.timer.at(self.interval, again)
    end
    if not ok then
        self.log("error", "gwsync: cannot start the refresh timer (" .. tostring(err)
            .. "); changes are picked up when a request notices them")
    end
    self:wake()
end

-- wake(): a request saw a newer generation: refresh now, in a timer. true unless no timer
-- could be made.
function Updater:wake()
    if self.running then
        self.again = true
        return true
    end
    if self.scheduled then return true end
    local ok, err = ngx.timer.at(0, self.tick)
    if not ok then
        if not self.timer_failed then
            self.timer_failed = true
            self.log("error", "gwsync: cannot start a refresh timer (" .. tostring(err) .. ")")
        end
        return false
    end
    self.scheduled = true
    return true
end

-- ready() -> the table, when it and every follower have loaded once (a follower that has
-- not, the sign plugin's table, must not let requests through unchecked)
function Updater:ready()
    local tbl = self.cache.tbl
    if not tbl then return nil end
    for i = 1, #self.followers do
        if not self.followers[i].loaded then return nil end
    end
    return tbl
end

-- wait_first(max_seconds) -> table | nil: for a request that finds no table yet (or a
-- follower not loaded yet): wait (without blocking the worker) until a refresh that starts
-- after now has finished
function Updater:wait_first(max)
    local target = self.started + 1
    if not self:wake() then self:run() end
    local deadline = ngx.now() + (max or 30)
    while not self:ready() and self.finished < target and ngx.now() < deadline do
        ngx.sleep(0.002)
    end
    return self:ready()
end

return M
