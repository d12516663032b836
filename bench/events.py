#!/usr/bin/env python3
"""Figure 12, the event sources at scale (issue 19): a one-item change among 1,000, 10,000
and 100,000 rules, over WebSocket, ZooKeeper and etcd.

For each source and size, one gwsyncd (groups PLUGIN, SELECTOR and RULE of the bench
datasets small, prop and big: 1k, 10k and 100k rules; one bench subscriber, the demo's
state_dir so the snapshot writer runs as it does in production, log level warn) follows a
server holding the dataset, and the mutable rule ("bench-mutable-000000000", gendata.py)
changes N times, one change at a time:

  WebSocket  a stand-in admin (below) answers the agent's handshake, RUNNING_MODE and
             MYSELF, then pushes each change as ShenYu's admin does: RULE/UPDATE with the
             one rule. The clock starts when the frame is handed to the kernel.
  ZooKeeper  Debian's 3.8 (fanout.py's server); the change is a setData of the rule's node
  etcd       Debian's 3.4 (fanout.py's server); the change is a put of the rule's key
             (both: the clock starts at the write; the agent has `settle: 1ms`, the
             least it allows, so the figure is its work, not its wait)

Value: event -> the subscriber's apply() returning (p50, p99 over the measured changes;
each must arrive as exactly one update), and the agent's CPU per change: every thread's
schedstat time over the measured changes / N, split by thread (the source's thread, the
dispatcher, the snapshot writer, ZooKeeper's client threads). Between changes the agent is
left to go idle (no thread ran for 100 ms), so no change pays for the one before. Floors:
for ZooKeeper and etcd the write's own round trip (the server acknowledging it); the
growth rows compare 100k with 1k (target: at most 2x). Everything a 2-core shared machine
measures is indicative; the ratios are what to read.

Every result is a line "ROW|figure|value|floor|ratio|target|verdict" (table.py prints the
table); details go to stderr; logs and configurations stay in BUILD/bench-run/events/.
Processes started here are stopped here, by pid.
"""
import argparse
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "admin"))

import fanout  # noqa: E402  (its ZooKeeper and etcd servers, its process handling)
import websocket as ws  # noqa: E402  (RFC 6455 server side, the emulator's)
from procfs import percentile  # noqa: E402

GROUPS = ["PLUGIN", "SELECTOR", "RULE"]
NS = fanout.NS
ROOT = fanout.ROOT
MUTABLE = "bench-mutable-000000000"
SIZES = {"small": "1,000", "prop": "10,000", "big": "100,000"}


def log(msg):
    print("events: " + msg, file=sys.stderr, flush=True)


row = fanout.row


def thread_sched(pid):
    """{name/tid: cpu ns} of every live thread (schedstat)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                name = f.read().strip()
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                out["%s/%s" % (name, tid)] = int(f.read().split()[0])
        except OSError:
            continue
    return out


def cpu_by_name(before, after):
    """{thread name: cpu ns} between two thread_sched() readings (threads that ended in
    between are lost: the agent starts none per change)."""
    per = {}
    for key, ns in after.items():
        name = key.split("/")[0]
        per[name] = per.get(name, 0) + ns - before.get(key, 0)
    return per


def wait_idle(pid, quiet=0.1, limit=30.0):
    """Until no thread of pid ran for `quiet` seconds (the snapshot writer done)."""
    deadline = time.monotonic() + limit
    last = sum(thread_sched(pid).values())
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = sum(thread_sched(pid).values())
        if now == last:
            return
        last = now


class Dataset:
    """A bench dataset (gendata.py): each group's compact JSON text, its items, and the
    mutable rule's index and text."""

    def __init__(self, path):
        self.path = path
        self.text = {}
        self.items = {}
        for g in GROUPS:
            with open(os.path.join(path, g + ".json"), "rb") as f:
                self.text[g] = f.read()
            self.items[g] = json.loads(self.text[g])
        self.mutable = next(i for i, r in enumerate(self.items["RULE"]) if r.get("name") == MUTABLE)

    def item_text(self, group, item):
        return json.dumps(item, separators=(",", ":"), ensure_ascii=False)

    def changed_rule(self, k):
        """The mutable rule with its nine digits set to k: (item, JSON text)."""
        item = dict(self.items["RULE"][self.mutable], name="bench-mutable-%09d" % k)
        return item, self.item_text("RULE", item)


# ------------------------------------------------------------------ the servers
class WsAdmin:
    """Just enough of ShenYu's /websocket (PROTOCOL-PUSH.md 1) for the agent: the 101
    handshake, RUNNING_MODE (a 2.7 standalone master) and MYSELF (PLUGIN, SELECTOR and RULE
    as one MYSELF message each, the dataset's bytes as they are), pongs; and push()."""
    key = "websocket"
    label = "WebSocket"

    def __init__(self, procs, tmp, data):
        self.data = data
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(4)
        self.port = self.lsock.getsockname()[1]
        self.pids = []
        self.conn = None
        self.lock = threading.Lock()
        self.stopping = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopping:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._session, args=(c,), daemon=True).start()

    def _send(self, c, text):
        data = ws.frame(ws.OP_TEXT, text.encode("utf-8") if isinstance(text, str) else text)
        with self.lock:
            c.sendall(data)

    def _session(self, c):
        rfile = c.makefile("rb")
        head = b""
        while b"\r\n\r\n" not in head:
            line = rfile.readline()
            if not line:
                return
            head += line
        key = ""
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.strip().lower() == "sec-websocket-key":
                key = value.strip()
        c.sendall(("HTTP/1.1 101 \r\nUpgrade: websocket\r\nConnection: upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n" % ws.accept_key(key)).encode("ascii"))
        reader = ws.Reader(rfile, 1 << 20)
        self.conn = c
        try:
            while True:
                msg = reader.receive()
                if msg[0] == "ping":
                    with self.lock:
                        c.sendall(ws.frame(ws.OP_PONG, msg[1]))
                elif msg[0] == "close":
                    return
                elif msg[0] == "text" and msg[1] == "RUNNING_MODE":
                    self._send(c, '{"masterUrl":"/websocket","isMaster":true,'
                                  '"runningMode":"STANDALONE","eventType":"RUNNING_MODE"}')
                elif msg[0] == "text" and msg[1] == "MYSELF":
                    for g in GROUPS:
                        self._send(c, b'{"groupType":"' + g.encode() +
                                   b'","eventType":"MYSELF","data":' + self.data.text[g] + b"}")
        except (EOFError, OSError, ws.ProtocolError):
            return

    def agent_section(self):
        return ["admin:",
                '  servers: ["ws://127.0.0.1:%d/websocket"]' % self.port,
                "  groups: [%s]" % ", ".join(GROUPS),
                "  max_response: 256MiB"]

    def change(self, k):
        """Push the k-th change; returns (t0 ns, write acknowledged ns)."""
        _, text = self.data.changed_rule(k)
        msg = '{"groupType":"RULE","eventType":"UPDATE","data":[' + text + "]}"
        t0 = time.monotonic_ns()
        self._send(self.conn, msg)
        return t0, None

    def load(self):
        pass

    def close(self):
        self.stopping = True
        self.lsock.close()
        if self.conn:
            try:
                self.conn.close()
            except OSError:
                pass


class KvServer:
    """The dataset written as ShenYu's admin writes it, in batches (a fresh store)."""

    def nodes(self):
        for g in GROUPS:
            for item in self.data.items[g]:
                yield fanout.item_path(g, item), self.data.item_text(g, item)

    def change(self, k):
        item, text = self.data.changed_rule(k)
        t0 = time.monotonic_ns()
        self.write_node(fanout.item_path("RULE", item), text)
        return t0, time.monotonic_ns()


class Etcd(KvServer, fanout.Etcd):
    def __init__(self, procs, tmp, data):
        fanout.Etcd.__init__(self, procs, tmp, {})
        self.data = data

    def load(self):
        batch = []
        for path, text in self.nodes():
            batch.append({"requestPut": {"key": self.b64(path), "value": self.b64(text)}})
            if len(batch) == 128:  # etcd's --max-txn-ops
                self.call("/v3/kv/txn", {"success": batch})
                batch = []
        if batch:
            self.call("/v3/kv/txn", {"success": batch})

    def agent_section(self):
        return [x.replace("settle: 20ms", "settle: 1ms") for x in fanout.Etcd.agent_section(self)]

    def write_node(self, path, text):
        self.put(path, text)


class ZooKeeper(KvServer, fanout.ZooKeeper):
    def __init__(self, procs, tmp, data):
        fanout.ZooKeeper.__init__(self, procs, tmp, {})
        self.data = data

    def load(self):
        parents = set()
        for path, _ in self.nodes():
            parents.add(path.rsplit("/", 1)[0])
        for p in sorted(parents):
            self.zk.ensure_path(p)
        t, size = self.zk.transaction(), 0
        for path, text in self.nodes():
            raw = text.encode("utf-8")
            t.create(path, raw)
            size += len(raw) + len(path) + 64
            if size > 512 * 1024:  # under jute.maxbuffer (1 MiB) per request
                self._commit(t)
                t, size = self.zk.transaction(), 0
        self._commit(t)

    @staticmethod
    def _commit(t):
        for r in t.commit():
            if isinstance(r, Exception):
                raise RuntimeError("ZooKeeper create: %r" % r)

    def agent_section(self):
        return [x.replace("settle: 20ms", "settle: 1ms")
                for x in fanout.ZooKeeper.agent_section(self)]

    def write_node(self, path, text):
        self.zk.set(path, text.encode("utf-8"))


SERVERS = {"websocket": WsAdmin, "zookeeper": ZooKeeper, "etcd": Etcd}


# ------------------------------------------------------------------ one run
def run_one(kind, dataset, args, build, keep):
    """One source and one size: {"lat": [ms], "ack": [ms], "cpu": ms, "per": {thread: ms},
    "bad": n}."""
    data = Dataset(os.path.join(args.data, dataset))
    procs = fanout.Procs()
    tmp = tempfile.mkdtemp(prefix="gwsync-events.")
    server = agent = sock = None
    label = "%s, %s rules" % (SERVERS[kind].label if kind != "websocket" else "WebSocket",
                              SIZES[dataset])
    try:
        t_start = time.monotonic()
        server = SERVERS[kind](procs, tmp, data)
        server.load()
        log("%s: server ready with the dataset in %.1f s" % (label, time.monotonic() - t_start))
        sock_path = os.path.join(tmp, "report.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        sock.settimeout(0.5)
        cfg = os.path.join(tmp, "agent.yaml")
        with open(cfg, "w") as f:
            f.write("\n".join(server.agent_section() + [
                "state_dir: %s" % os.path.join(tmp, "state"),
                "log:", "  level: warn",
                "subscribers:",
                "  - name: bench",
                "    library: %s" % os.path.join(build, "bench", "bench_sub.so"),
                "    config:",
                "      report: %s" % json.dumps(sock_path)]) + "\n")
        shutil.copy(cfg, os.path.join(keep, "%s-%s.yaml" % (kind, dataset)))
        agent_log = os.path.join(keep, "%s-%s.log" % (kind, dataset))
        if os.path.exists(agent_log):
            os.unlink(agent_log)
        agent = procs.spawn([os.path.join(build, "gwsyncd"), "-c", cfg], agent_log)
        # start-up: every group applied once
        seen, deadline = set(), time.monotonic() + args.start_timeout
        while len(seen) < len(GROUPS):
            if time.monotonic() > deadline or agent.poll() is not None:
                raise RuntimeError("the agent delivered %s after %.0f s (exit %s)" % (
                    sorted(seen), args.start_timeout, agent.poll()))
            try:
                msg = sock.recv(512).decode().split()
            except socket.timeout:
                continue
            if len(msg) == 9 and msg[0] == "A":
                seen.add(msg[2])
        log("%s: agent synced in %.1f s" % (label, time.monotonic() - t_start))
        wait_idle(agent.pid, limit=60)
        lat, ack, bad = [], [], 0
        s0 = None
        for k in range(1, args.warmup + args.changes + 1):
            if k == args.warmup + 1:
                s0 = thread_sched(agent.pid)
            t0, t1 = server.change(k)
            got, deadline = None, time.monotonic() + args.change_timeout
            while got is None and time.monotonic() < deadline:
                try:
                    msg = sock.recv(512).decode().split()
                except socket.timeout:
                    continue
                if len(msg) == 9 and msg[0] == "A" and msg[2] == "RULE" and int(msg[4]) >= t0:
                    got = int(msg[4])
                    bad += (int(msg[6]), int(msg[7]), int(msg[8])) != (0, 1, 0)
            if got is None:
                raise RuntimeError("change %d not applied within %.0f s" % (
                    k, args.change_timeout))
            if k > args.warmup:
                lat.append((got - t0) / 1e6)
                if t1 is not None:
                    ack.append((t1 - t0) / 1e6)
            wait_idle(agent.pid)
        per = cpu_by_name(s0, thread_sched(agent.pid))
        n = len(lat)
        per = {name: ns / n / 1e6 for name, ns in per.items()}
        return {"lat": sorted(lat), "ack": sorted(ack), "cpu": sum(per.values()), "per": per,
                "bad": bad, "n": n}
    finally:
        if agent is not None:
            procs.stop([agent])
        if server is not None:
            try:
                server.close()
            except Exception:  # a client of a dead server
                pass
        if sock is not None:
            sock.close()
        procs.stop_all()
        for name in ("etcd.log", "zookeeper.log"):
            if os.path.exists(os.path.join(tmp, name)):
                shutil.copy(os.path.join(tmp, name), os.path.join(keep, "%s-%s-%s" % (
                    kind, dataset, name)))
        shutil.rmtree(tmp, ignore_errors=True)


def report(kind, results, args):
    label = SERVERS[kind].label
    for dataset in args.sizes:
        r = results.get(dataset)
        if not r:
            continue
        what = "%s, one rule changed among %s" % (label, SIZES[dataset])
        p50, p99 = percentile(r["lat"], 50), percentile(r["lat"], 99)
        floor = "-" if not r["ack"] else "write acked %.2f ms" % percentile(r["ack"], 50)
        ratio = p50 / percentile(r["ack"], 50) if r["ack"] else None
        row("12. %s: event -> apply() p50 / p99 (%d changes)" % (what, r["n"]),
            "%.2f / %.2f ms" % (p50, p99), floor, ratio)
        split = ", ".join("%s %.2f" % (k, v) for k, v in
                          sorted(r["per"].items(), key=lambda x: -x[1]) if v >= 0.005)
        row("12. %s: agent CPU per change" % what, "%.2f ms (%s)" % (r["cpu"], split), "-", None)
        row("12. %s: every change arrived as 1 update" % what,
            "%d of %d" % (r["n"] - r["bad"], r["n"]), "-", None, "all",
            "met" if r["bad"] == 0 else "NOT met")
    lo, hi = results.get(args.sizes[0]), results.get(args.sizes[-1])
    if not lo or not hi or len(args.sizes) < 2:
        return
    span = "%s vs %s rules" % (SIZES[args.sizes[-1]], SIZES[args.sizes[0]])
    a, b = percentile(hi["lat"], 50), percentile(lo["lat"], 50)
    row("12. %s growth, event -> apply() p50, %s" % (label, span), "%.2f ms" % a,
        "%.2f ms" % b, a / b, "<= 2x", "met" if a <= 2 * b else "NOT met")
    a, b = hi["cpu"], lo["cpu"]
    row("12. %s growth, agent CPU per change, %s" % (label, span), "%.2f ms" % a,
        "%.2f ms" % b, a / b if b else None, "<= 2x", "met" if a <= 2 * b else "NOT met")
    a = hi["cpu"] - hi["per"].get("snapshot", 0)
    b = lo["cpu"] - lo["per"].get("snapshot", 0)
    row("12. %s growth, agent CPU per change without the snapshot writer, %s" % (label, span),
        "%.2f ms" % a, "%.2f ms" % b, a / b if b else None, "<= 2x",
        "met" if a <= 2 * b else "NOT met")


def event_args(start_timeout):
    """The options of a figure-12 run for one source (bench/nacos.py, polaris.py)."""
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__.splitlines()[0])
    ap.add_argument("build", help="the build directory (gwsyncd, bench/bench_sub.so)")
    ap.add_argument("--data", help="the datasets (default BUILD/bench-data)")
    ap.add_argument("--sizes", default="small,prop,big")
    ap.add_argument("--changes", type=int, default=int(os.environ.get("BENCH_EVENT_CHANGES", 30)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--start-timeout", type=float, default=start_timeout)
    ap.add_argument("--change-timeout", type=float, default=30.0)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    args.data = os.path.abspath(args.data or os.path.join(args.build, "bench-data"))
    args.sizes = [s for s in args.sizes.split(",") if s]
    return args


def run_against_floor(kind, server_cls, label, verb, args):
    """Figure 12 for a source whose server class measures its own GET floor (`last.floor`):
    each size in turn (one failure does not hide the others), then the rows against the
    floor and report()'s. 0, or 1 if a size failed."""
    SERVERS[kind] = server_cls
    keep = os.path.join(args.build, "bench-run", kind)
    os.makedirs(keep, exist_ok=True)
    results, floors, ok = {}, {}, True
    for dataset in args.sizes:
        try:
            results[dataset] = r = run_one(kind, dataset, args, args.build, keep)
            floors[dataset] = server_cls.last.floor
            log("%s %s: p50 %.2f ms (GET floor %.2f ms), CPU %.2f ms per change (%s)"
                % (kind, dataset, percentile(r["lat"], 50), floors[dataset], r["cpu"],
                   ", ".join("%s %.2f" % x for x in sorted(r["per"].items(), key=lambda x: -x[1])
                             if x[1] >= 0.005)))
        except Exception as e:  # one failure must not hide the other figures
            log("%s %s failed: %s" % (kind, dataset, e))
            row("12. %s, %s rules" % (label, SIZES[dataset]), "failed: %s" % str(e)[:100], "-",
                None, "-", "NOT met")
            ok = False
    for dataset, floor in floors.items():
        p50 = percentile(results[dataset]["lat"], 50)
        row("12. %s, one rule changed among %s: %s -> apply() p50 against one GET"
            % (label, SIZES[dataset], verb), "%.2f ms" % p50, "GET %.2f ms" % floor,
            p50 / floor if floor else None)
    report(kind, results, args)
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", help="the build directory (gwsyncd, bench/bench_sub.so)")
    ap.add_argument("--data", help="the datasets (default BUILD/bench-data)")
    ap.add_argument("--sources", default="websocket,zookeeper,etcd")
    ap.add_argument("--sizes", default="small,prop,big",
                    help="datasets, smallest first (small 1k, prop 10k, big 100k rules)")
    ap.add_argument("--changes", type=int, default=int(os.environ.get("BENCH_EVENT_CHANGES", 30)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--start-timeout", type=float, default=300.0)
    ap.add_argument("--change-timeout", type=float, default=30.0)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    args.data = os.path.abspath(args.data or os.path.join(build, "bench-data"))
    args.sizes = [s for s in args.sizes.split(",") if s]
    kinds = [k for k in args.sources.split(",") if k]
    bad = [k for k in kinds if k not in SERVERS] + [s for s in args.sizes if s not in SIZES]
    if bad:
        ap.error("unknown source or dataset: %s" % ", ".join(bad))
    keep = os.path.join(build, "bench-run", "events")
    os.makedirs(keep, exist_ok=True)
    ok = True
    for kind in kinds:
        results = {}
        for dataset in args.sizes:
            try:
                results[dataset] = run_one(kind, dataset, args, build, keep)
                r = results[dataset]
                log("%s %s: p50 %.2f ms, CPU %.2f ms per change (%s)" % (
                    kind, dataset, percentile(r["lat"], 50), r["cpu"], ", ".join(
                        "%s %.2f" % x for x in sorted(r["per"].items(), key=lambda x: -x[1])
                        if x[1] >= 0.005)))
            except Exception as e:  # one failure must not hide the other figures
                log("%s %s failed: %s" % (kind, dataset, e))
                row("12. %s, %s rules" % (SERVERS[kind].label, SIZES[dataset]),
                    "failed: %s" % str(e)[:100], "-", None, "-", "NOT met")
                ok = False
        report(kind, results, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
