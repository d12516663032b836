-- tinytest: the smallest harness the Lua unit tests need under plain luajit.
-- Each case prints one line ("ok - name" / "FAIL - name: why"); done() exits 1 on any failure
-- so the Python runner (test_lua_router.py) can name the failing file and case.
local T = { failed = 0, passed = 0 }

local function show(v)
    if type(v) == "string" then return string.format("%q", v) end
    return tostring(v)
end

-- case(name, fn): run fn; an error or failed check inside marks the case failed
function T.case(name, fn)
    local ok, err = pcall(fn)
    if ok then
        T.passed = T.passed + 1
        print("ok - " .. name)
    else
        T.failed = T.failed + 1
        print("FAIL - " .. name .. ": " .. tostring(err))
    end
end

function T.eq(got, want, what)
    if got ~= want then
        error((what and (what .. ": ") or "") .. "expected " .. show(want) .. ", got " .. show(got), 2)
    end
end

function T.truthy(v, what)
    if not v then error((what or "value") .. " is false/nil", 2) end
end

function T.done()
    print(string.format("# %d passed, %d failed", T.passed, T.failed))
    os.exit(T.failed == 0 and 0 or 1)
end

return T
