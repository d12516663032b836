-- gwsync.regex: compile a regular expression once, match a whole string many times.
--
-- ShenYu uses java.util.regex with Matcher.matches() (the whole input must match). We compile
-- with PCRE2 through LuaJIT's FFI in both places we run: inside nginx (Debian's nginx links
-- libpcre2-8 itself, so the library is always there) and under plain `luajit` for the unit
-- tests. We do not use ngx.re: its compiled patterns live in a per-worker cache of
-- lua_regex_cache_max_entries (1024) entries, after which patterns are recompiled per request;
-- here every pattern is compiled at route-table build time and kept as a cdata for the table's
-- life (freed by the GC with the old table).
--
-- How Java semantics are approximated (where PCRE2 differs, say so):
--  * whole-string match: PCRE2_ANCHORED | PCRE2_ENDANCHORED (== Matcher.matches(), with
--    backtracking into alternatives so "a|ab" matches "ab").
--  * UTF mode: Java matches UTF-16 chars; we match UTF-8 code points. They differ only for
--    characters outside the BMP (one Java "." needs two surrogates, one PCRE "." is enough).
--    A subject that is not valid UTF-8 is matched by a byte-mode copy of the pattern compiled
--    on first need (Java would have decoded such bytes to U+FFFD).
--  * line terminators: Java's "." and "$" treat \n \r \r\n \u0085 \u2028 \u2029 as line ends;
--    we use PCRE2_NEWLINE_ANYCRLF (\r, \n, \r\n): \u0085/\u2028/\u2029 differ.
--  * (?i) in PCRE2 UTF mode folds Unicode case; Java folds ASCII only unless (?u) is given.
--  * Java-only syntax (class intersections [a-z&&[^e]], \p{javaLowerCase}, possessive forms are
--    shared) fails to compile here or means something else; a lone "{" is literal in PCRE2 but a
--    syntax error in Java. Compile errors are reported with PCRE2's message, not Java's.
--  * Catastrophic backtracking: Java throws StackOverflowError (HTTP 500) or runs for
--    seconds; here every match runs under a match context with a match limit (MATCH_LIMIT,
--    50,000 where PCRE2's default is 10,000,000) and a depth limit (DEPTH_LIMIT, 20,000, the
--    default 10,000,000), so one match costs at most about 0.1 ms of CPU compiled (JIT) and
--    0.6 ms interpreted, whatever the pattern and the subject (contrib/nginx/README.md, "What
--    a request can cost"). A match that hits a limit answers "no match" (never an error: the
--    request is routed on as if this condition were false) and is counted in
--    gwsync.limits, which the worker's timer logs at most once a minute. A match that
--    overflows the JIT's own stack (-46, e.g. a repeated group over an 8 KB path) is tried
--    again by the interpreter under the same limits instead of failing.
local ffi = require "ffi"

local M = {}

local C_DEFS = [[
void *pcre2_compile_8(const unsigned char *pattern, size_t length, uint32_t options,
                      int *errorcode, size_t *erroroffset, void *ccontext);
void pcre2_code_free_8(void *code);
int pcre2_jit_compile_8(void *code, uint32_t options);
void *pcre2_match_data_create_8(uint32_t ovecsize, void *gcontext);
int pcre2_match_8(const void *code, const unsigned char *subject, size_t length,
                  size_t startoffset, uint32_t options, void *match_data, void *mcontext);
int pcre2_get_error_message_8(int errorcode, unsigned char *buffer, size_t bufflen);
void *pcre2_compile_context_create_8(void *gcontext);
int pcre2_set_newline_8(void *ccontext, uint32_t newline);
int pcre2_pattern_info_8(const void *code, uint32_t what, void *where);
void *pcre2_match_context_create_8(void *gcontext);
int pcre2_set_match_limit_8(void *mcontext, uint32_t value);
int pcre2_set_depth_limit_8(void *mcontext, uint32_t value);
]]
-- Another module (lua-resty-core does not, but a user's might) may have declared these already:
-- a redefinition error then is harmless, the existing declarations have the same symbols.
pcall(ffi.cdef, C_DEFS)

local limits = require "gwsync.limits"

local lib
for _, name in ipairs({ "pcre2-8", "libpcre2-8.so.0" }) do
    local ok, l = pcall(ffi.load, name)
    if ok then lib = l break end
end

local PCRE2_DOTALL      = 0x00000020
local PCRE2_CASELESS    = 0x00000008
local PCRE2_UTF         = 0x00080000
local PCRE2_ANCHORED    = 0x80000000
local PCRE2_ENDANCHORED = 0x20000000
local PCRE2_NEWLINE_ANYCRLF = 5
local PCRE2_INFO_CAPTURECOUNT = 4
local PCRE2_JIT_COMPLETE = 1
local PCRE2_ERROR_NOMATCH = -1
local PCRE2_NO_JIT = 0x00002000
local PCRE2_ERROR_JIT_STACKLIMIT = -46
-- the errors of a match stopped by a limit: MATCHLIMIT, DEPTHLIMIT, HEAPLIMIT
local LIMIT_ERRORS = { [-47] = true, [-53] = true, [-63] = true }

-- The per-match bounds (header comment); the measured cost at these values is in
-- contrib/nginx/README.md. Legitimate patterns stay far below them: a path regex over an 8 KB
-- path takes a few hundred steps per repetition, not tens of thousands.
M.MATCH_LIMIT = 50000
M.DEPTH_LIMIT = 20000
-- PCRE2_ERROR_UTF8_ERR1 .. ERR21 are -3 .. -23: the subject is not valid UTF-8.
local UTF8_ERR_FIRST, UTF8_ERR_LAST = -23, -3

-- Scratch state shared by every pattern of this process. A worker runs one request at a time
-- and a match never yields, so one match-data block (ovector of one pair: we only need
-- "matched or not") and one error buffer serve all patterns.
local match_data, ccontext, mcontext
local errcode = ffi.new("int[1]")
local erroff = ffi.new("size_t[1]")
local errbuf = ffi.new("unsigned char[256]")
local u32 = ffi.new("uint32_t[1]")
if lib then
    match_data = ffi.gc(lib.pcre2_match_data_create_8(1, nil), nil)
    ccontext = lib.pcre2_compile_context_create_8(nil)
    lib.pcre2_set_newline_8(ccontext, PCRE2_NEWLINE_ANYCRLF)
    mcontext = lib.pcre2_match_context_create_8(nil)
    lib.pcre2_set_match_limit_8(mcontext, M.MATCH_LIMIT)
    lib.pcre2_set_depth_limit_8(mcontext, M.DEPTH_LIMIT)
end

M.available = lib ~= nil

local function compile_raw(pattern, options)
    local code = lib.pcre2_compile_8(pattern, #pattern, options, errcode, erroff, ccontext)
    if code == nil then
        lib.pcre2_get_error_message_8(errcode[0], errbuf, 256)
        return nil, ffi.string(errbuf) .. " near index " .. tonumber(erroff[0])
    end
    code = ffi.gc(code, lib.pcre2_code_free_8)
    lib.pcre2_jit_compile_8(code, PCRE2_JIT_COMPLETE) -- best effort: the interpreter still works
    return code
end

local function valid_utf8(s)
    -- Cheap pre-check used only at compile time (patterns): PCRE2 validates subjects itself.
    local i, n = 1, #s
    while i <= n do
        local c = s:byte(i)
        local len = c < 0x80 and 1 or (c >= 0xC2 and c < 0xE0) and 2 or (c >= 0xE0 and c < 0xF0) and 3
            or (c >= 0xF0 and c < 0xF5) and 4 or nil
        if not len or i + len - 1 > n then return false end
        for k = i + 1, i + len - 1 do
            local d = s:byte(k)
            if d < 0x80 or d > 0xBF then return false end
        end
        i = i + len
    end
    return true
end

-- compile_ex(pattern, opts) -> matcher, nil, capture_count | nil, err
-- opts.dotall, opts.caseless (Pattern.DOTALL / CASE_INSENSITIVE).
function M.compile_ex(pattern, opts)
    if not lib then return nil, "libpcre2-8 not found" end
    if type(pattern) ~= "string" then return nil, "pattern is not a string" end
    local base = PCRE2_ANCHORED + PCRE2_ENDANCHORED
    if opts and opts.dotall then base = base + PCRE2_DOTALL end
    if opts and opts.caseless then base = base + PCRE2_CASELESS end
    local utf = valid_utf8(pattern)
    local code, err = compile_raw(pattern, utf and (base + PCRE2_UTF) or base)
    if not code then return nil, err end
    lib.pcre2_pattern_info_8(code, PCRE2_INFO_CAPTURECOUNT, u32)
    local ncap = tonumber(u32[0])
    local bytecode = not utf and code or nil -- byte-mode twin, compiled on first non-UTF-8 subject
    local function run(c, subject)
        local rc = lib.pcre2_match_8(c, subject, #subject, 0, 0, match_data, mcontext)
        if rc == PCRE2_ERROR_JIT_STACKLIMIT then
            rc = lib.pcre2_match_8(c, subject, #subject, 0, PCRE2_NO_JIT, match_data, mcontext)
        end
        if LIMIT_ERRORS[rc] then limits.hit("regex") end
        return rc
    end
    local matcher = function(subject)
        local rc = run(code, subject)
        if rc >= 0 then return true end
        if rc == PCRE2_ERROR_NOMATCH then return false end
        if rc >= UTF8_ERR_FIRST and rc <= UTF8_ERR_LAST and code ~= bytecode then
            if not bytecode then
                bytecode = compile_raw(pattern, base)
                if not bytecode then return false end
            end
            return run(bytecode, subject) >= 0
        end
        return false -- a limit (counted in run) or another error: see the header comment
    end
    return matcher, nil, ncap
end

-- compile(pattern) -> fn(subject) -> bool | nil, err   (Java Pattern.matches semantics)
function M.compile(pattern, opts)
    local m, err = M.compile_ex(pattern, opts)
    return m, err
end

-- quote(s): s as a literal inside a pattern (Java's Pattern.quote, done by escaping each ASCII
-- punctuation byte instead of \Q..\E so a "\E" inside s needs no special case).
function M.quote(s)
    return (s:gsub("[^%w\128-\255]", "\\%0"))
end

return M
