"""Shared helpers for gwsync's black-box integration tests (unittest, standard library only).

The tests drive real processes: the admin emulator (tests/admin/emulator.py) and the built
gwsyncd. This module starts them on free ports, waits for conditions instead of sleeping,
and always cleans up, even when a test fails:

    class T(harness.IntegrationTest):
        def test_change_arrives(self):
            emu = self.emulator(mode="shenyu", hold=2)
            d = self.daemon(emu.config(log_level="debug"))
            d.wait_status(harness.holds("RULE"), "RULE held")
            v = emu.upsert("RULE", {...})
            d.wait_status(harness.holds("RULE", v["md5"], emu.url))
            ...

Wait on what the agent reports (/status, over its control socket: Daemon.wait_status with
the named predicates below), not on its log wording; wait_log is for a log line that is the
behaviour under test, or a fact no endpoint reports (say which in a comment).

    if __name__ == "__main__":
        harness.main()

Environment (set by `make check`): GWSYNCD (the daemon binary), GWSYNC_SRCDIR,
GWSYNC_BUILDDIR, GWSYNC_PLUGIN_PATH. GWSYNC_KEEP_TMP=1 keeps temporary directories;
GWSYNC_TEST_VERBOSE=1 prints every process's output when it is closed.
"""
import atexit
import json
import os
import re
import select
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
BUILDDIR = os.environ.get("GWSYNC_BUILDDIR", "")
GWSYNCD = os.environ.get("GWSYNCD", "")
PLUGIN_PATH = os.environ.get("GWSYNC_PLUGIN_PATH", "")
EMULATOR = os.path.join(SRCDIR, "tests", "admin", "emulator.py")
KEEP_TMP = os.environ.get("GWSYNC_KEEP_TMP") == "1"
VERBOSE = os.environ.get("GWSYNC_TEST_VERBOSE") == "1"

sys.path.insert(0, os.path.join(SRCDIR, "tests", "admin"))
import dataset  # noqa: E402  (the emulator's dataset: md5 rules, group lists)

CLASSIC_GROUPS = list(dataset.CLASSIC_GROUPS)
SHENYU_GROUPS = list(dataset.SHENYU_GROUPS)
DEFAULT_NAMESPACE = dataset.DEFAULT_NAMESPACE
md5_of = dataset.md5_of


# ---------------------------------------------------------------------- small helpers
def wait_until(predicate, timeout=10.0, interval=0.01, message=None):
    """Call predicate() until it returns a truthy value (returned) or the timeout passes
    (AssertionError naming `message`)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s"
                                 % (timeout, message or getattr(predicate, "__name__", "a condition")))
        time.sleep(interval)


def free_ports(n=1):
    """n distinct TCP ports free on 127.0.0.1 right now, for listeners a test configures,
    chosen below the kernel's ephemeral range: the ports bind(0) hands out are the ones every
    client socket takes as its source port, so one found that way may be taken by another
    test's connections (a flood of 2,000 in test_status_flood) before the listener binds it,
    and the listener then fails (seen in CI as an agent whose /status never answered)."""
    import random
    import socket
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    held, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            held.append(s)
            port = 0 if low <= 2048 else random.randint(max(1024, low - 16000), low - 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            ports.append(s.getsockname()[1])
    finally:
        for s in held:
            s.close()
    return ports


def free_port():
    """A TCP port free on 127.0.0.1 right now (see free_ports)."""
    return free_ports(1)[0]


def http_request(method, url, body=None, headers=None, timeout=10.0, cafile=None):
    """One HTTP request with urllib: (status, {header: value}, body bytes), whatever the
    status. `body` may be bytes, str, or a dict/list (sent as JSON)."""
    data = body
    headers = dict(headers or {})
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode("utf-8")
        headers.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        data = body.encode("utf-8")
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    ctx = ssl.create_default_context(cafile=cafile) if cafile else None
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()


def _cleanup_dir(path):
    if path and not KEEP_TMP:
        shutil.rmtree(path, ignore_errors=True)


def _own_tmpdir(prefix):
    """A temporary directory that is removed at the latest when the test process exits,
    even if the object that made it is never closed (a one-shot run_once() daemon): a test
    run leaves nothing behind in /tmp."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(_cleanup_dir, path)
    return path


def _stop_process(proc, sig=signal.SIGTERM, timeout=5.0):
    """Signal a process, wait up to `timeout`, SIGKILL it if needed. (rc, seconds)."""
    if proc is None:
        return None, 0.0
    t0 = time.monotonic()
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode, time.monotonic() - t0


# ---------------------------------------------------------------------- TLS material
def make_test_ca(directory, name="gwsync-test"):
    """A throw-away CA and a server certificate for 127.0.0.1/localhost signed by it,
    plus a second, unrelated CA (for "wrong CA" tests), made with the openssl CLI.
    Returns {"ca", "cert", "key", "wrong_ca"} paths. Raises unittest.SkipTest without
    openssl."""
    if shutil.which("openssl") is None:
        raise unittest.SkipTest("openssl is not installed")
    os.makedirs(directory, exist_ok=True)
    p = {k: os.path.join(directory, v) for k, v in {
        "ca": "ca.pem", "ca_key": "ca.key", "cert": "server.pem", "key": "server.key",
        "csr": "server.csr", "ext": "server.ext", "wrong_ca": "wrong-ca.pem",
        "wrong_ca_key": "wrong-ca.key"}.items()}

    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=60)

    for ca, key, cn in ((p["ca"], p["ca_key"], name + " CA"),
                        (p["wrong_ca"], p["wrong_ca_key"], name + " other CA")):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", ca,
            "-days", "2", "-subj", "/CN=" + cn)
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p["key"], "-out", p["csr"],
        "-subj", "/CN=127.0.0.1")
    with open(p["ext"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", p["csr"], "-CA", p["ca"], "-CAkey", p["ca_key"],
        "-CAcreateserial", "-out", p["cert"], "-days", "2", "-extfile", p["ext"])
    return {k: p[k] for k in ("ca", "cert", "key", "wrong_ca")}


# ---------------------------------------------------------------------- the emulator
class EmulatorError(AssertionError):
    pass


class Emulator:
    """One admin emulator process on a free loopback port.

    Emulator(mode="shenyu", hold=2, username="admin", password="123456", dataset=None,
             tls=None, args=(), **flags)
    - dataset: a dict {"GROUP": [items]} (written to a file) or a path (--dataset).
    - tls: {"cert", "key", "ca"} (see make_test_ca): serves HTTPS; control calls trust "ca".
    - flags: any emulator option, underscores for dashes (token_ttl=2000, rules=500,
      login_get_only=True, groups=[...], seed=2...).
    """

    def __init__(self, mode="shenyu", hold=2, username="admin", password="123456",
                 dataset=None, tls=None, args=(), **flags):
        self.mode = mode
        self.hold = hold
        self.username = username
        self.password = password
        self.tls = tls
        self.extra_args = list(args)
        self.flags = dict(flags)
        self.tmp = _own_tmpdir("gwsync-emu-")
        self.log_path = os.path.join(self.tmp, "emulator.log")
        self.dataset_path = None
        if isinstance(dataset, dict):
            self.dataset_path = os.path.join(self.tmp, "dataset.json")
            with open(self.dataset_path, "w", encoding="utf-8") as f:
                json.dump(dataset, f, ensure_ascii=False)
        elif dataset:
            self.dataset_path = dataset
        self.port = 0
        self.proc = None

    # -------------------------------------------------------------- lifecycle
    def command(self):
        cmd = [sys.executable, EMULATOR, "--port", str(self.port), "--mode", self.mode,
               "--hold", str(self.hold), "--username", self.username, "--password", self.password]
        if self.dataset_path:
            cmd += ["--dataset", self.dataset_path]
        if self.tls:
            cmd += ["--tls-cert", self.tls["cert"], "--tls-key", self.tls["key"]]
        for name, value in sorted(self.flags.items()):
            opt = "--" + name.replace("_", "-")
            if value is True:
                cmd.append(opt)
            elif value is False or value is None:
                continue
            elif isinstance(value, (list, tuple)):
                cmd += [opt, ",".join(value)]
            else:
                cmd += [opt, str(value)]
        return cmd + self.extra_args

    def start(self, timeout=20.0):
        if self.alive():
            return self
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=log,
                                         stdin=subprocess.DEVNULL)
        finally:
            log.close()
        line = self._first_line(timeout)
        m = re.match(r"LISTENING 127\.0\.0\.1 (\d+)$", line)
        if not m:
            _stop_process(self.proc, signal.SIGKILL)
            raise EmulatorError("emulator did not start: %r\n%s" % (line, self.log_text()))
        self.port = int(m.group(1))
        return self

    def _first_line(self, timeout):
        out = self.proc.stdout
        deadline = time.monotonic() + timeout
        buf = b""
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                break
            chunk = os.read(out.fileno(), 256)
            if not chunk:
                break
            buf += chunk
        return buf.decode("utf-8", "replace").strip()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        """Stop the process; returns its exit code (0 for a clean stop)."""
        rc, _ = _stop_process(self.proc, sig, timeout)
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()
        return rc

    def kill(self, sig=signal.SIGKILL):
        """Kill it abruptly (default SIGKILL); held connections are reset by the kernel."""
        return self.stop(sig)

    def restart(self, **flags):
        """Stop and start again on the same port (the agent's configured URL), optionally
        with changed flags (e.g. seed=2 for new data). The data is regenerated and tokens
        issued before are invalid, as after a real admin restart."""
        self.stop()
        self.flags.update(flags)
        return self.start()

    def close(self):
        self.stop()
        if VERBOSE:
            sys.stderr.write("---- emulator %s log\n%s\n" % (self.port, self.log_text()))
        _cleanup_dir(self.tmp)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def log_text(self):
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    # -------------------------------------------------------------- addresses
    @property
    def scheme(self):
        return "https" if self.tls else "http"

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self.scheme, self.port)

    @property
    def groups(self):
        if "groups" in self.flags and self.flags["groups"]:
            return list(self.flags["groups"])
        return SHENYU_GROUPS if self.mode == "shenyu" else CLASSIC_GROUPS

    @property
    def needs_login(self):
        return self.mode != "soul"

    def config(self, **kw):
        """make_config() for an agent syncing every group of this admin, with its login."""
        return Cluster.config_for([self], **kw)

    # -------------------------------------------------------------- control interface
    def control(self, path, body=None, method=None, timeout=10.0):
        """GET (no body) or POST (JSON body) /_control/<path>; the JSON reply, or
        EmulatorError for a non-200 status."""
        method = method or ("GET" if body is None else "POST")
        if method == "POST" and body is None:
            body = {}
        status, _, data = http_request(method, self.url + "/_control/" + path.lstrip("/"),
                                       body, timeout=timeout,
                                       cafile=self.tls.get("ca") if self.tls else None)
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            doc = {"raw": data.decode("utf-8", "replace")}
        if status != 200:
            raise EmulatorError("emulator %s %s: HTTP %d %s" % (method, path, status, doc))
        return doc

    def state(self):
        return self.control("state")

    def group(self, group):
        """{"md5", "lastModifyTime", "count"} of the admin's current version of a group."""
        return self.state()["groups"][group]

    def data(self, group):
        """{"group", "md5", "lastModifyTime", "data": [items]}: the current version."""
        return self.control("data?group=" + group)

    def upsert(self, group, item=None, items=None):
        return self.control("upsert", {"group": group, "items": items if items is not None else [item]})

    def delete(self, group, key=None, keys=None):
        return self.control("delete", {"group": group, "keys": keys if keys is not None else [key]})

    def replace(self, group, items):
        return self.control("replace", {"group": group, "items": items})

    def touch(self, group):
        return self.control("touch", {"group": group})

    def notify(self, group):
        return self.control("notify", {"group": group})

    def fault(self, kind, **params):
        """Inject a fault: fault("code", code=500, count=2, endpoint="fetch")."""
        return self.control("fault", dict(params, kind=kind))["fault"]

    def clear_faults(self):
        return self.control("clear-faults", {})

    def lag(self, groups="all", back=1):
        return self.control("lag", {"groups": groups, "back": back})

    def lag_off(self):
        return self.control("lag", {"off": True})

    def requests(self, kind=None, since=0):
        """The request log, oldest first; kind: "login" | "fetch" | "listener" | "other"."""
        q = "requests?since=%d" % since + ("&kind=" + kind if kind else "")
        return self.control(q)["requests"]

    def reset_requests(self):
        return self.control("reset-requests", {})

    def expire_tokens(self):
        return self.control("expire-tokens", {})

    def set_hold(self, seconds):
        self.hold = seconds
        return self.control("hold", {"seconds": seconds})

    # -------------------------------------------------------------- protocol client
    def call(self, method, path, body=None, headers=None, timeout=10.0):
        """A raw protocol request: (status, headers, body bytes)."""
        return http_request(method, self.url + path, body, headers, timeout,
                            cafile=self.tls.get("ca") if self.tls else None)

    def login(self):
        """A token from POST /platform/login (None in soul mode)."""
        if not self.needs_login:
            return None
        status, _, body = self.call("POST", "/platform/login",
                                    {"userName": self.username, "password": self.password})
        doc = json.loads(body)
        if status != 200 or doc.get("code") != 200:
            raise EmulatorError("login failed: %d %s" % (status, doc))
        return doc["data"]["token"]


class Cluster:
    """Several independent emulators standing for one admin cluster (which shares one
    database): the broadcast helpers apply a change to every member, each stamping its own
    lastModifyTime, as real admins do. To make one member lag, call its own methods."""

    def __init__(self, n=2, **kw):
        self.emulators = [Emulator(**kw) for _ in range(n)]

    def start(self):
        for e in self.emulators:
            e.start()
        return self

    def close(self):
        for e in self.emulators:
            e.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def __getitem__(self, i):
        return self.emulators[i]

    def __len__(self):
        return len(self.emulators)

    @property
    def urls(self):
        return [e.url for e in self.emulators]

    def upsert(self, group, item=None, items=None):
        return [e.upsert(group, item, items) for e in self.emulators]

    def delete(self, group, key=None, keys=None):
        return [e.delete(group, key, keys) for e in self.emulators]

    def replace(self, group, items):
        return [e.replace(group, items) for e in self.emulators]

    def touch(self, group):
        return [e.touch(group) for e in self.emulators]

    def requests(self, kind=None):
        return [e.requests(kind) for e in self.emulators]

    def reset_requests(self):
        for e in self.emulators:
            e.reset_requests()

    def config(self, **kw):
        return self.config_for(self.emulators, **kw)

    @staticmethod
    def config_for(emulators, **kw):
        first = emulators[0]
        kw.setdefault("groups", first.groups)
        if first.needs_login:
            kw.setdefault("username", first.username)
            kw.setdefault("password", first.password)
        if first.tls and "tls" not in kw:
            kw["tls"] = {"ca_file": first.tls["ca"]}
        return make_config(servers=[e.url for e in emulators], **kw)


# ---------------------------------------------------------------------- configuration
_PLAIN = re.compile(r"^[A-Za-z0-9_/$][A-Za-z0-9_./${}@+-]*$")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _scalar(value):
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED and not re.match(r"^[-+.\d]", text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _inline(value):
    if isinstance(value, dict) and not value:
        return "{}"
    if isinstance(value, list) and not value:
        return "[]"
    return _scalar(value)


def to_yaml(obj, indent=0):
    """Block-style YAML for dicts, lists and scalars (strings quoted when in doubt)."""
    pad = " " * indent
    if isinstance(obj, dict):
        if not obj:
            return pad + "{}\n"
        out = []
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                out.append("%s%s:\n%s" % (pad, _scalar(k), to_yaml(v, indent + 2)))
            else:
                out.append("%s%s: %s\n" % (pad, _scalar(k), _inline(v)))
        return "".join(out)
    if isinstance(obj, list):
        if not obj:
            return pad + "[]\n"
        out = []
        for v in obj:
            if isinstance(v, (dict, list)) and v:
                inner = to_yaml(v, indent + 2)
                out.append(pad + "- " + inner[indent + 2:])
            else:
                out.append("%s- %s\n" % (pad, _inline(v)))
        return "".join(out)
    return pad + _inline(obj) + "\n"


def make_config(servers, groups=None, username=None, password=None, password_file=None,
                namespace=None, connect_timeout=None, read_timeout="65s", hold=None,
                retry=None, max_response=None, tls=None, gateway_port=None,
                state_dir="@TMP@/state", log_level="debug", log=None, status=None,
                subscribers=None, admin_extra=None, extra=None):
    """YAML text in gwsync's configuration format (issue 2). None leaves a key out so the
    daemon's default applies. servers: URLs or Emulator objects. retry: a dict or an
    (attempts, interval, backoff) tuple. subscribers: [{name, library, config}].
    "@TMP@" (the default state_dir uses it) is replaced by the Daemon's temporary
    directory. admin_extra/extra: more keys merged into admin:/the top level."""
    admin = {"servers": [s.url if isinstance(s, Emulator) else s for s in servers]}
    if isinstance(retry, (tuple, list)):
        retry = dict(zip(("attempts", "interval", "backoff"), retry))
    for key, value in (("username", username), ("password", password),
                       ("password_file", password_file), ("namespace", namespace),
                       ("groups", groups), ("connect_timeout", connect_timeout),
                       ("read_timeout", read_timeout), ("hold", hold), ("retry", retry),
                       ("max_response", max_response), ("tls", tls)):
        if value is not None:
            admin[key] = list(value) if key == "groups" else value
    admin.update(admin_extra or {})
    doc = {"admin": admin}
    if gateway_port is not None:
        doc["gateway"] = {"port": gateway_port}
    if state_dir is not None:
        doc["state_dir"] = state_dir
    log_doc = dict(log or {})
    if log_level is not None:
        log_doc.setdefault("level", log_level)
    if log_doc:
        doc["log"] = log_doc
    if status is not None:
        doc["status"] = status
    if subscribers is not None:
        doc["subscribers"] = subscribers
    doc.update(extra or {})
    return to_yaml(doc)


# ---------------------------------------------------------------------- the daemon
def require_daemon(binary=None):
    """SkipTest unless the daemon binary (default $GWSYNCD) can be run."""
    binary = binary or GWSYNCD
    if not binary or not os.access(binary, os.X_OK):
        raise unittest.SkipTest("GWSYNCD is not set to a built gwsyncd (run through make check)")


class Daemon:
    """gwsyncd with a configuration written to its own temporary directory.

    Daemon(config, args=(), env=None, tmp=None): config is YAML text or a dict (to_yaml);
    "@TMP@" in it becomes the temporary directory (self.tmp); self.state_dir is
    tmp/state, the make_config() default. Output lines of stderr (and stdout) are
    captured by background threads as they come."""

    def __init__(self, config, args=(), env=None, tmp=None, binary=None):
        self.tmp = tmp or _own_tmpdir("gwsync-it-")
        self._own_tmp = tmp is None
        self.config_path = os.path.join(self.tmp, "gwsync.yaml")
        self.state_dir = os.path.join(self.tmp, "state")
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.binary = binary or GWSYNCD
        self.write_config(config)
        self.proc = None
        self._cond = threading.Condition()
        self._lines = []      # (monotonic time, stream name, text)
        self._readers = []
        self.started_at = None

    def write_config(self, config):
        text = config if isinstance(config, str) else to_yaml(config)
        self.config_text = text.replace("@TMP@", self.tmp)
        with open(self.config_path, "w", encoding="utf-8") as f:
            f.write(self.config_text)

    # -------------------------------------------------------------- lifecycle
    def start(self):
        require_daemon(self.binary)
        with self._cond:
            self._lines = []
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen([self.binary, "-c", self.config_path] + self.args,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=self.env)
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stderr, "stderr"),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stdout, "stdout"),
                                          daemon=True)]
        for t in self._readers:
            t.start()
        return self

    def _read(self, pipe, name):
        for raw in iter(pipe.readline, b""):
            with self._cond:
                self._lines.append((time.monotonic(), name, raw.decode("utf-8", "replace").rstrip("\n")))
                self._cond.notify_all()
        pipe.close()
        with self._cond:
            self._cond.notify_all()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def stop(self, sig=signal.SIGTERM, timeout=5.0):
        """Send `sig`, wait for the exit (SIGKILL after `timeout`): (exit code, seconds)."""
        rc, elapsed = _stop_process(self.proc, sig, timeout)
        for t in self._readers:
            t.join(2)
        return rc, elapsed

    def kill(self):
        return self.stop(signal.SIGKILL)

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=10.0):
        """The exit code once the process ends by itself (AssertionError on timeout)."""
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError("gwsyncd still running after %.1fs\n%s" % (timeout, self.tail()))
        for t in self._readers:
            t.join(2)
        return rc

    def restart(self, config=None):
        self.stop()
        if config is not None:
            self.write_config(config)
        return self.start()

    def close(self):
        if self.proc is not None:
            self.stop(signal.SIGTERM, 5)
            if VERBOSE:
                sys.stderr.write("---- gwsyncd output\n%s\n" % self.text())
        if self._own_tmp:
            _cleanup_dir(self.tmp)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # -------------------------------------------------------------- output
    def lines(self, stream="stderr", since=0):
        """Captured lines of a stream ("stderr", "stdout" or None for both)."""
        with self._cond:
            return [text for _, name, text in self._lines[since:] if stream in (None, name)]

    def text(self, stream=None):
        return "\n".join(self.lines(stream))

    def mark(self):
        """A position in the output: pass it as `since` to only look at later lines."""
        with self._cond:
            return len(self._lines)

    def tail(self, n=60):
        with self._cond:
            return "\n".join("%s| %s" % (name[3], text) for _, name, text in self._lines[-n:])

    def wait_log(self, pattern, timeout=10.0, since=0, stream="stderr", count=1):
        """Wait until `count` lines after position `since` match the regex `pattern`;
        returns the re.Match of the last one. AssertionError (with the output's tail) on
        timeout or if the process exits first."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = [m for m in (rx.search(text) for _, name, text in self._lines[since:]
                                     if stream in (None, name)) if m]
                if len(found) >= count:
                    return found[count - 1]
                left = deadline - time.monotonic()
                exited = self.proc is not None and self.proc.poll() is not None and \
                    not any(t.is_alive() for t in self._readers)
                if left <= 0 or exited:
                    why = "exited with %s" % self.proc.returncode if exited else \
                        "timed out after %.1fs" % timeout
                    raise AssertionError("gwsyncd %s before %d line(s) matched %r\n%s"
                                         % (why, count, pattern, self.tail()))
                self._cond.wait(min(left, 0.1))

    # -------------------------------------------------------------- /status
    def _top_level(self, key):
        """A top-level scalar of the configuration text (None when absent)."""
        m = re.search(r"(?m)^%s:[ \t]*(.*?)[ \t]*$" % re.escape(key), self.config_text)
        if not m:
            return None
        return m.group(1).strip("'\"")

    def _status_listen(self):
        m = re.search(r"(?m)^status:[ \t]*\n((?:[ \t]+.*\n?)*)", self.config_text)
        if m:
            lm = re.search(r"(?m)^[ \t]+listen:[ \t]*['\"]?([^'\"\s]+)", m.group(1))
            if lm and not lm.group(1).startswith(("unix:", "/")):
                return lm.group(1)
        return None

    def _ask_control(self, path, timeout):
        """The control socket's answer to "status" (None while nothing answers). The path
        is reached through its directory (/proc/self/fd/N/NAME), so any length works."""
        import socket
        try:
            dirfd = os.open(os.path.dirname(path), os.O_PATH)
        except OSError:
            return None
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            s.connect("/proc/self/fd/%d/%s" % (dirfd, os.path.basename(path)))
            s.sendall(b"status\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            return None
        finally:
            s.close()
            os.close(dirfd)
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            return None
        return doc if isinstance(doc, dict) and "status" in doc else None

    def status_doc(self, timeout=5.0):
        """{"status": the /status document, "history": the last changes or None} as the
        agent reports them now, or None while it does not answer. Asked over the control
        socket (STATE_DIR/control.sock unless configured), or over HTTP at status.listen
        when the configuration has no control socket."""
        control = self._top_level("control_socket")
        state = self._top_level("state_dir")
        path = control if control else (os.path.join(state, "control.sock")
                                        if state and control is None else None)
        if path:
            doc = self._ask_control(path, timeout)
            if doc is not None:
                return doc
        listen = self._status_listen()
        if listen:
            try:
                st, _, body = http_request("GET", "http://%s/status" % listen, timeout=timeout)
            except (urllib.error.URLError, ConnectionError, OSError):
                return None
            if st == 200:
                return {"status": json.loads(body.decode("utf-8")), "history": None}
        return None

    def status(self, timeout=5.0):
        """The /status document now (None while the agent does not answer)."""
        doc = self.status_doc(timeout)
        return doc["status"] if doc else None

    def wait_status(self, predicate, message=None, timeout=30.0, interval=0.1):
        """Poll the agent's /status until predicate(doc) is truthy; returns the document.
        AssertionError naming `message`, with the last document and the log's tail, on
        timeout or if the agent exits first. Use the named predicates below (holds,
        conn_state, ...) so that a test reads as the fact it waits for."""
        last = {}
        deadline = time.monotonic() + timeout
        while True:
            doc = self.status()
            if doc is not None:
                last["doc"] = doc
                if predicate(doc):
                    return doc
            if not self.alive() or time.monotonic() >= deadline:
                why = "exited with %s" % (self.proc.returncode if self.proc else None) \
                    if not self.alive() else "timed out after %.1fs" % timeout
                raise AssertionError("gwsyncd %s waiting for %s\nlast /status: %s\n%s"
                                     % (why, message or getattr(predicate, "__name__", "a state"),
                                        json.dumps(last.get("doc"), indent=1) if last else
                                        "never answered (no control socket, no status.listen)",
                                        self.tail()))
            time.sleep(interval)

    def wait_history(self, group, md5=None, predicate=None, message=None, timeout=30.0):
        """Wait until the agent's change history (the last changes the control socket
        reports, as in /history) has an entry for version `md5` of `group` (md5=None: its
        newest entry) for which predicate(entry) is truthy; returns the entry."""
        last = {}

        def check():
            doc = self.status_doc()
            hist = (doc or {}).get("history") or {}
            for e in ((hist.get("groups") or {}).get(group) or [])[:None if md5 else 1]:
                if md5 is None or e.get("md5") == md5:
                    last["entry"] = e
                    return e if predicate is None or predicate(e) else None
            if not self.alive():
                raise AssertionError("gwsyncd exited\n%s" % self.tail())
            return None
        try:
            return wait_until(check, timeout=timeout, interval=0.1,
                              message=message or "history of %s %s" % (group, md5))
        except AssertionError as e:
            raise AssertionError("%s\nlast entry: %s\n%s" % (e, json.dumps(last.get("entry")),
                                                              self.tail()))

    def assert_no_log(self, pattern, since=0, stream=None):
        rx = re.compile(pattern)
        bad = [t for t in self.lines(stream, since) if rx.search(t)]
        if bad:
            raise AssertionError("unexpected output matching %r:\n%s" % (pattern, "\n".join(bad)))

    # -------------------------------------------------------------- one-shot runs
    def run(self, *args, timeout=60.0, env=None):
        """Run gwsyncd -c CONFIG ARGS to completion: subprocess.CompletedProcess with
        text stdout/stderr (the long-running instance, if any, is not involved)."""
        require_daemon(self.binary)
        return subprocess.run([self.binary, "-c", self.config_path] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, timeout=timeout,
                              env=dict(self.env, **(env or {})), text=True, errors="replace")

    def run_once(self, *args, **kw):
        return self.run("--once", *args, **kw)

    def run_check(self, *args, **kw):
        return self.run("--check", *args, **kw)


# ---------------------------------------------------------------------- /status facts
# Predicates on the /status document (docs/operations.md) for Daemon.wait_status: each
# names one fact, so tests wait on what the agent reports, not on its log wording.
def connection(doc, url):
    """The source connection (server, endpoint) whose url is `url` (None if absent); with
    url=None the only one."""
    conns = (doc.get("source") or {}).get("connections") or doc.get("servers") or []
    if url is None:
        return conns[0] if len(conns) == 1 else None
    url = getattr(url, "url", url)
    for c in conns:
        if c.get("url") == url:
            return c
    return None


def held(doc, group):
    """The group's entry in /status (None while nothing is held)."""
    return (doc.get("groups") or {}).get(group)


def holds(group, md5=None, source=None, items=None, from_snapshot=None):
    """The agent holds a version of `group` (that md5, from that server or "snapshot",
    with that many items, loaded from the snapshot or not)."""
    def pred(doc):
        g = held(doc, group)
        return bool(g) and (md5 is None or g.get("md5") == md5) and \
            (source is None or g.get("source") == getattr(source, "url", source)) and \
            (items is None or g.get("items") == items) and \
            (from_snapshot is None or g.get("fromSnapshot") == from_snapshot)
    pred.__name__ = "holds(%s%s%s)" % (group, " " + md5 if md5 else "",
                                       " from %s" % getattr(source, "url", source) if source else "")
    return pred


def holds_all(versions, source=None, from_snapshot=None):
    """Every group of {group: md5} held at that md5 (see holds)."""
    preds = [holds(g, m, source, from_snapshot=from_snapshot) for g, m in versions.items()]
    pred = lambda doc: all(p(doc) for p in preds)  # noqa: E731
    pred.__name__ = "holds_all(%s)" % ", ".join(sorted(versions))
    return pred


def conn_state(url, *states):
    """The connection to `url` is in one of `states` (polling, retrying, backing_off,
    connected, connecting, ...)."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and c.get("state") in states
    pred.__name__ = "connection %s %s" % (getattr(url, "url", url), "/".join(states))
    return pred


def conn_errors(url, reason, at_least=1):
    """The connection to `url` counts at least `at_least` failed conversations for
    `reason` (connect, timeout, http, code, parse, fetch, too_large, auth, session)."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and (c.get("errors") or {}).get(reason, 0) >= at_least
    pred.__name__ = "%d %s error(s) on %s" % (at_least, reason, getattr(url, "url", url))
    return pred


def conn_failing(url, at_least=1, reason=None):
    """The connection to `url` has failed `at_least` tries in a row now (and counts a
    failure of kind `reason`, when given: connect, timeout, http, ...)."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and (c.get("consecutiveFailures") or 0) >= at_least and \
            (reason is None or (c.get("errors") or {}).get(reason, 0) >= 1)
    pred.__name__ = "%s failing %d time(s) in a row" % (getattr(url, "url", url), at_least)
    return pred


def conn_recovered(url, state="polling"):
    """The connection to `url` works again: in `state`, no failure since it last worked,
    and it failed before (lastError kept as history)."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and c.get("state") == state and c.get("consecutiveFailures") == 0 \
            and c.get("lastError") is not None
    pred.__name__ = "%s %s again after failing" % (getattr(url, "url", url), state)
    return pred


def conn_worked_since_error(url):
    """The connection to `url` worked (lastSuccess: a poll answered, an event source's
    full sync ended) at or after its last error."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and c.get("lastSuccess") is not None and c.get("lastErrorAt") is not None \
            and c["lastSuccess"] >= c["lastErrorAt"] and c.get("consecutiveFailures") == 0
    pred.__name__ = "%s worked since its last error" % getattr(url, "url", url)
    return pred


def nothing_held(doc):
    """No group holds a version: nothing was accepted (an agent without a snapshot)."""
    return all(v is None for v in (doc.get("groups") or {}).values())


def snapshot_only(doc):
    """Every group held comes from the snapshot: no admin's version was accepted."""
    return all(v is None or v.get("fromSnapshot") for v in (doc.get("groups") or {}).values())


def changes(doc):
    """Group versions accepted from every connection of the source, in all."""
    conns = (doc.get("source") or {}).get("connections") or doc.get("servers") or []
    return sum(c.get("changes") or 0 for c in conns)


def subscriber(doc, name):
    for s in doc.get("subscribers") or []:
        if s.get("name") == name:
            return s
    return None


def delivered(name, group, md5):
    """Subscriber `name` accepted version `md5` of `group`."""
    def pred(doc):
        s = subscriber(doc, name)
        g = ((s or {}).get("groups") or {}).get(group) or {}
        return g.get("md5") == md5
    pred.__name__ = "%s holds %s %s" % (name, group, md5)
    return pred


def refused(name, group, at_least=1):
    """Subscriber `name` has refused `group` at least `at_least` times in a row now."""
    def pred(doc):
        s = subscriber(doc, name)
        g = ((s or {}).get("groups") or {}).get(group) or {}
        return (g.get("consecutiveFailures") or 0) >= at_least
    pred.__name__ = "%s refused %s %d time(s)" % (name, group, at_least)
    return pred


def changed(entry):
    """(added, updated, removed) counts of a history entry (None while not counted)."""
    if entry.get("added") is None:
        return None
    return tuple(entry[k]["count"] for k in ("added", "updated", "removed"))


def applied_by(name, counts=None):
    """A history-entry predicate: subscriber `name` applied the version (which changed
    `counts` = (added, updated, removed) items, when given)."""
    def pred(entry):
        return ((entry.get("subscribers") or {}).get(name) or {}).get("state") == "applied" \
            and (counts is None or changed(entry) == tuple(counts))
    return pred


def watching(*sessions, url=None):
    """An event source's connection (`url`, or the only one) is connected with a watch
    running (etcd: on one of the endpoints `sessions`, when given)."""
    def pred(doc):
        c = connection(doc, url)
        return bool(c) and c.get("state") == "connected" and (c.get("watches") or 0) >= 1 \
            and (not sessions or c.get("session") in sessions)
    pred.__name__ = "watching%s" % (" on " + "/".join(sessions) if sessions else "")
    return pred


def only_conn(pred_of_conn, name):
    """A predicate on the only connection's entry (event sources have one)."""
    def pred(doc):
        c = connection(doc, None)
        return bool(c) and pred_of_conn(c)
    pred.__name__ = name
    return pred


def healthy(doc):
    """Ready: /healthz would answer 200 (every configured group holds data)."""
    return doc.get("healthy") is True


def all_of(*preds):
    pred = lambda doc: all(p(doc) for p in preds)  # noqa: E731
    pred.__name__ = " and ".join(getattr(p, "__name__", "?") for p in preds)
    return pred


# ---------------------------------------------------------------------- unittest glue
class IntegrationTest(unittest.TestCase):
    """A TestCase whose helpers start processes and always stop them afterwards."""

    def emulator(self, start=True, **kw):
        e = Emulator(**kw)
        self.addCleanup(e.close)
        return e.start() if start else e

    def cluster(self, n=2, **kw):
        c = Cluster(n, **kw)
        self.addCleanup(c.close)
        return c.start()

    def daemon(self, config, args=(), start=True, **kw):
        require_daemon(kw.get("binary"))
        d = Daemon(config, args, **kw)
        self.addCleanup(d.close)
        return d.start() if start else d

    def tmpdir(self):
        path = tempfile.mkdtemp(prefix="gwsync-it-")
        self.addCleanup(_cleanup_dir, path)
        return path


def main():
    """unittest.main() with automake's exit codes: 0 pass, 1 fail, 77 all skipped."""
    prog = unittest.main(exit=False, verbosity=2)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and len(result.skipped) == result.testsRun:
        sys.exit(77)
    sys.exit(0)
