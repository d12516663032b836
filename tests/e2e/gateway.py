"""The end-to-end gateway stack for tests: a real nginx (Debian's nginx + lua module)
configured from contrib/nginx/nginx.conf, three upstream servers, the admin emulator and
gwsyncd with the `lmdb` subscriber, all on free loopback ports, all stopped and their
temporary directories removed even when a test fails.

    stack = gateway.Stack()                      # in setUpClass
    cls.addClassCleanup(stack.close)
    ups = stack.start_upstreams()                # names up-a, up-b, up-c
    stack.start_admin("shenyu", {"PLUGIN": [...], "SELECTOR": [...], ...})
    stack.start_daemon(); stack.wait_synced()
    nginx = stack.start_nginx(errors="shenyu")   # debug headers on (X-Gwsync-Generation...)
    v = stack.publish("replace", "SELECTOR", items=[...])   # then stack.wait_cache(v)

The nginx configuration is the shipped example itself (contrib/nginx/nginx.conf), copied
into a private prefix with only its listen port changed, so the tests prove the example
works; the example takes the cache path and the error mode from the environment. When the
tests run as root (CI), nginx's workers run as nobody (and its group) and the cache directory is
made the way contrib/nginx/README.md and docs/lmdb-cache.md tell operators to (group of
the gateway, setgid), so the permissions recipe is exercised too; the temporary
directories are then made searchable (0755) for that user.

Run the tests as `make check` does (GWSYNCD, GWSYNC_SRCDIR, GWSYNC_BUILDDIR and
GWSYNC_PLUGIN_PATH set); GWSYNC_PLUGIN_PATH gets build/plugins/lmdb/.libs appended when
the build directory is known and it is missing.
"""
import grp
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import harness  # noqa: E402
import cache as cachemod  # noqa: E402
from upstreams import Upstreams  # noqa: E402,F401  (re-exported for tests)
from loadgen import Client, LoadGenerator  # noqa: E402,F401

SRCDIR = harness.SRCDIR
CONTRIB = os.path.join(SRCDIR, "contrib", "nginx")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
LUA_CORE = "/usr/share/lua/5.1/resty/core.lua"
WORKER_USER = "nobody"      # the workers' user when the tests run as root; its own group


# ---------------------------------------------------------------------- prerequisites
def require_nginx():
    """SkipTest unless nginx, the lua module its example config loads, and lua-resty-core
    are installed (Debian: nginx-light, libnginx-mod-http-lua, lua-resty-core)."""
    if not os.access(NGINX, os.X_OK):
        raise unittest.SkipTest("nginx is not installed (Debian: nginx-light)")
    conf = os.path.join(CONTRIB, "nginx.conf")
    if os.path.exists(conf):
        with open(conf, encoding="utf-8") as f:
            for module in re.findall(r"^\s*load_module\s+(\S+);", f.read(), re.M):
                if module.startswith("/") and not os.path.exists(module):
                    raise unittest.SkipTest("nginx module %s is not installed "
                                            "(Debian: libnginx-mod-http-lua)" % module)
    if not os.path.exists(LUA_CORE):
        raise unittest.SkipTest("lua-resty-core is not installed (%s)" % LUA_CORE)


def plugin_env():
    """The environment for gwsyncd: GWSYNC_PLUGIN_PATH with the lmdb plugin's build dir."""
    path = os.environ.get("GWSYNC_PLUGIN_PATH", "")
    build = os.environ.get("GWSYNC_BUILDDIR") or os.path.dirname(harness.GWSYNCD or "")
    lmdb_dir = os.path.join(build, "plugins", "lmdb", ".libs") if build else ""
    if lmdb_dir and os.path.isdir(lmdb_dir) and lmdb_dir not in path.split(":"):
        path = path + ":" + lmdb_dir if path else lmdb_dir
    return {"GWSYNC_PLUGIN_PATH": path}


def as_root():
    return os.geteuid() == 0


def _worker_ids():
    """(uid, gid, group name) of the unprivileged user nginx's workers run as."""
    pw = pwd.getpwnam(WORKER_USER)
    return pw.pw_uid, pw.pw_gid, grp.getgrgid(pw.pw_gid).gr_name


def make_cache_dir(path):
    """The cache directory as an operator prepares it for a gateway running under another
    user: owned by the gateway's group, setgid so gwsyncd's files inherit that group.
    Not root: left for gwsyncd to create (the workers then run as this same user)."""
    if as_root():
        os.makedirs(path)
        os.chown(path, 0, _worker_ids()[1])
        os.chmod(path, 0o2750)
    return path


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------- nginx
class Nginx:
    """nginx -p PREFIX -c PREFIX/nginx.conf -g 'daemon off;' in the foreground, with the
    example configuration and a copy of contrib/nginx/lua in PREFIX."""

    def __init__(self, prefix, cache_path, errors="shenyu", debug_headers=True, port=None,
                 edit=None, client_address=None):
        self.edit = edit          # text -> text: a benchmark's own additions to the example
        self.prefix = prefix
        self.cache_path = cache_path
        self.errors = errors
        self.debug_headers = debug_headers
        self.client_address = client_address   # None: the example's default ("nginx")
        self.port = port or harness.free_port()
        self.proc = None
        self.conf = os.path.join(prefix, "nginx.conf")
        self.error_log = os.path.join(prefix, "error.log")

    def write_config(self):
        with open(os.path.join(CONTRIB, "nginx.conf"), encoding="utf-8") as f:
            text = f.read()
        text, n = re.subn(r"^(\s*)listen\s+127\.0\.0\.1:\d+\s*;", r"\g<1>listen 127.0.0.1:%d;"
                          % self.port, text, flags=re.M)
        if n != 1:
            raise AssertionError("contrib/nginx/nginx.conf: expected one `listen 127.0.0.1:PORT;`"
                                 " line to point at a free port, found %d" % n)
        if self.edit is not None:
            text = self.edit(text)
        if as_root():
            # The workers are the cache's readers: run them as an unprivileged user in the
            # cache directory's group, as the example's comment recommends.
            text = "user %s %s;\n%s" % (WORKER_USER, _worker_ids()[2], text)
        os.makedirs(self.prefix, exist_ok=True)
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(text)
        lua = os.path.join(self.prefix, "lua")
        if not os.path.exists(lua):
            # a copy, not a symlink: a source tree under /root is not readable by nobody
            shutil.copytree(os.path.join(CONTRIB, "lua"), lua)
        if as_root():
            os.chmod(self.prefix, 0o755)

    def env(self):
        env = dict(os.environ, GWSYNC_CACHE=self.cache_path, GWSYNC_ERRORS=self.errors,
                   GWSYNC_DEBUG_HEADERS="1" if self.debug_headers else "0")
        env.pop("GWSYNC_CLIENT_ADDRESS", None)
        if self.client_address:
            env["GWSYNC_CLIENT_ADDRESS"] = self.client_address
        return env

    def start(self, timeout=10.0):
        self.write_config()
        out = open(os.path.join(self.prefix, "nginx.out"), "ab")
        try:
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.prefix, "-c", self.conf, "-e", self.error_log,
                 "-g", "daemon off;"], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=self.env())
        finally:
            out.close()
        deadline = time.monotonic() + timeout
        while not _port_open(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                text = self.log_text()
                self.stop()
                raise AssertionError("nginx did not start (port %d):\n%s" % (self.port, text))
            time.sleep(0.02)
        return self

    def log_text(self):
        out = []
        for name in ("nginx.out", "error.log"):
            try:
                with open(os.path.join(self.prefix, name), encoding="utf-8", errors="replace") as f:
                    out.append(f.read())
            except OSError:
                pass
        return "\n".join(out)

    def errors_logged(self, since=0):
        """[error]-level (or worse) lines of error.log after byte offset `since`."""
        try:
            with open(self.error_log, encoding="utf-8", errors="replace") as f:
                f.seek(since)
                text = f.read()
        except OSError:
            return []
        return [l for l in text.splitlines() if re.search(r"\[(error|crit|alert|emerg)\]", l)]

    def log_size(self):
        try:
            return os.path.getsize(self.error_log)
        except OSError:
            return 0

    def client(self):
        return Client(self.port)

    def stop(self, timeout=5.0):
        """Fast shutdown (SIGTERM to the master); SIGKILL master and workers if it hangs."""
        if self.proc is None:
            return
        workers = _children(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if harness.VERBOSE:
            sys.stderr.write("---- nginx %d log\n%s\n" % (self.port, self.log_text()))
        self.proc = None


# ---------------------------------------------------------------------- the whole stack
class Stack:
    """Everything one test class needs, started in order and closed in reverse."""

    def __init__(self, nginx=True):
        if nginx:
            require_nginx()
        cachemod.require_lmdb()
        harness.require_daemon()
        self.tmp = tempfile.mkdtemp(prefix="gwsync-e2e-")
        if as_root():
            os.chmod(self.tmp, 0o755)
        self.cache_path = make_cache_dir(os.path.join(self.tmp, "cache"))
        self._closers = []
        self.upstreams = self.admin = self.daemon = None
        self.nginxes = []
        self._cache = None

    # -------------------------------------------------------------- pieces
    def start_upstreams(self, names=("up-a", "up-b", "up-c")):
        self.upstreams = Upstreams(names)
        self._closers.append(self.upstreams.close)
        return self.upstreams.start()

    def start_admin(self, mode, dataset, hold=5):
        self.admin = harness.Emulator(mode=mode, hold=hold, dataset=dataset)
        self._closers.append(self.admin.close)
        return self.admin.start()

    def daemon_config(self, **kw):
        sub = {"name": "cache", "library": "lmdb",
               "config": {"path": self.cache_path, "map_size": "64MiB"}}
        kw.setdefault("log_level", "info")
        kw.setdefault("retry", (10000, "100ms", "500ms"))
        return self.admin.config(subscribers=[sub], **kw)

    def start_daemon(self, **kw):
        tmp = os.path.join(self.tmp, "daemon")
        os.makedirs(tmp, exist_ok=True)
        self.daemon = harness.Daemon(self.daemon_config(**kw), env=plugin_env(), tmp=tmp)
        self._closers.append(self.daemon.close)
        return self.daemon.start()

    def start_nginx(self, errors="shenyu", debug_headers=True, name=None, edit=None,
                    client_address=None):
        prefix = os.path.join(self.tmp, name or "nginx-%s" % errors)
        n = Nginx(prefix, self.cache_path, errors=errors, debug_headers=debug_headers, edit=edit,
                  client_address=client_address)
        self._closers.append(n.stop)
        self.nginxes.append(n)
        return n.start()

    @property
    def cache(self):
        if self._cache is None:
            self._cache = cachemod.Cache(self.cache_path)
            self._closers.append(self._cache.close)
        return self._cache

    # -------------------------------------------------------------- the admin's versions
    def publish(self, op, group, **kw):
        """Apply a change through the emulator's control API ("upsert", "delete",
        "replace"): returns {"group", "md5", "t"} with t the monotonic time it was made."""
        t = time.monotonic()
        if op == "upsert":
            r = self.admin.upsert(group, kw.get("item"), kw.get("items"))
        elif op == "delete":
            r = self.admin.delete(group, kw.get("key"), kw.get("keys"))
        elif op == "replace":
            r = self.admin.replace(group, kw["items"])
        else:
            raise ValueError(op)
        return {"group": group, "md5": r["md5"], "t": t}

    def admin_md5s(self, groups):
        state = self.admin.state()["groups"]
        return {g: state[g]["md5"] for g in groups}

    def wait_cache(self, *versions, timeout=15.0):
        """Wait until the cache holds these published versions; the monotonic time seen."""
        return self.cache.wait_md5({v["group"]: v["md5"] for v in versions}, timeout=timeout,
                                   check=self._daemon_alive)

    def cache_state(self, groups):
        """({group: md5}, generation) of the cache, read in one transaction."""
        def get(txn, dbs):
            meta = dbs["meta"]
            if meta is None:
                return {g: None for g in groups}, None
            md5s = {}
            for g in groups:
                raw = txn.get(g.encode(), db=meta)
                md5s[g] = json.loads(raw).get("md5") if raw is not None else None
            gen = txn.get(b"generation", db=meta)
            return md5s, int(gen) if gen is not None else None
        return self.cache.read(["meta"], get) or ({g: None for g in groups}, None)

    def wait_generation(self, *versions, timeout=15.0, interval=0.002):
        """Wait until the cache holds these published versions: (monotonic time seen, the
        generation read in the same transaction as their md5s)."""
        wanted = {v["group"]: v["md5"] for v in versions}
        deadline = time.monotonic() + timeout
        while True:
            self._daemon_alive()
            md5s, gen = self.cache_state(list(wanted))
            if md5s == wanted:
                return time.monotonic(), gen
            if time.monotonic() >= deadline:
                raise AssertionError("cache %s never reached %s (has %s)" % (self.cache_path,
                                                                            wanted, md5s))
            time.sleep(interval)

    def _daemon_alive(self):
        if self.daemon is not None and self.daemon.proc is not None and not self.daemon.alive():
            raise AssertionError("gwsyncd exited (%s)\n%s" % (self.daemon.proc.returncode,
                                                             self.daemon.tail()))

    def wait_synced(self, groups=("PLUGIN", "SELECTOR", "RULE"), timeout=20.0):
        """Wait until the cache holds the admin's current version of `groups`."""
        try:
            return self.cache.wait_md5(self.admin_md5s(groups), timeout=timeout,
                                       check=self._daemon_alive)
        except AssertionError as e:
            tail = self.daemon.tail() if self.daemon else ""
            raise AssertionError("%s\n---- gwsyncd\n%s" % (e, tail))

    def close(self):
        while self._closers:
            fn = self._closers.pop()
            try:
                fn()
            except Exception as e:  # keep closing the rest
                sys.stderr.write("e2e cleanup: %s: %s\n" % (type(e).__name__, e))
        harness._cleanup_dir(self.tmp)
