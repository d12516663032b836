"""The router's cache reader follows the cache's change log (contrib/nginx/lua/gwsync/cache.lua,
changes.lua), proven against caches written here in the agreed format (cachewriter.py, with
Python's lmdb), under plain luajit (tests/lua/cache_driver.lua, no nginx).

After every refresh the driver also builds a table from scratch from a whole read of the cache
and routes a set of paths with both: they must agree. Each case checks how the change was read:
  * through the log: only the changed keys are looked up and compiled (put, delete, a group
    `replace` compared value by value, a key put then deleted within one refresh);
  * a whole read, because the log cannot say: the first load, a missing entry (gap), a reader
    behind a trimmed log, no log at all, a format change;
  * items stored under a derived `#sha256:` key (long ids) route like any other;
and a random sequence of changes (with gaps and trims) agrees with from-scratch tables at
every step.
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from cachewriter import (CacheWriter, discover, divide_plugin, lmdb, rule, selector,  # noqa: E402
                         stored_key, uri_cond)

LUAJIT = shutil.which("luajit")
PATHS = ["/a/x", "/b/x", "/c/x", "/d/x", "/e/x", "/long/x", "/none"]


class Driver:
    def __init__(self, path):
        env = dict(os.environ)
        lua_dir = os.path.join(SRCDIR, "contrib", "nginx", "lua")
        env["LUA_PATH"] = "%s/?.lua;%s/?.lua;;" % (lua_dir, HERE)
        self.proc = subprocess.Popen([LUAJIT, os.path.join(HERE, "cache_driver.lua"), path],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, text=True)

    def call(self, **cmd):
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("cache_driver.lua died: %s" % self.proc.stderr.read())
        return json.loads(line)

    def close(self):
        try:
            self.call(cmd="quit")
        except (AssertionError, OSError, ValueError):
            pass
        self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            f.close()


@unittest.skipUnless(LUAJIT, "luajit is not installed")
@unittest.skipUnless(lmdb, "python3 lmdb module not installed (python3-lmdb)")
class CacheChangeLog(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gwsync-changes-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.path = os.path.join(self.tmp, "cache")

    def start(self, log=True, keep=1000, seed_routes=True):
        self.w = CacheWriter(self.path, map_size=16 << 20, log=log, keep=keep)
        self.addCleanup(self.w.close)
        if seed_routes:
            self.w.commit("PLUGIN", {"divide": divide_plugin()})
            for name in ("a", "b", "c"):
                sid = "s-" + name
                self.w.commit("SELECTOR", {sid: selector(sid, "/" + name)})
                self.w.commit("RULE", {"r-" + name: rule("r-" + name, sid, "/" + name)})
                self.w.commit("DISCOVER_UPSTREAM", {sid: discover(sid, ["10.0.0.1:80"])})
        self.d = Driver(self.path)
        self.addCleanup(self.d.close)
        self.d.call(cmd="paths", paths=PATHS)
        return self.refresh()

    def refresh(self):
        out = self.d.call(cmd="refresh")
        self.assertFalse(out["mismatches"], "the table differs from one built from scratch: %r"
                         % (out["mismatches"],))
        return out

    def assertHow(self, out, text):
        notices = [l for l in out["log"] if "routes built from generation" in l]
        self.assertEqual(len(notices), 1, out["log"])
        self.assertIn(text, notices[0])
        return notices[0]

    # ------------------------------------------------------------------ through the log
    def test_first_load_reads_everything(self):
        out = self.start()
        self.assertEqual((out["full"], out["compiled"]), (1, 10))
        self.assertHow(out, "whole table from first load")
        self.assertEqual(out["routes"]["/a/x"], "proxy s-a r-a 10.0.0.1:80")

    def test_a_put_is_read_from_the_log_alone(self):
        self.start()
        gen = self.w.commit("DISCOVER_UPSTREAM", {"s-b": discover("s-b", ["10.0.0.2:80"])})
        out = self.refresh()
        self.assertEqual((out["generation"], out["incremental"], out["full"], out["compiled"]),
                         (gen, 1, 0, 1))
        self.assertHow(out, "in place from change log, changed DISCOVER_UPSTREAM 1")
        self.assertEqual(out["routes"]["/b/x"], "proxy s-b r-b 10.0.0.2:80")

    def test_a_delete_is_read_from_the_log(self):
        self.start()
        self.w.commit("RULE", delete=["r-c"])
        out = self.refresh()
        self.assertHow(out, "from change log, changed RULE 1")
        self.assertEqual(out["routes"]["/c/x"], "error -102")

    def test_several_commits_fold_into_one_refresh(self):
        self.start()
        self.w.commit("SELECTOR", {"s-d": selector("s-d", "/d")})
        self.w.commit("RULE", {"r-d": rule("r-d", "s-d", "/d")})
        self.w.commit("RULE", {"r-tmp": rule("r-tmp", "s-d", "/d", sort=0)})
        self.w.commit("RULE", delete=["r-tmp"])              # put then deleted: deleted
        self.w.commit("RULE", delete=["r-a"])
        self.w.commit("RULE", {"r-a": rule("r-a", "s-a", "/a", sort=3)})   # deleted then put
        out = self.refresh()
        # s-d, r-d, r-a: r-tmp came and went between two refreshes, nothing to compile
        self.assertEqual((out["incremental"], out["compiled"]), (1, 3))
        self.assertEqual(out["routes"]["/d/x"], "error -119")      # no upstreams: handle ""
        self.assertEqual(out["routes"]["/a/x"], "proxy s-a r-a 10.0.0.1:80")

    def test_a_group_replace_compiles_only_what_differs(self):
        self.start()
        same = {"r-" + n: rule("r-" + n, "s-" + n, "/" + n) for n in ("a", "b", "c")}
        self.w.commit("RULE", same, replace=True)
        out = self.refresh()
        self.assertHow(out, "from change log, changed none")
        self.assertEqual(out["compiled"], 0)
        same["r-b"] = rule("r-b", "s-b", "/b", load_balance="random")
        del same["r-c"]
        self.w.commit("RULE", same, replace=True)
        out = self.refresh()
        self.assertHow(out, "from change log, changed RULE 2")
        self.assertEqual(out["routes"]["/c/x"], "error -102")

    def test_a_group_created_after_the_first_load(self):
        out = self.start(seed_routes=False)
        self.assertEqual(out["routes"]["/a/x"], "skip nil")
        self.w.commit("PLUGIN", {"divide": divide_plugin()})
        self.w.commit("SELECTOR", {"s-a": selector("s-a", "/a")})
        self.w.commit("RULE", {"r-a": rule("r-a", "s-a", "/a")})
        out = self.refresh()
        self.assertHow(out, "from change log")
        self.assertEqual(out["routes"]["/a/x"], "error -119")      # no upstreams yet

    # ------------------------------------------------------------------ a whole read
    def test_a_gap_in_the_log_reads_everything(self):
        self.start()
        g1 = self.w.commit("RULE", delete=["r-a"])
        self.w.commit("RULE", delete=["r-b"])
        self.w.drop_log_entry(g1)
        out = self.refresh()
        self.assertHow(out, "the change log has no entry for generation %d" % g1)
        self.assertEqual(out["compiled"], 2, "still only what differs is compiled")
        self.assertEqual((out["routes"]["/a/x"], out["routes"]["/b/x"]), ("error -102", "error -102"))

    def test_a_reader_behind_a_trimmed_log_reads_everything(self):
        self.start()
        seen = self.w.generation()
        for n in ("a", "b", "c"):
            self.w.commit("RULE", delete=["r-" + n])
        self.w.trim_log(seen + 3)
        out = self.refresh()
        self.assertHow(out, "the change log starts at generation %d, after %d" % (seen + 3, seen + 1))
        self.assertEqual(out["routes"]["/c/x"], "error -102")
        # and from there on the log serves again
        self.w.commit("RULE", {"r-c": rule("r-c", "s-c", "/c")})
        self.assertHow(self.refresh(), "from change log")

    def test_no_log_reads_everything(self):
        self.start()
        self.w.remove_log()
        self.w.commit("RULE", delete=["r-a"])
        out = self.refresh()
        self.assertHow(out, "in place from no change log")
        self.assertEqual(out["compiled"], 1)

    def test_a_log_entry_that_is_not_understood_reads_everything(self):
        self.start()
        gen = self.w.commit("RULE", delete=["r-a"])
        with self.w.env.begin(write=True) as txn:
            log = self.w.env.open_db(b"changes", txn=txn)
            txn.put(b"%020d" % gen, b'{"group":"RULE","put":"r-a"}', db=log)
        out = self.refresh()
        self.assertHow(out, "the change log entry of generation %d is not understood" % gen)

    def test_a_format_change_is_refused_then_read_whole(self):
        self.start()
        self.w.set_format(b"2")
        out = self.refresh()
        self.assertTrue(any("refusing the environment" in l for l in out["log"]), out["log"])
        self.assertEqual(out["routes"]["/a/x"], "proxy s-a r-a 10.0.0.1:80", "last routes kept")
        self.w.set_format(b"1")
        out = self.refresh()
        self.assertHow(out, "whole table from full read")

    # ------------------------------------------------------------------ long keys
    def test_items_under_derived_sha256_keys_route(self):
        self.start()
        sid = "s-" + "l" * 600                  # over LMDB's 511-byte key limit
        rid = "r-" + "l" * 600
        self.assertTrue(stored_key(sid).startswith("#sha256:"))
        self.w.commit("SELECTOR", {sid: selector(sid, "/long")})
        self.w.commit("RULE", {rid: rule(rid, sid, "/long")})
        self.w.commit("DISCOVER_UPSTREAM", {sid: discover(sid, ["10.0.0.9:80"])})
        # a short key that begins with the reserved prefix is derived too
        odd = "#sha256:not-a-digest"
        self.w.commit("SELECTOR", {odd: selector(odd, "/e")})
        self.w.commit("RULE", {"r-e": rule("r-e", odd, "/e")})
        out = self.refresh()
        self.assertHow(out, "from change log")
        self.assertEqual(out["routes"]["/long/x"], "proxy %s %s 10.0.0.9:80" % (sid, rid))
        self.assertEqual(out["routes"]["/e/x"], "error -119")      # found, no upstreams
        self.w.commit("DISCOVER_UPSTREAM", {odd: discover(odd, ["10.0.0.8:80"])})
        self.assertEqual(self.refresh()["routes"]["/e/x"], "proxy %s r-e 10.0.0.8:80" % odd)
        # deleted through the log by its derived key
        self.w.commit("RULE", delete=[rid])
        out = self.refresh()
        self.assertEqual(out["routes"]["/long/x"], "error -102")

    # ------------------------------------------------------------------ random
    def test_random_changes_agree_with_tables_built_from_scratch(self):
        self.start(keep=8)
        rng = random.Random(19)
        names = ["a", "b", "c", "d", "e"]
        modes = {"log": 0, "whole": 0}
        for step in range(120):
            for _ in range(rng.randint(1, 4)):
                n = rng.choice(names)
                group = rng.choice(["SELECTOR", "RULE", "RULE", "DISCOVER_UPSTREAM", "PLUGIN"])
                if group == "PLUGIN":
                    self.w.commit("PLUGIN", {"divide": divide_plugin(rng.random() > 0.2)})
                elif rng.random() < 0.25:
                    key = {"SELECTOR": "s-", "RULE": "r-", "DISCOVER_UPSTREAM": "s-"}[group] + n
                    self.w.commit(group, delete=[key])
                elif group == "SELECTOR":
                    conds = [uri_cond(rng.choice(["match", "startsWith", "="]),
                                      "/" + n + rng.choice(["/**", "/", "/x"]))]
                    self.w.commit(group, {"s-" + n: selector("s-" + n, "/" + n, sort=rng.randint(1, 3),
                                                             conditions=conds)})
                elif group == "RULE":
                    self.w.commit(group, {"r-" + n: rule("r-" + n, "s-" + rng.choice(names), "/" + n,
                                                         sort=rng.randint(1, 3))},
                                  replace=rng.random() < 0.1)
                else:
                    self.w.commit(group, {"s-" + n: discover("s-" + n, ["10.0.0.%d:80" % rng.randint(1, 3)])})
            if rng.random() < 0.05:
                self.w.drop_log_entry(self.w.generation())
            out = self.refresh()
            how = [l for l in out["log"] if "routes built" in l]
            modes["log" if how and "from change log" in how[0] else "whole"] += 1
        self.assertGreater(modes["log"], 60, modes)
        self.assertGreater(modes["whole"], 3, modes)


if __name__ == "__main__":
    unittest.main()
