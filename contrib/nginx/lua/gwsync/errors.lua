-- gwsync.errors: the answers ShenYu gives when matching itself fails, as route() results.
--
-- ShenYu throws during matching (unknown operator, bad regex, unparseable date, ...) and its
-- GlobalErrorHandler turns the exception into a response: IllegalArgumentException (and
-- subclasses: PatternSyntaxException, PatternParseException) -> HTTP 400 with the exception's
-- message; anything else (NullPointerException, DateTimeParseException, ClassCastException) ->
-- HTTP 500 "Internal Server Error". Matching code raises these with error() so the hot path
-- needs no error plumbing; router.route() catches them with one pcall per request.
local M = {}

local MARK = {} -- identifies our error tables among other Lua errors (bugs must not be hidden)

-- A route() result for an exception ShenYu would throw.
function M.result(status, message)
    return { action = "error", code = status, message = message, plain_status = status,
             http_status = status }
end

function M.raise_bad_request(message)
    error({ [MARK] = true, status = 400, message = message }, 0)
end

function M.raise_internal(reason)
    -- reason is for logs only; ShenYu's body says "Internal Server Error".
    error({ [MARK] = true, status = 500, message = "Internal Server Error", reason = reason }, 0)
end

-- is_ours(err) -> true for errors raised above.
function M.is_ours(err)
    return type(err) == "table" and err[MARK] == true
end

return M
