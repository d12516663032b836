"""Runs the Lua router's unit tests (tests/lua/test_*.lua) under the plain `luajit` interpreter.

The Lua modules in contrib/nginx/lua/gwsync/ that hold ShenYu's routing semantics are pure
LuaJIT (FFI to libpcre2-8 and libcrypto), so they are tested without nginx. Each Lua file
prints one line per case and exits non-zero on any failure; this file makes one unittest test
per Lua file and fails naming the file and its failing cases. The emulator's dataset generator
writes realistic admin data for test_router_dataset.lua first, and the e2e routing fixture
(tests/e2e/routes.py) for test_router_fastpath.lua.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "admin"))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "e2e"))
import dataset  # noqa: E402
import routes  # noqa: E402

LUAJIT = shutil.which("luajit")
LUA_FILES = sorted(glob.glob(os.path.join(HERE, "test_*.lua")))


def write_datasets(directory):
    paths = []
    for flavour, sizes in (("shenyu", {}), ("soul", {}), ("shenyu", {"selectors": 300, "rules": 1200})):
        data = dataset.generate(seed=3, flavour=flavour, **sizes)
        path = os.path.join(directory, "%s-%d.json" % (flavour, len(data["SELECTOR"])))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
        paths.append(path)
    return paths


class _Upstreams:
    """routes.dataset's upstream namer: fixed addresses (nothing listens, nothing is sent)."""
    PORTS = {"up-a": 18081, "up-b": 18082, "up-c": 18083}

    def url(self, name):
        return "127.0.0.1:%d" % self.PORTS[name]


def write_fixtures(directory):
    """The e2e routing fixture (tests/e2e/routes.py) in both admin generations: tables with
    every divide behaviour, for the fast path's differential test."""
    paths = []
    for mode in ("shenyu", "shenyu-legacy"):
        path = os.path.join(directory, "routes-%s.json" % mode)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(routes.dataset(_Upstreams(), mode), f, ensure_ascii=False)
        paths.append(path)
    return paths


@unittest.skipUnless(LUAJIT, "luajit is not installed (Debian package luajit2 or luajit)")
class LuaRouterTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gwsync-lua-")
        cls.datasets = write_datasets(cls.tmp)
        cls.fixtures = write_fixtures(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_lua(self, path):
        env = dict(os.environ)
        lua_dir = os.path.join(SRCDIR, "contrib", "nginx", "lua")
        env["LUA_PATH"] = "%s/?.lua;%s/?.lua;;" % (lua_dir, HERE)
        env["GWSYNC_LUA_DATASETS"] = ":".join(self.datasets)
        env["GWSYNC_LUA_FIXTURES"] = ":".join(self.fixtures)
        proc = subprocess.run([LUAJIT, path], cwd=SRCDIR, env=env, capture_output=True,
                              text=True, timeout=300)
        failed = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
        if proc.returncode != 0 or failed:
            self.fail("%s failed (exit %d):\n%s\n%s" % (
                os.path.basename(path), proc.returncode, "\n".join(failed) or proc.stdout[-3000:],
                proc.stderr[-3000:]))


def _make(path):
    def test(self):
        self.run_lua(path)
    test.__doc__ = "luajit %s" % os.path.basename(path)
    return test


for _path in LUA_FILES:
    _name = "test_" + os.path.basename(_path)[len("test_"):-len(".lua")]
    setattr(LuaRouterTests, _name, _make(_path))


if __name__ == "__main__":
    unittest.main()
