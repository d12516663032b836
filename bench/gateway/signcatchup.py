#!/usr/bin/env python3
"""Figure 13, the worker's side of a revocation: what applying one app's change costs the
request that notices it (contrib/nginx/lua/gwsync/signcache.lua, catch_up()).

    python3 bench/gateway/signcatchup.py [--apps 1000] [--changes 200]

A cache written here (tests/lua/cachewriter.py, with the change log) holds the sign plugin and
--apps apps; a plain luajit process (no nginx: the CPU of the call alone) loads the sign table,
then, --changes times, Python commits one app's change (disabled) and luajit times
catch_up(). Floor, in the same process and run: the irreducible work, one read transaction
with one mdb_get of that app and a lua-cjson decode of its JSON. Prints "ROW|..." lines for
bench/table.py.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "lua"))
from cachewriter import CacheWriter, lmdb  # noqa: E402

DRIVER = r"""
local lmdb = require "gwsync.lmdb"
local signcache = require "gwsync.signcache"
local cjson = require "cjson"
local env = assert(lmdb.open(arg[1]))
local sc = signcache.new{ cache = { env = env } }
local t0 = os.clock()
sc:refresh()
io.write(string.format("load %d %.3f\n", sc.tbl.napps, (os.clock() - t0) * 1000)); io.flush()
local txn = env:reader()
local dbi = env:dbi("APP_AUTH")
for key in io.lines() do
    local t1 = os.clock()
    local ok = sc:catch_up()
    local t2 = os.clock()
    txn:begin()
    local app = cjson.decode(txn:get(dbi, key))
    txn:reset()
    local t3 = os.clock()
    io.write(string.format("%s %.2f %.2f %s\n", tostring(ok), (t2 - t1) * 1e6, (t3 - t2) * 1e6,
        tostring(app.enabled))); io.flush()
end
"""


def row(figure, value, floor, ratio, target, verdict):
    r = "-" if ratio is None else "%.2fx" % ratio
    print("ROW|%s|%s|%s|%s|%s|%s" % (figure, value, floor, r, target, verdict), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apps", type=int, default=1000)
    ap.add_argument("--changes", type=int, default=200)
    args = ap.parse_args()
    what = "13. one app's change applied by the request that notices it (catch_up, plain luajit), %d apps" % args.apps
    luajit = shutil.which("luajit")
    if lmdb is None or not luajit:
        row(what, "not run: python3-lmdb or luajit missing", "-", None, "-", "not run")
        return 1
    tmp = tempfile.mkdtemp(prefix="gwsync-catchup-")
    try:
        cache = os.path.join(tmp, "cache")
        w = CacheWriter(cache, map_size=1 << 26, log=True)
        w.commit("PLUGIN", {"20": {"id": "20", "name": "sign", "enabled": True}})
        apps = {}
        for i in range(args.apps):
            k = "APP%029d" % i
            apps[k] = {"appKey": k, "appSecret": "S%031d" % i, "enabled": True, "open": True,
                       "paramDataList": [],
                       "pathDataList": [{"appName": "a", "path": "/s0/**", "enabled": True}]}
        w.commit("APP_AUTH", apps)
        driver = os.path.join(tmp, "driver.lua")
        with open(driver, "w") as f:
            f.write(DRIVER)
        env = dict(os.environ, LUA_PATH="%s/?.lua;;" % os.path.join(SRC, "contrib", "nginx", "lua"))
        p = subprocess.Popen([luajit, driver, cache], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env)
        _, n, load_ms = p.stdout.readline().split()
        took, floor = [], []
        for i in range(args.changes):
            k = "APP%029d" % (i % args.apps)
            apps[k] = dict(apps[k], enabled=not apps[k]["enabled"])
            w.commit("APP_AUTH", {k: apps[k]})
            p.stdin.write(k + "\n")
            p.stdin.flush()
            ok, us, fl, enabled = p.stdout.readline().split()
            if ok != "true" or enabled != str(apps[k]["enabled"]).lower():
                raise RuntimeError("catch_up did not apply change %d (%s, %s)" % (i, ok, enabled))
            took.append(float(us))
            floor.append(float(fl))
        p.stdin.close()
        p.wait()
        w.close()
        took.sort()
        floor.sort()
        m, f = statistics.median(took), statistics.median(floor)
        row(what, "median %.0f us, p99 %.0f us (%d changes; first load of %s apps %s ms)" % (
            m, took[max(0, int(len(took) * 0.99) - 1)], len(took), n, load_ms),
            "one mdb_get + cjson.decode of the app: median %.1f us" % f, m / f if f else None,
            "-", "-")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
