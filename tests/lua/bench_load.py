"""bench_load: a worker's first load of a real cache, and its applying of single changes read
through the change log, under plain luajit (indicative figures, not a test).

    GWSYNC_SRCDIR=$PWD TMPDIR=... /usr/bin/python3 tests/lua/bench_load.py [SIZES] [--lua DIR] [--runs N]
      SIZES  e.g. 50x4,1000x10,10000x10 (selectors x rules, the default)
      --lua  the contrib/nginx/lua directory to measure (default: this tree's)
      --runs first loads per size, each in a fresh luajit (default 3)

For each size it writes a cache with the change log (cachewriter.py) holding the tables of
tests/lua/scale_data.lua (bench/'s figure 11: selectors alternating `match /sN/**` and
`startsWith /sN/`, rules alternating `match /sN/rk/**` and `startsWith /sN/rk/` plus a
"mover" rule, one DISCOVER_UPSTREAM item with two upstreams each; items in the admin's
shapes, tests/e2e/items.py), then runs gwsync.cache's refresh() in luajit as an nginx worker's
timer does (without nginx's pacing): the first load (read every group, compile every item,
build the table) and then 200 one-item changes (a mover rule's path, or a selector's upstream
pair), each committed by Python and applied by one refresh() through the change log. It
prints the first load's CPU time (min and median of the runs), per item, the table's Lua heap
(after a full collection) against data.mdb's size, and the median and slowest apply.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRCDIR, "tests", "e2e"))
from cachewriter import CacheWriter  # noqa: E402
from items import compact, cond, discover, plugin, rule, selector  # noqa: E402

DRIVER = r"""
local ffi = require "ffi"
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } gwsync_bl_ts; int clock_gettime(int, gwsync_bl_ts *);")
local ts = ffi.new("gwsync_bl_ts")
local function cpu_us()
    ffi.C.clock_gettime(3, ts)   -- CLOCK_THREAD_CPUTIME_ID
    return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end
local cachemod = require "gwsync.cache"
local log = {}
local cache = cachemod.new{ path = arg[1], log = function(l, m) log[#log + 1] = l .. ": " .. m end }
collectgarbage("collect")
local h0 = collectgarbage("count")
for line in io.lines() do
    if line == "quit" then break end
    local t0 = cpu_us()
    local changed = cache:refresh()
    local us = cpu_us() - t0
    local heap = -1
    if line == "load" then
        collectgarbage("collect"); collectgarbage("collect")
        heap = (collectgarbage("count") - h0) * 1024
    end
    io.write(string.format("%s %.1f %.0f %s\n", tostring(changed), us, heap,
        (log[#log] or ""):gsub("\n", " ")))
    io.flush()
end
"""


def sid(i):
    return "s-%05d" % i


def rid(i, k):
    return "r-%05d-%02d" % (i, k)


def rule_item(i, k, nr, mover=0):
    if k == nr - 1:
        c = cond("uri", "match", "/s%d/m%09d/**" % (i, mover))
    elif k % 2 == 0:
        c = cond("uri", "match", "/s%d/r%d/**" % (i, k))
    else:
        c = cond("uri", "startsWith", "/s%d/r%d/" % (i, k))
    return rule(rid(i, k), sid(i), [c], sort=k + 1)


def discover_item(i, pair):
    return discover(sid(i), ["127.0.0.1:%d" % (20000 + 2 * pair), "127.0.0.1:%d" % (20001 + 2 * pair)])


def text(item):
    """As the admin sends it and gwsyncd stores it: compact JSON."""
    return compact(item).encode()


def write_cache(path, ns, nr):
    w = CacheWriter(path, map_size=1 << 31, log=True)
    w.commit("PLUGIN", {"5": text(plugin(True))})
    sels, rules, discs = {}, {}, {}
    for i in range(ns):
        c = cond("uri", "match", "/s%d/**" % i) if i % 2 == 0 else cond("uri", "startsWith", "/s%d/" % i)
        sels[sid(i)] = text(selector(sid(i), [c], sort=i + 1))
        discs[sid(i)] = text(discover_item(i, i % 4))
        for k in range(nr):
            rules[rid(i, k)] = text(rule_item(i, k, nr))
    w.commit("DISCOVER_UPSTREAM", discs)
    w.commit("RULE", rules)
    w.commit("SELECTOR", sels)
    return w


class Driver:
    def __init__(self, lua_dir, cache):
        env = dict(os.environ)
        env["LUA_PATH"] = "%s/?.lua;%s/?.lua;;" % (lua_dir, HERE)
        script = os.path.join(os.path.dirname(cache), "driver.lua")
        with open(script, "w") as f:
            f.write(DRIVER)
        self.proc = subprocess.Popen(["luajit", script, cache], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=SRCDIR)

    def ask(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        changed, us, heap, rest = self.proc.stdout.readline().split(" ", 3)
        return changed == "true", float(us), float(heap), rest.strip()

    def close(self):
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    sizes, lua_dir, runs = [], os.path.join(SRCDIR, "contrib", "nginx", "lua"), 3
    args = sys.argv[1:]
    while args:
        a = args.pop(0)
        if a == "--lua":
            lua_dir = os.path.abspath(args.pop(0))
        elif a == "--runs":
            runs = int(args.pop(0))
        else:
            sizes += [tuple(int(x) for x in s.split("x")) for s in a.split(",")]
    sizes = sizes or [(50, 4), (1000, 10), (10000, 10)]
    print("%-9s %8s %8s %8s %8s %9s %8s %8s %9s %9s" % (
        "size", "items", "load ms", "(median)", "us/item", "heap MB", "mdb MB", "heap/mdb",
        "apply us", "(slowest)"))
    for ns, nr in sizes:
        tmp = tempfile.mkdtemp(prefix="gwsync-load-")
        try:
            cache = os.path.join(tmp, "cache")
            w = write_cache(cache, ns, nr)
            mdb = os.path.getsize(os.path.join(cache, "data.mdb"))
            nitems = 1 + ns * (nr + 2)
            loads, heaps = [], []
            applies = []
            for run in range(runs):
                d = Driver(lua_dir, cache)
                changed, us, heap, _ = d.ask("load")
                assert changed, "the first load built a table"
                loads.append(us)
                heaps.append(heap)
                if run == 0:
                    for n in range(1, 201):
                        i = (n * 7919) % ns
                        if n % 2 == 0:
                            w.commit("RULE", {rid(i, nr - 1): text(rule_item(i, nr - 1, nr, n))})
                        else:
                            w.commit("DISCOVER_UPSTREAM", {sid(i): text(discover_item(i, (i + n) % 4))})
                        changed, us, _, line = d.ask("refresh")
                        assert changed and "in place from change log" in line, line
                        applies.append(us)
                d.close()
            w.close()
            print("%-9s %8d %8.0f %8.0f %8.1f %9.1f %8.1f %8.2f %9.0f %9.0f" % (
                "%dx%d" % (ns, nr), nitems, min(loads) / 1000, median(loads) / 1000,
                min(loads) / nitems, median(heaps) / 1048576, mdb / 1048576,
                median(heaps) / mdb, median(applies), max(applies)))
            sys.stdout.flush()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
