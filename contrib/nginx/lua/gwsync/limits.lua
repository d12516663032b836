-- gwsync.limits: counts the requests whose matching was cut short by a per-request bound, and
-- says so in the log at most once a minute.
--
-- The router bounds what one request may cost whatever the admin wrote and the client sent
-- (contrib/nginx/README.md, "What a request can cost"): a regex match stops at PCRE2's match
-- and depth limits (gwsync.regex), an Ant pattern at a step budget (gwsync.antpath). Either
-- answers "no match" for that condition. Counting happens on the request path (an increment);
-- logging does not: report() is called by the worker's refresh timer (gwsync.updater), so a
-- client sending a catastrophic path a thousand times a second costs one log line a minute,
-- not a thousand. Counts are per worker and per process: plain luajit tests read them too.
local M = {}

-- kind -> hits since the process started
M.count = { regex = 0, antpath = 0 }

local WHAT = {
    regex = "regex matches stopped at PCRE2's match or depth limit",
    antpath = "Ant pattern matches stopped at the step budget",
}

-- the counts last reported, and when
local reported = { regex = 0, antpath = 0 }
local last_report = nil

-- M.INTERVAL: seconds between two report lines at most
M.INTERVAL = 60

-- hit(kind): one match of kind was cut short
function M.hit(kind)
    M.count[kind] = M.count[kind] + 1
end

-- report(log, now): log(level, line) once for each kind whose count grew since the last line,
-- unless a line was written less than INTERVAL seconds ago -> true when it wrote
function M.report(log, now)
    if last_report and now - last_report < M.INTERVAL then return false end
    local wrote = false
    for kind, what in pairs(WHAT) do
        local n = M.count[kind] - reported[kind]
        if n > 0 then
            log("warn", string.format("gwsync: %d %s since the last report (each treated as no match;"
                .. " %d in all): a pattern in the admin is costly for some request paths", n, what,
                M.count[kind]))
            reported[kind] = M.count[kind]
            wrote = true
        end
    end
    if wrote then last_report = now end
    return wrote
end

return M
