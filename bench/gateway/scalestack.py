"""The pieces figure 11 (the gateway at scale) runs: nginx, clients pinned to one worker,
the cache writer and the paced load.

- ScaleNginx: one nginx from a given nginx.conf and Lua directory (the tree's
  contrib/nginx by default; the router being measured otherwise), as tests/e2e/gateway.py
  runs the shipped example, plus what the figure needs around the example's router server:
  a "direct" server proxying every request to one fixed upstream with the same proxy
  settings and keep-alive pool (the floor), a "lua_floor" server doing the same through an
  empty access_by_lua and a balancer_by_lua that only sets that upstream (ngx_lua's own
  floor: the phase entries any Lua router pays), eight upstream servers and the fixed one
  (`return 200` with their own names, served by the same nginx so no upstream written in
  Python is ever the bottleneck), and two locations in the router's server that bypass the
  router: /_bench/pid (which worker holds this connection) and /_bench/lua (that worker's
  Lua heap after a full collection: the built table's size). Client keep-alive is made
  unlimited on the router and the direct server (the default closes a connection after
  1,000 requests, which would move a pinned client to another worker).
- Pinned: one keep-alive connection known to be served by one given worker, so a figure
  can ask every worker (a change is reflected by the gateway only when every worker
  reflects it).
- Writer: bench/cachewriter.c, the real lmdb plugin committing one-item changes.
- load(): bench/pacedload.c.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))
sys.path.insert(0, os.path.join(SRC, "bench"))

import gateway  # noqa: E402
import harness  # noqa: E402
import procfs  # noqa: E402
from scaledata import PAIRS, upstream_body  # noqa: E402

BUILT = re.compile(r"(\d+)#\d+: .*routes built")
BUILT_MS = re.compile(r"routes built.* in ([\d.]+) ?ms")


# ---------------------------------------------------------------------- nginx
class ScaleNginx(gateway.Nginx):
    def __init__(self, prefix, cache_path, conf_dir, lua_dir, workers, ports):
        super().__init__(prefix, cache_path, errors="plain", debug_headers=False)
        self.conf_dir, self.lua_dir, self.workers, self.ports = conf_dir, lua_dir, workers, ports
        self.spawned = None

    def edit_text(self, text):
        text, n = re.subn(r"^worker_processes\s+\S+;", "worker_processes %d;" % self.workers,
                          text, flags=re.M)
        if n != 1:
            raise SystemExit("%s/nginx.conf: no worker_processes line" % self.conf_dir)
        bench_locations = r"""
        keepalive_requests 100000000;
        keepalive_timeout 3600s;
        location = /_bench/pid { return 200 "$pid\n"; }
        location = /_bench/lua {
            content_by_lua_block {
                collectgarbage("collect")
                ngx.say(ngx.worker.pid(), " ", collectgarbage("count"))
            }
        }
        location = /_bench/routecache {
            content_by_lua_block {
                local ok, rc = pcall(require, "gwsync.routecache")
                local c = ok and rc.count or { hit = -1, miss = -1, bypass = -1 }
                ngx.say(ngx.worker.pid(), " ", c.hit, " ", c.miss, " ", c.bypass)
            }
        }"""
        text, n = re.subn(r"^\s*listen\s+127\.0\.0\.1:%d\s*;" % self.port,
                          lambda m: m.group(0) + bench_locations, text, count=1, flags=re.M)
        if n != 1:
            raise SystemExit("%s/nginx.conf: no router `listen` line" % self.conf_dir)
        p = self.ports
        extra = ["""
    upstream bench_fixed {
        server 127.0.0.1:%d;
        keepalive 64;
        keepalive_requests 10000;
    }
    server {
        listen 127.0.0.1:%d;
        keepalive_requests 100000000;
        keepalive_timeout 3600s;
        location / {
            proxy_pass http://bench_fixed;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host 127.0.0.1:%d;
            proxy_next_upstream error timeout;
        }
    }
""" % (p["fixed"], p["direct"], p["fixed"])]
        if p.get("lua_floor"):
            # ngx_lua's own floor: the direct server's proxying with the router's two Lua
            # phase entries, doing nothing (an empty access_by_lua, a balancer_by_lua that
            # only sets the fixed peer): what any Lua router on this nginx pays per request
            extra.append("""
    upstream bench_lua_floor {
        server 0.0.0.1;
        balancer_by_lua_block {
            require("ngx.balancer").set_current_peer("127.0.0.1", %d)
        }
        keepalive 64;
        keepalive_requests 10000;
    }
    server {
        listen 127.0.0.1:%d;
        keepalive_requests 100000000;
        keepalive_timeout 3600s;
        location / {
            access_by_lua_block { }
            proxy_pass http://bench_lua_floor;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host 127.0.0.1:%d;
            proxy_next_upstream error timeout;
        }
    }
""" % (p["fixed"], p["lua_floor"], p["fixed"]))
        for k, port in [("F", p["fixed"])] + list(enumerate(p["upstreams"])):
            extra.append("""    server {
        listen 127.0.0.1:%d;
        keepalive_requests 100000000;
        location / { return 200 "%s"; }
    }
""" % (port, upstream_body(k).replace("\n", "\\n")))
        at = text.rindex("}")            # the end of the http block
        return text[:at] + "".join(extra) + text[at:]

    def write_config(self):
        """gateway.Nginx's, from conf_dir/nginx.conf and lua_dir instead of the tree's."""
        with open(os.path.join(self.conf_dir, "nginx.conf"), encoding="utf-8") as f:
            text = f.read()
        text, n = re.subn(r"^(\s*)listen\s+127\.0\.0\.1:\d+\s*;",
                          r"\g<1>listen 127.0.0.1:%d;" % self.port, text, count=1, flags=re.M)
        if n != 1:
            raise SystemExit("%s/nginx.conf: no `listen 127.0.0.1:PORT;` line" % self.conf_dir)
        text = self.edit_text(text)
        if gateway.as_root():
            text = "user %s %s;\n%s" % (gateway.WORKER_USER, gateway._worker_ids()[2], text)
        os.makedirs(self.prefix, exist_ok=True)
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(text)
        lua = os.path.join(self.prefix, "lua")
        if not os.path.exists(lua):
            shutil.copytree(self.lua_dir, lua)
        if gateway.as_root():
            os.chmod(self.prefix, 0o755)

    def start(self, timeout=30.0):
        self.spawned = time.monotonic()
        return super().start(timeout)

    def worker_pids(self):
        return sorted(gateway._children(self.proc.pid)) if self.proc else []

    def wait_workers(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while len(self.worker_pids()) < self.workers:
            if time.monotonic() > deadline:
                raise RuntimeError("nginx has %d workers, not %d" % (len(self.worker_pids()),
                                                                    self.workers))
            time.sleep(0.01)
        return self.worker_pids()

    def log_since(self, offset):
        try:
            with open(self.error_log, encoding="utf-8", errors="replace") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return ""


def cpu_seconds(pid):
    """CPU time of a (single-threaded) nginx worker, from /proc/PID/schedstat: nanoseconds,
    where /proc/PID/stat counts 10 ms ticks (too coarse for one request)."""
    with open("/proc/%d/schedstat" % pid) as f:
        return int(f.read().split()[0]) / 1e9


class CpuWatch:
    """Which workers are busy: each worker's share of a core over the last second, from
    samples taken by sample() (a timer of the router's own is not "busy": under 5%)."""

    def __init__(self, pids, window=1.0):
        self.pids, self.window = list(pids), window
        self.samples = {p: [] for p in self.pids}

    def sample(self):
        now = time.monotonic()
        for p in self.pids:
            try:
                cpu = cpu_seconds(p)
            except OSError:
                continue
            v = self.samples[p]
            v.append((now, cpu))
            while len(v) > 2 and now - v[1][0] >= self.window:
                v.pop(0)
        return now

    def busy(self, pid):
        v = self.samples[pid]
        if len(v) < 2 or v[-1][0] - v[0][0] < self.window * 0.9:
            return True          # not watched long enough to say
        return (v[-1][1] - v[0][1]) / (v[-1][0] - v[0][0]) >= 0.05

    def wait_idle(self, timeout, interval=0.05):
        """True when every worker was idle for a whole window, False at the timeout."""
        deadline = time.monotonic() + timeout
        while True:
            now = self.sample()
            if not any(self.busy(p) for p in self.pids):
                return True
            if now > deadline:
                return False
            time.sleep(interval)


def worker_memory(pid):
    """{"rss", "anon"} KiB of a worker (VmRSS, RssAnon: the data.mdb pages it reads are
    file pages, in VmRSS only)."""
    return {"rss": procfs.status_kib(pid, "VmRSS"), "anon": procfs.status_kib(pid, "RssAnon")}


# ---------------------------------------------------------------------- clients
class Pinned:
    """A keep-alive HTTP/1.1 connection served by worker `pid` (raw socket: the figures
    time single requests, and http.client adds its own milliseconds under load).

    A request that times out leaves its answer owed, not the connection broken: the next
    get() reads (and drops) owed answers first, so a worker that was busy for longer than
    a wait stays reachable on the same connection (a new connection may never reach a
    worker that is busy: nginx hands it to whichever worker accepts first)."""

    def __init__(self, port):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.owed = 0
        self.pid = None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("no answer")
        self.sock.settimeout(left)
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed by nginx")
        self.buf += data

    def _answer(self, deadline):
        """Read one whole answer: (status, body). Nothing is consumed until it is whole."""
        while True:
            b = self.buf
            end = b.find(b"\r\n\r\n")
            if end >= 0:
                head = b[:end].decode("latin-1").split("\r\n")
                status = int(head[0].split()[1])
                headers = {}
                for line in head[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                at = end + 4
                if "content-length" in headers:
                    n = int(headers["content-length"])
                    if len(b) >= at + n:
                        self.buf = b[at + n:]
                        return status, b[at:at + n]
                elif "chunked" in headers.get("transfer-encoding", ""):
                    body = []
                    while True:
                        nl = b.find(b"\r\n", at)
                        if nl < 0:
                            break
                        size = int(b[at:nl].split(b";")[0], 16)
                        if len(b) < nl + 2 + size + 2:
                            break
                        body.append(b[nl + 2:nl + 2 + size])
                        at = nl + 2 + size + 2
                        if size == 0:
                            self.buf = b[at:]
                            return status, b"".join(body)
                else:
                    raise ConnectionError("an answer with no length")
            self._fill(deadline)

    def get(self, path, timeout=30.0):
        """(status, body, t0_ns, t1_ns), monotonic nanoseconds around the request."""
        deadline = time.monotonic() + timeout
        while self.owed:
            self._answer(deadline)
            self.owed -= 1
        t0 = time.monotonic_ns()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n"
                           % (path, self.port)).encode())
        self.owed = 1
        status, body = self._answer(deadline)
        self.owed = 0
        return status, body, t0, time.monotonic_ns()


def pin(port, pids, per_worker=1, tries=200):
    """{pid: [Pinned]}: connections until every worker holds `per_worker` (nginx hands a
    new connection to whichever worker accepts it first)."""
    out = {pid: [] for pid in pids}
    spare = []
    for _ in range(tries):
        if all(len(v) >= per_worker for v in out.values()):
            break
        c = Pinned(port)
        status, body, _, _ = c.get("/_bench/pid", timeout=60)
        c.pid = int(body.strip()) if status == 200 else None
        if c.pid in out and len(out[c.pid]) < per_worker:
            out[c.pid].append(c)
        else:
            spare.append(c)      # kept open meanwhile, so the next lands elsewhere
    for c in spare:
        c.close()
    missing = [p for p, v in out.items() if len(v) < per_worker]
    if missing:
        for v in out.values():
            for c in v:
                c.close()
        raise RuntimeError("no connection reached worker(s) %s in %d tries" % (missing, tries))
    return out


def lua_heap_kib(conns, timeout=120):
    """{pid: KiB} of each worker's Lua heap after a full collection."""
    out = {}
    for pid, c in conns.items():
        status, body, _, _ = c.get("/_bench/lua", timeout=timeout)
        if status != 200:
            raise RuntimeError("/_bench/lua: HTTP %d %r" % (status, body[:200]))
        wpid, kib = body.split()
        out[int(wpid)] = float(kib)
    return out


def route_cache_counts(conns, timeout=60):
    """(hits, misses, bypassed) summed over the workers since they started (the route cache,
    gwsync.routecache), or None for a router without one."""
    tot = [0, 0, 0]
    for c in conns.values():
        status, body, _, _ = c.get("/_bench/routecache", timeout=timeout)
        if status != 200:
            return None
        v = [int(x) for x in body.split()[1:4]]
        if v[0] < 0:
            return None
        tot = [a + b for a, b in zip(tot, v)]
    return tuple(tot)


def hit_rate_text(c0, c1):
    """'hit rate 99.8% of 123456' between two route_cache_counts, or 'no route cache'."""
    if c0 is None or c1 is None:
        return "no route cache"
    d = [b - a for a, b in zip(c0, c1)]
    n = sum(d)
    return "route cache hit rate %.1f%% of %d (%d bypassed)" % (100.0 * d[0] / n if n else 0, n, d[2])


def concurrently(fns, timeout=None):
    """Run the callables at once in threads; their results (an exception's text if one
    raised, None if still running at the timeout)."""
    results = [None] * len(fns)
    go = threading.Event()

    def run(i, fn):
        go.wait()
        try:
            results[i] = fn()
        except Exception as e:  # a figure reports, it does not crash
            results[i] = "%s: %s" % (type(e).__name__, e)

    threads = [threading.Thread(target=run, args=(i, fn), daemon=True) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(timeout)
    return results


# ---------------------------------------------------------------------- the cache writer
class Writer:
    """bench/cachewriter: fills the cache, then commits one change per put()."""

    def __init__(self, binary, dataset_dir, lmdb_so, env_dir, log_path):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([binary, dataset_dir, lmdb_so, env_dir, "1GiB"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)
        self.fill = {}
        self.lock = threading.Lock()
        self.cpu_at_ready = None
        while True:
            line = self.proc.stdout.readline().decode()
            if not line:
                raise RuntimeError("cachewriter exited (%s); see %s" % (self.proc.wait(), log_path))
            parts = line.split()
            if parts[0] == "FILL":
                self.fill[parts[1]] = (int(parts[2]), float(parts[3]))
            elif parts[0] == "READY":
                break
        self.cpu_at_ready = procfs.cpu_seconds(self.proc.pid)
        self.changes = 0

    def put(self, change):
        """Commit one change: (commit time, monotonic ns, when apply() returned; apply ns)."""
        data = change.text.encode("utf-8")
        with self.lock:
            self.proc.stdin.write(b"put %s %d %d\n" % (change.group.encode(), change.offset,
                                                        len(data)) + data + b"\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline().decode().split()
        if not line or line[0] != "ok":
            raise RuntimeError("cachewriter: %s" % " ".join(line) if line else "cachewriter died")
        self.changes += 1
        return int(line[1]), int(line[2])

    def cpu_per_change_ms(self):
        if not self.changes or self.proc.poll() is not None:
            return None
        return (procfs.cpu_seconds(self.proc.pid) - self.cpu_at_ready) * 1000 / self.changes

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class LpAdmin:
    """bench/gateway/lpadmin.py: the long-polling admin of the end-to-end rows."""

    def __init__(self, script, dataset_dir, log_path):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, script, dataset_dir], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log)
        line = self.proc.stdout.readline().decode().split()
        if not line or line[0] != "LISTENING":
            self.close()
            raise RuntimeError("lpadmin did not start; see %s" % log_path)
        self.port = int(line[1])
        self.lock = threading.Lock()

    def put(self, change):
        """Make the change; when the agent's held listener was answered (monotonic ns), or
        -1 if it was not within 30 s."""
        data = change.text.encode("utf-8")
        with self.lock:
            self.proc.stdin.write(b"put %s %d %d\n" % (change.group.encode(), change.offset,
                                                        len(data)) + data + b"\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline().decode().split()
        if not line or line[0] != "ok":
            raise RuntimeError("lpadmin: %s" % (" ".join(line) or "died"))
        return int(line[1])

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# ---------------------------------------------------------------------- the load
def parse_load(out):
    line = [l for l in out.splitlines() if l.startswith("sent=")]
    if not line:
        raise RuntimeError("pacedload printed no result:\n" + out)
    res = {}
    for kv in line[-1].split():
        k, _, v = kv.partition("=")
        res[k] = [int(x) for x in v.split(",") if x] if k == "sec" else float(v)
    return res


class Load:
    """pacedload in the background: start(), then result() (waits for its end) or stop()."""

    def __init__(self, binary, port, rate, seconds, paths_file, conns=32, timeout=10.0):
        self.cmd = [binary, str(port), "%.1f" % rate, "%g" % seconds, str(conns), paths_file,
                    "%g" % timeout]
        self.seconds, self.timeout = seconds, timeout
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        return self

    def stop(self):
        """End the window now (SIGTERM) and return the result."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.result()

    def result(self):
        try:
            out, _ = self.proc.communicate(timeout=self.seconds + self.timeout + 30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        return parse_load(out)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def load(binary, port, rate, seconds, paths_file, conns=32, timeout=10.0):
    return Load(binary, port, rate, seconds, paths_file, conns, timeout).start().result()


def free_ports(n):
    """n distinct free five-digit loopback ports (the table's JSON keeps its length when an
    upstream moves only if every port has five digits)."""
    out = set()
    while len(out) < n:
        p = harness.free_port()
        if 10000 <= p <= 65535:
            out.add(p)
    return sorted(out)


__all__ = ["cpu_seconds", "CpuWatch", "ScaleNginx", "Pinned", "pin", "lua_heap_kib", "route_cache_counts", "hit_rate_text", "concurrently", "Writer", "LpAdmin", "Load",
           "load", "free_ports", "worker_memory", "BUILT", "BUILT_MS", "PAIRS"]
