#!/usr/bin/env python3
"""Figure 9, fan-out: N gwsyncd processes on one machine following one server.

The question it answers is the operator's "when do I move off long-polling": the same N
agents (default 100) follow, in turn, one admin emulator by HTTP long-polling, one etcd
(Debian's 3.4) and one ZooKeeper (Debian's 3.8 on the JVM), all holding the same data
(the emulator's generated PLUGIN, SELECTOR and RULE groups). For each server:

  latency   50 RULE updates, one at a time, written the way ShenYu's admin writes them
            (zk/etcd: one node at /{ns}/shenyu/rule/{plugin}/{selectorId}-{ruleId}, Gson
            text; the emulator: its upsert API). Value: the admin-side write -> the LAST
            agent's apply() (p50, p99). Floor: the write's own round trip (the server
            acknowledging it), measured on the same writes.
  CPU       utime+stime of the server process over the 50 changes, minus an idle window
            of the same length with the same agents connected (the JVM and etcd have
            timers of their own), divided by 50; the agents' CPU the same way, summed.
  memory    private memory of each agent (Private_Clean + Private_Dirty of
            smaps_rollup: what one more agent costs; shared libraries are shared) and the
            server's RSS.

Every agent runs the benchmark subscriber (plugins/bench_sub.c): its apply() sends one
datagram with its CLOCK_MONOTONIC timestamp, which is system-wide, so it is compared with
this script's own monotonic clock. Each agent gets its own report socket: the kernel queues
only net.unix.max_dgram_qlen (10) datagrams per socket, so 100 agents answering one change
at once would lose reports on a shared one.

Agents start staggered (and the first alone, to fail fast when a source is missing), each
with its own state_dir, `log.level: warn` and no status listener. Every process started here
is stopped here, by pid, also on Ctrl-C or SIGTERM, and dies with this script if it is
killed (PR_SET_PDEATHSIG); the temporary directory is removed. Results are
"ROW|figure|value|floor|ratio|target|verdict" lines and one "NOTE|..." line on stdout
(table.py prints them); details on stderr; the raw rounds in BUILD/bench-run/fanout/.
"""
import argparse
import base64
import ctypes
import http.client
import json
import logging
import os
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(SRC, "tests", "admin"))

import dataset  # noqa: E402  (the emulator's own data: the same items everywhere)
import ws_messages  # noqa: E402  (gson(): the text ShenYu's admin writes to zk/etcd)
from procfs import cpu_seconds, mib, percentile, private_kib, status_kib  # noqa: E402

GROUPS = ["PLUGIN", "SELECTOR", "RULE"]
NS = dataset.DEFAULT_NAMESPACE
ROOT = "/%s/shenyu" % NS
PR_SET_PDEATHSIG = 1


def log(msg):
    print("fanout: " + msg, file=sys.stderr, flush=True)


def row(figure, value, floor, ratio, target="-", verdict="-"):
    r = "-" if ratio is None else "%.2fx" % ratio
    print("ROW|%s|%s|%s|%s|%s|%s" % (figure, value, floor, r, target, verdict), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    """In the child before exec: SIGKILL when this script dies, however it dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Procs:
    """Every process this script started; stopped by pid (SIGTERM, then SIGKILL)."""

    def __init__(self):
        self.procs = []

    def spawn(self, argv, log_path, **kw):
        with open(log_path, "ab") as err:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=err,
                                 preexec_fn=_die_with_parent, **kw)
        self.procs.append(p)
        return p

    def stop(self, procs, timeout=10.0):
        """SIGTERM all of them at once, then wait; SIGKILL what is left. Exit codes."""
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        codes = []
        for p in procs:
            try:
                codes.append(p.wait(max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                p.kill()
                codes.append(p.wait())
        self.procs = [p for p in self.procs if p not in procs]
        return codes

    def stop_all(self):
        self.stop(list(reversed(self.procs)), timeout=5.0)


def item_path(group, item):
    """The node ShenYu 2.7's AbstractPathDataChangedListener writes an item to."""
    if group == "PLUGIN":
        return "%s/plugin/%s" % (ROOT, item["name"])
    if group == "SELECTOR":
        return "%s/selector/%s/%s" % (ROOT, item["pluginName"], item["id"])
    return "%s/rule/%s/%s-%s" % (ROOT, item["pluginName"], item["selectorId"], item["id"])


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("%s: not ready after %d s" % (what, timeout))


# ------------------------------------------------------------------ the three servers
class Emulator:
    """The admin emulator (tests/admin/emulator.py), long-polled; writes via /_control/."""
    key = "emulator"
    label = "long-polling (admin emulator)"

    def __init__(self, procs, tmp, sizes):
        argv = [sys.executable, os.path.join(SRC, "tests", "admin", "emulator.py"),
                "--port", "0", "--mode", "shenyu", "--groups", ",".join(GROUPS),
                "--hold", "60"]
        for k, v in sizes.items():
            argv += ["--" + k, str(v)]
        self.proc = procs.spawn(argv, os.path.join(tmp, "emulator.log"),
                                stdout=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline().split()
        if len(first) != 3 or first[0] != "LISTENING":
            raise RuntimeError("the emulator did not start (see emulator.log)")
        self.port = int(first[2])
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.pids = [self.proc.pid]

    def load(self, data):
        pass  # it generated the same data itself

    def agent_section(self):
        return ["admin:",
                '  servers: ["http://127.0.0.1:%d"]' % self.port,
                "  username: admin",
                '  password: "123456"',
                "  groups: [%s]" % ", ".join(GROUPS)]

    def write(self, item):
        body = json.dumps({"group": "RULE", "item": item})
        self.conn.request("POST", "/_control/upsert", body,
                          {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        doc = r.read()
        if r.status != 200:
            raise RuntimeError("emulator upsert: HTTP %d %s" % (r.status, doc[:200]))

    def close(self):
        self.conn.close()


class Etcd:
    """One etcd member (/usr/bin/etcd) on free ports; writes through its v3 JSON gateway."""
    key = "etcd"
    label = "etcd"
    binary = "/usr/bin/etcd"

    def __init__(self, procs, tmp, sizes):
        if not os.access(self.binary, os.X_OK):
            raise RuntimeError("%s missing (Debian's etcd-server)" % self.binary)
        self.port, peer = free_port(), free_port()
        client, peer_url = "http://127.0.0.1:%d" % self.port, "http://127.0.0.1:%d" % peer
        self.proc = procs.spawn([self.binary, "--name", "fanout",
                                 "--data-dir", os.path.join(tmp, "etcd-data"),
                                 "--listen-client-urls", client,
                                 "--advertise-client-urls", client,
                                 "--listen-peer-urls", peer_url,
                                 "--initial-advertise-peer-urls", peer_url,
                                 "--initial-cluster", "fanout=" + peer_url,
                                 "--logger", "zap", "--log-level", "warn"],
                                os.path.join(tmp, "etcd.log"), stdout=subprocess.DEVNULL)
        self.pids = [self.proc.pid]
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        wait_for(lambda: self.call("/v3/kv/range", {"key": self.b64("/")}) is not None, 30,
                 "etcd")

    @staticmethod
    def b64(text):
        return base64.b64encode(text.encode()).decode()

    def call(self, path, doc):
        try:
            self.conn.request("POST", path, json.dumps(doc),
                              {"Content-Type": "application/json"})
            r = self.conn.getresponse()
            body = r.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # a fresh connection next time
            raise
        if r.status != 200:
            raise RuntimeError("etcd %s: HTTP %d %s" % (path, r.status, body[:200]))
        return json.loads(body)

    def put(self, key, value):
        self.call("/v3/kv/put", {"key": self.b64(key), "value": self.b64(value)})

    def load(self, data):
        for group in GROUPS:
            for item in data[group]:
                self.put(item_path(group, item), ws_messages.gson(item))

    def agent_section(self):
        return ["etcd:",
                '  endpoints: ["http://127.0.0.1:%d"]' % self.port,
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(GROUPS)]

    def write(self, item):
        self.put(item_path("RULE", item), ws_messages.gson(item))

    def close(self):
        self.conn.close()


class ZooKeeper:
    """One standalone ZooKeeper (Debian's jar on the JVM) on a free port; writes by kazoo."""
    key = "zookeeper"
    label = "ZooKeeper"
    jar = "/usr/share/java/zookeeper.jar"

    def __init__(self, procs, tmp, sizes):
        try:
            from kazoo.client import KazooClient
        except ImportError:
            raise RuntimeError("python3-kazoo missing (run with Debian's /usr/bin/python3)")
        if not os.path.exists(self.jar) or not shutil.which("java"):
            raise RuntimeError("%s or java missing (Debian's zookeeper, "
                               "default-jre-headless)" % self.jar)
        self.port = free_port()
        conf = os.path.join(tmp, "zoo.cfg")
        with open(conf, "w") as f:
            # maxClientCnxns=0: the default (60 per address) would refuse agents 61 to N,
            # all of them on 127.0.0.1
            f.write("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n"
                    % (os.path.join(tmp, "zk-data"), self.port))
        self.proc = procs.spawn(["java", "-Xmx512m", "-Dzookeeper.root.logger=WARN,CONSOLE",
                                 "-Dzookeeper.log.dir=" + tmp,
                                 "-cp", "/etc/zookeeper/conf:" + self.jar,
                                 "org.apache.zookeeper.server.ZooKeeperServerMain", conf],
                                os.path.join(tmp, "zookeeper.log"), stdout=subprocess.DEVNULL)
        self.pids = [self.proc.pid]
        # kazoo warns of each refused try while the server is still coming up
        logging.getLogger("kazoo").setLevel(logging.ERROR)
        self.zk = KazooClient("127.0.0.1:%d" % self.port, timeout=10)
        wait_for(lambda: self.proc.poll() is None and self.ruok(), 60, "ZooKeeper")
        self.zk.start(timeout=20)

    def ruok(self):
        with socket.create_connection(("127.0.0.1", self.port), 1) as s:
            s.sendall(b"ruok")
            return s.recv(8) == b"imok"

    def load(self, data):
        # Curator's creatingParentsIfNeeded(): parents exist with empty data, as kazoo's
        # makepath creates them
        for group in GROUPS:
            for item in data[group]:
                self.zk.create(item_path(group, item), ws_messages.gson(item).encode(),
                               makepath=True)

    def agent_section(self):
        return ["zookeeper:",
                '  servers: ["127.0.0.1:%d"]' % self.port,
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(GROUPS)]

    def write(self, item):
        self.zk.set(item_path("RULE", item), ws_messages.gson(item).encode())

    def close(self):
        self.zk.stop()
        self.zk.close()


SERVERS = {"emulator": Emulator, "etcd": Etcd, "zookeeper": ZooKeeper}


# ------------------------------------------------------------------ the agents
class Reports:
    """One datagram socket per agent; bench_sub sends
    "A INSTANCE GROUP LASTMODIFYTIME T_NS N_ITEMS N_ADDED N_UPDATED N_REMOVED"."""

    def __init__(self, directory, n):
        self.sel = selectors.DefaultSelector()
        self.paths, self.socks = [], []
        for i in range(n):
            path = os.path.join(directory, "%03d.sock" % i)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.bind(path)
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, i)
            self.paths.append(path)
            self.socks.append(s)

    def poll(self, timeout):
        """[(agent, group, t_ns, added, updated, removed)] that arrived within timeout."""
        out = []
        for key, _ in self.sel.select(timeout):
            while True:
                try:
                    msg = key.fileobj.recv(512).decode().split()
                except BlockingIOError:
                    break
                if len(msg) == 9 and msg[0] == "A":
                    out.append((key.data, msg[2], int(msg[4]), int(msg[6]), int(msg[7]),
                                int(msg[8])))
        return out

    def close(self):
        self.sel.close()
        for s in self.socks:
            s.close()


class Fleet:
    def __init__(self, build, procs, tmp, server, n, report_sockets):
        self.build, self.procs, self.tmp, self.server, self.n = build, procs, tmp, server, n
        self.reports = report_sockets
        self.agents = []
        self.gwsyncd = os.path.join(build, "gwsyncd")
        self.sub = os.path.join(build, "bench", "bench_sub.so")

    def config(self, i):
        state = os.path.join(self.tmp, "agent%03d" % i)
        lines = self.server.agent_section() + [
            "state_dir: %s" % state,
            "log:",
            "  level: warn",
            "subscribers:",
            "  - name: bench",
            "    library: %s" % self.sub,
            "    config:",
            "      report: %s" % json.dumps(self.reports.paths[i])]
        path = os.path.join(self.tmp, "agent%03d.yaml" % i)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def start(self, gap, timeout):
        """Start agent 0 alone (a missing source fails here, fast), then the others `gap`
        apart; return once every agent delivered every group."""
        started = time.monotonic()
        seen = [set() for _ in range(self.n)]

        def collect(wait):
            for agent, group, *_ in self.reports.poll(wait):
                seen[agent].add(group)

        for i in range(self.n):
            cfg = self.config(i)
            self.agents.append(self.procs.spawn([self.gwsyncd, "-c", cfg],
                                                os.path.join(self.tmp, "agent%03d.log" % i)))
            if i == 0:  # alone on the server: seconds, unless its source is missing
                deadline = time.monotonic() + min(timeout, 20.0)
                while len(seen[0]) < len(GROUPS) and time.monotonic() < deadline:
                    if self.agents[0].poll() is not None:
                        break
                    collect(0.05)
                if len(seen[0]) < len(GROUPS):
                    raise RuntimeError("the first agent delivered %s in %d s (exit %s): %s" % (
                        sorted(seen[0]) or "nothing", min(timeout, 20.0), self.agents[0].poll(),
                        self.log_tail(0)))
            else:
                until = time.monotonic() + gap  # a report ends a poll early: wait it out
                while time.monotonic() < until:
                    collect(max(0.0, until - time.monotonic()))
        deadline = time.monotonic() + timeout
        while True:
            short = [i for i in range(self.n) if len(seen[i]) < len(GROUPS)]
            if not short:
                return time.monotonic() - started
            dead = [i for i in short if self.agents[i].poll() is not None]
            if dead:
                raise RuntimeError("agent %d exited with %s: %s" % (
                    dead[0], self.agents[dead[0]].poll(), self.log_tail(dead[0])))
            if time.monotonic() >= deadline:
                raise RuntimeError("%d of %d agents had not delivered every group after "
                                   "%d s" % (len(short), self.n, timeout))
            collect(0.1)

    def log_tail(self, i):
        try:
            with open(os.path.join(self.tmp, "agent%03d.log" % i), errors="replace") as f:
                return " / ".join(f.read().strip().splitlines()[-3:])[:300]
        except OSError:
            return ""

    def cpu(self):
        return sum(cpu_seconds(p.pid) for p in self.agents)

    def stop(self):
        codes = self.procs.stop(self.agents)
        self.agents = []
        return codes


# ------------------------------------------------------------------ one server's figure
def changes_round(server, reports, n, rule, count, first, timeout, gap, raw):
    """`count` RULE updates one at a time; each waits for every agent's apply().
    Returns [(last agent's latency, write round trip, median agent's latency)] in ns, and
    the counts of missing and extra deliveries and of those that were not one update."""
    results, missing, extra, bad = [], 0, 0, 0
    for k in range(first, first + count):
        item = dict(rule, name="%s-fanout-%d" % (rule["name"], k))
        for _, group, *_ in reports.poll(0):  # anything late from the previous change
            extra += group == "RULE"
        t0 = time.monotonic_ns()
        server.write(item)
        t1 = time.monotonic_ns()
        got = {}
        deadline = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < deadline:
            for agent, group, t_ns, added, updated, removed in reports.poll(0.2):
                if group != "RULE" or t_ns < t0:
                    continue
                if agent in got:
                    extra += 1
                    continue
                got[agent] = t_ns
                bad += (added, updated, removed) != (0, 1, 0)
        missing += n - len(got)
        if not got:
            raise RuntimeError("change %d reached no agent in %d s" % (k, timeout))
        last = max(got.values())
        median = sorted(got.values())[(len(got) - 1) // 2]
        results.append((last - t0, t1 - t0, median - t0))
        if raw is not None:
            raw.write("%d %d %d %d %d\n" % (k, last - t0, t1 - t0, median - t0, len(got)))
        time.sleep(gap)  # the agents go idle (snapshot written, poll re-armed) in between
    return results, missing, extra, bad


def one_agent(kind, args, build, procs, tmp, server, rule):
    """The reference: the same changes reaching a single agent (p50 of the last apply()
    and of the write's round trip, in ms): what fan-out adds is the rest."""
    own = os.path.join(tmp, "one")
    os.makedirs(os.path.join(own, "s"))
    reports = Reports(os.path.join(own, "s"), 1)
    fleet = Fleet(build, procs, own, server, 1, reports)
    try:
        fleet.start(args.stagger, args.start_timeout)
        time.sleep(0.5)
        reports.poll(0)
        rounds, missing, extra, bad = changes_round(
            server, reports, 1, rule, args.warmup + args.reference, 1000000,
            args.change_timeout, args.gap, None)
        rounds = rounds[args.warmup:]
        if missing or extra or bad:
            log("%s: one agent: %d missing, %d extra, %d not 1 update" % (
                kind, missing, extra, bad))
        return (statistics.median(r[0] for r in rounds) / 1e6,
                statistics.median(r[1] for r in rounds) / 1e6, len(rounds))
    finally:
        fleet.stop()
        reports.close()


def run_server(kind, args, build, procs, data, sizes, summary):
    tmp = tempfile.mkdtemp(prefix="gwsync-fanout.")
    keep = os.path.join(build, "bench-run", "fanout")
    os.makedirs(keep, exist_ok=True)
    cls = SERVERS[kind]
    n = args.agents
    server = fleet = reports = None
    label = "%s, %d agents" % (cls.label, n)
    try:
        t_begin = time.monotonic()
        server = cls(procs, tmp, sizes)
        server.load(data)
        rule = data["RULE"][0]
        if args.reference:
            one = one_agent(kind, args, build, procs, tmp, server, rule)
        os.makedirs(os.path.join(tmp, "s"))
        reports = Reports(os.path.join(tmp, "s"), n)
        fleet = Fleet(build, procs, tmp, server, n, reports)
        took = fleet.start(args.stagger, args.start_timeout)
        log("%s: %d agents started and delivered every group in %.1f s" % (kind, n, took))
        time.sleep(1.0)  # start-up work (snapshots, re-armed watches and polls) settles
        reports.poll(0)
        changes_round(server, reports, n, rule, args.warmup, 0, args.change_timeout, args.gap,
                      None)
        with open(os.path.join(keep, kind + "-rounds.txt"), "w") as raw:
            raw.write("# change last_agent_ns write_ack_ns median_agent_ns agents\n")
            s0 = sum(cpu_seconds(p) for p in server.pids)
            a0, w0 = fleet.cpu(), time.monotonic()
            rounds, missing, extra, bad = changes_round(
                server, reports, n, rule, args.changes, args.warmup, args.change_timeout,
                args.gap, raw)
            s1 = sum(cpu_seconds(p) for p in server.pids)
            a1, window = fleet.cpu(), time.monotonic() - w0
        log("%s: %d changes in %.1f s; idle window of the same length" % (
            kind, len(rounds), window))
        time.sleep(window)
        s2 = sum(cpu_seconds(p) for p in server.pids)
        a2 = fleet.cpu()
        extra += sum(g == "RULE" for _, g, *_ in reports.poll(0))
        privs = sorted(private_kib(p.pid) for p in fleet.agents)
        server_rss = sum(status_kib(p, "VmRSS") for p in server.pids)
        codes = fleet.stop()
        if any(codes):
            log("%s: agent exit codes %s" % (kind, sorted(set(codes))))

        lat = sorted(r[0] / 1e6 for r in rounds)
        ack = sorted(r[1] / 1e6 for r in rounds)
        mid = sorted(r[2] / 1e6 for r in rounds)
        m = len(rounds)
        for name, p in (("p50", 50), ("p99", 99)):
            a, f = percentile(lat, p), percentile(ack, p)
            row("9. fan-out %s, write to last apply(), %s (%d changes)" % (name, label, m),
                "%.1f ms" % a, "write acked %.1f ms" % f, a / f if f > 0 else None)
        # the median agent: how much of the last one's delay is waiting for a core
        a, f = percentile(mid, 50), percentile(ack, 50)
        row("9. fan-out p50, write to the median agent's apply(), %s" % label, "%.1f ms" % a,
            "write acked %.1f ms" % f, a / f if f > 0 else None)
        if args.reference:
            row("9. reference: p50, write to apply(), %s, 1 agent (%d changes)" % (
                cls.label, one[2]), "%.1f ms" % one[0], "write acked %.1f ms" % one[1],
                one[0] / one[1] if one[1] > 0 else None)
        total = m * n
        row("9. fan-out, each agent applied each change once, %s" % cls.label,
            "%d of %d" % (total - missing, total) + (
                "" if not (extra or bad) else " (%d extra, %d not 1 update)" % (extra, bad)),
            "-", None, "all", "met" if not (missing or extra or bad) else "NOT met")
        busy, idle = s1 - s0, s2 - s1
        per = (busy - idle) / m * 1000
        row("9. server CPU per change, %s" % label,
            "%.1f ms (%.2f ms per agent)" % (per, per / n),
            "idle %.2f s per %.0f s window" % (idle, window), None)
        agents_per = ((a1 - a0) - (a2 - a1)) / m * 1000
        row("9. agents' CPU per change, all %d, %s" % (n, cls.label), "%.1f ms" % agents_per,
            "-", None)
        row("9. agent private memory (smaps_rollup), %s" % label,
            "median %s, max %s" % (mib(statistics.median(privs)), mib(privs[-1])), "-", None)
        row("9. server RSS, %s" % label, mib(server_rss), "-", None)
        summary[kind] = {"p50": percentile(lat, 50), "p99": percentile(lat, 99),
                         "cpu": per, "n": n}
        log("%s: done in %.0f s" % (kind, time.monotonic() - t_begin))
    except Exception as e:  # one server failing must not hide the others
        log("%s failed: %s" % (kind, e))
        row("9. fan-out, %s" % label, "failed: %s" % str(e)[:100], "-", None, "-", "NOT met")
        for i in range(n if fleet else 0):
            if fleet and i < len(fleet.agents) and os.path.getsize(
                    os.path.join(tmp, "agent%03d.log" % i)):
                shutil.copy(os.path.join(tmp, "agent%03d.log" % i),
                            os.path.join(keep, "%s-agent%03d.log" % (kind, i)))
                break  # one agent's log says what they all say
        return False
    finally:
        if fleet:
            fleet.stop()
        if server:
            try:
                server.close()
            except Exception:  # closing a client of a dead server
                pass
        if reports:
            reports.close()
        procs.stop_all()
        for name in ("emulator.log", "etcd.log", "zookeeper.log"):
            if os.path.exists(os.path.join(tmp, name)):
                shutil.copy(os.path.join(tmp, name), os.path.join(keep, name))
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def note(summary, group_bytes):
    """The one-line reading of the figure: when to move off long-polling."""
    lp = summary.get("emulator")
    if not lp:
        return
    per = {k: v["cpu"] / v["n"] for k, v in summary.items()}  # server ms, per agent-change
    watch = ", ".join("%s %.2f ms" % (name, per[k]) for k, name in (
        ("etcd", "etcd"), ("zookeeper", "ZooKeeper")) if k in per)
    budget = 1000.0 / per["emulator"] if per["emulator"] > 0 else float("inf")
    print("NOTE|fan-out: per agent and change the server spent %.2f ms of CPU by long-polling "
          "and sent each agent the whole group (%.0f KB of RULE here, %.1f MB per change for "
          "%d agents)%s. Move off long-polling when agents x changes per second x %.2f ms "
          "nears the CPU the admin can spare (one core: about %.0f agent-changes per second) "
          "or agents x group size per change nears its bandwidth." % (
              per["emulator"], group_bytes / 1000.0, group_bytes * lp["n"] / 1e6, lp["n"],
              "; a watch source: %s, and one item per agent" % watch if watch else "",
              per["emulator"], budget), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", help="the build directory (gwsyncd, bench/bench_sub.so)")
    ap.add_argument("--agents", type=int, default=int(os.environ.get("GWSYNC_FANOUT", 100)))
    ap.add_argument("--changes", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reference", type=int, default=20,
                    help="changes to one agent alone first, for reference (0: none)")
    ap.add_argument("--servers", default="emulator,etcd,zookeeper",
                    help="comma-separated subset of emulator, etcd, zookeeper")
    ap.add_argument("--rules", type=int, default=dataset.DEFAULT_SIZES["rules"],
                    help="rules in the data (selectors and plugins: the emulator's defaults)")
    ap.add_argument("--stagger", type=float, default=0.02, help="seconds between agent starts")
    ap.add_argument("--gap", type=float, default=0.1, help="seconds between changes")
    ap.add_argument("--start-timeout", type=float, default=60.0)
    ap.add_argument("--change-timeout", type=float, default=10.0)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    kinds = [k for k in args.servers.split(",") if k]
    bad = [k for k in kinds if k not in SERVERS]
    if bad or args.agents < 1:
        ap.error("unknown server(s) %s" % ", ".join(bad) if bad else "--agents must be >= 1")
    for need in (os.path.join(build, "gwsyncd"), os.path.join(build, "bench", "bench_sub.so")):
        if not os.path.exists(need):
            ap.error("%s missing: make and bench/build.sh first" % need)

    def stop(signum, frame):
        raise KeyboardInterrupt  # unwinds through every finally: processes and temp dirs

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # also when started from a shell that ignores it
    sizes = {"rules": args.rules}
    data = dataset.generate(1, "shenyu", NS, GROUPS, **sizes)
    procs = Procs()
    summary = {}
    ok = True
    t0 = time.monotonic()
    try:
        for kind in kinds:
            ok = run_server(kind, args, build, procs, data, sizes, summary) and ok
    except KeyboardInterrupt:
        log("interrupted: stopping everything")
        ok = False
    finally:
        procs.stop_all()
    note(summary, len(dataset.compact(data["RULE"]).encode()))
    log("fan-out took %.0f s" % (time.monotonic() - t0))
    return 0 if ok else 1


def main_for(kind, server_cls, argv):
    """BENCH.py BUILD --fanout [this file's options]: figure 9 for one more server type,
    `server_cls` (bench/nacos.py, apollo.py, polaris.py), run by this file's main()."""
    SERVERS[kind] = server_cls
    sys.argv = [sys.argv[0]] + [a for a in argv if a != "--fanout"]
    if not any(a.startswith("--servers") for a in sys.argv):
        sys.argv += ["--servers", kind]
    return main()


if __name__ == "__main__":
    sys.exit(main())
