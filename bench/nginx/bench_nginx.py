#!/usr/bin/env python3
"""Benchmark: nginx requests/s with the gwsync router against nginx proxying a fixed
upstream (issue 10, section 4; target >= 0.8x).

    python3 bench/nginx/bench_nginx.py BUILD_DIR [--seconds 4] [--rounds 2] [--selectors 1,50]

One nginx, configured from contrib/nginx/nginx.conf (the shipped example, one worker so
that nginx and wrk each get one of the 2 cores the figures are taken on), serves three
ports: the router (the example's location, routing from the LMDB cache), a "direct"
location proxying to a fixed upstream with the same proxy settings and keep-alive pool,
and that upstream itself (`return 200`, served by the same nginx, so an upstream written
in Python never is the bottleneck of either side). The cache is written by the real
gwsyncd (BUILD_DIR/gwsyncd with the `lmdb` plugin) from the admin emulator, holding
--selectors divide selectors (uri `match` + one header condition each, AND) with
--rules-per rules each (2 conditions) plus a catch-all; the benchmarked request matches a
selector in the middle of the list and one of its rules, so the router evaluates every
selector as ShenYu does. One figure per selector count (default 1 and 50: the router's
fixed cost per request, then with a table to search), republished on the same stack.

wrk (Debian's) runs -t1 -c32 for --seconds per measurement after a one-second warm-up,
alternating direct and routed --rounds times; the median of each is reported (each round
also logs the nginx worker's CPU time per request, steadier on a shared machine). Output:
"ROW|figure|value|floor|ratio|target|verdict" lines for bench/run.sh's table (details on
stderr). Exit status 0 when both could be measured.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FIGURE = "8"


def log(msg):
    print("bench-nginx: " + msg, file=sys.stderr, flush=True)


def row(figure, value, floor, ratio, target, verdict):
    r = "-" if ratio is None else "%.2fx" % ratio
    print("ROW|%s|%s|%s|%s|%s|%s" % (figure, value, floor, r, target, verdict), flush=True)


def setup_env(build):
    """gateway.py reads the daemon's location from the environment, as `make check` sets it."""
    os.environ["GWSYNCD"] = os.path.join(build, "gwsyncd")
    os.environ["GWSYNC_SRCDIR"] = SRC
    os.environ["GWSYNC_BUILDDIR"] = build
    os.environ["GWSYNC_PLUGIN_PATH"] = os.path.join(build, "plugins", "lmdb", ".libs")
    sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))


def dataset(upstream_url, selectors, rules_per):
    from items import cond, discover, plugin, rule, selector
    sels, rules, discs = [], [], []
    for i in range(selectors):
        sid = "bench-s-%03d" % i
        sels.append(selector(sid, [cond("uri", "match", "/svc%d/**" % i),
                                   cond("header", "=", "yes", "X-Bench")], sort=i + 1))
        discs.append(discover(sid, [upstream_url]))
        for k in range(rules_per):
            rules.append(rule("bench-r-%03d-%d" % (i, k), sid,
                              [cond("uri", "match", "/svc%d/v%d/**" % (i, k)),
                               cond("req_method", "=", "GET")], sort=k + 1))
        # and one catch-all rule per selector
        rules.append(rule("bench-r-%03d-any" % i, sid, [], sort=99))
    return {"PLUGIN": [plugin(True)], "SELECTOR": sels, "RULE": rules,
            "DISCOVER_UPSTREAM": discs}


def edit_conf(direct_port, upstream_port):
    """The example plus the direct location and the upstream, one worker."""
    extra = """
    upstream bench_fixed {
        server 127.0.0.1:%(up)d;
        keepalive 64;
        keepalive_requests 10000;
    }
    server {
        listen 127.0.0.1:%(direct)d;
        location / {
            proxy_pass http://bench_fixed;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host 127.0.0.1:%(up)d;
            proxy_next_upstream error timeout;
        }
    }
    server {
        listen 127.0.0.1:%(up)d;
        keepalive_requests 1000000;
        location / {
            return 200 "bench-upstream\\n";
        }
    }
""" % {"up": upstream_port, "direct": direct_port}

    def edit(text):
        text, n = re.subn(r"^worker_processes\s+\S+;", "worker_processes 1;", text, flags=re.M)
        if n != 1:
            raise SystemExit("contrib/nginx/nginx.conf: no worker_processes line to set")
        at = text.rindex("}")            # the end of the http block
        return text[:at] + extra + text[at:]
    return edit


def worker_cpu(master_pid):
    """CPU seconds (user + system) the nginx workers have used so far, or None. Per request,
    it is a steadier figure than requests/s on a machine shared with other work."""
    try:
        with open("/proc/%d/task/%d/children" % (master_pid, master_pid)) as f:
            pids = [int(x) for x in f.read().split()]
        total = 0
        for pid in pids:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])      # utime, stime (clock ticks)
        return total / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def wrk(url, seconds, headers=()):
    cmd = ["wrk", "-t1", "-c32", "-d%ds" % seconds, "--timeout", "5s"]
    for h in headers:
        cmd += ["-H", h]
    out = subprocess.run(cmd + [url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=seconds + 30).stdout
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    n = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errs = re.search(r"Socket errors:.*", out)
    if not m:
        raise RuntimeError("wrk printed no rate:\n" + out)
    if bad or errs:
        raise RuntimeError("wrk saw failures (%s %s):\n%s" % (
            bad.group(0) if bad else "", errs.group(0) if errs else "", out))
    return float(m.group(1)), float(n.group(1)) if n else None


def timed(master_pid, url, seconds, headers):
    """wrk's requests/s and the workers' CPU microseconds per request (or None)."""
    before = worker_cpu(master_pid)
    rate, count = wrk(url, seconds, headers)
    after = worker_cpu(master_pid)
    if before is None or after is None or not count:
        return rate, None
    return rate, (after - before) * 1e6 / count


GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM")


def measure(routed_port, direct_port, selectors, rules, args, master_pid):
    from loadgen import Client
    path = "/svc%d/v1/orders" % (selectors // 2)
    header = "X-Bench: yes"
    for port in (routed_port, direct_port):
        c = Client(port)
        a = c.get(path, [("X-Bench", "yes")])
        c.close()
        if a.status != 200 or a.body != b"bench-upstream\n":
            raise RuntimeError("port %d does not reach the upstream: %r" % (port, a))
    routed_url = "http://127.0.0.1:%d%s" % (routed_port, path)
    direct_url = "http://127.0.0.1:%d%s" % (direct_port, path)
    log("%d selectors, %d rules; wrk -t1 -c32, %d s x %d rounds each, nginx 1 worker"
        % (selectors, rules, args.seconds, args.rounds))
    wrk(direct_url, 1, [header])
    wrk(routed_url, 1, [header])
    direct, routed = [], []
    for r in range(args.rounds):
        d, dcpu = timed(master_pid, direct_url, args.seconds, [header])
        rt, rcpu = timed(master_pid, routed_url, args.seconds, [header])
        direct.append(d)
        routed.append(rt)
        cpu = ""
        if dcpu and rcpu:
            cpu = "; nginx CPU per request: direct %.1f us, routed %.1f us (%.2fx)" % (
                dcpu, rcpu, dcpu / rcpu)
        log("round %d: direct %.0f/s, routed %.0f/s (%.2fx)%s" % (r + 1, d, rt, rt / d, cpu))
    d, rt = statistics.median(direct), statistics.median(routed)
    ratio = rt / d
    row(FIGURE + ". nginx requests/s, router (selectors: %d, rules: %d)" % (selectors, rules),
        "%.0f/s" % rt, "fixed upstream %.0f/s" % d, ratio, ">= 0.8x",
        "met" if ratio >= 0.8 else "NOT met")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--selectors", default="1,50",
                    help="comma-separated selector counts, one figure each (default 1,50)")
    ap.add_argument("--rules-per", type=int, default=3)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if shutil.which("wrk") is None:
        log("wrk is not installed (Debian: wrk)")
        row(FIGURE + ". nginx requests/s", "wrk missing", "-", None, ">= 0.8x", "not run")
        return 1
    setup_env(build)
    import unittest
    try:
        import gateway
        stack = gateway.Stack()
    except unittest.SkipTest as e:
        log("cannot run: %s" % e)
        row(FIGURE + ". nginx requests/s", "not run: %s" % e, "-", None, ">= 0.8x", "not run")
        return 1
    import harness
    try:
        direct_port, upstream_port = harness.free_port(), harness.free_port()
        up_url = "127.0.0.1:%d" % upstream_port
        counts = [int(x) for x in args.selectors.split(",")]
        stack.start_admin("shenyu", dataset(up_url, counts[0], args.rules_per), hold=30)
        stack.start_daemon(log_level="warn")
        stack.wait_synced(GROUPS, timeout=60)
        nginx = stack.start_nginx("shenyu", debug_headers=False, name="nginx-bench",
                                  edit=edit_conf(direct_port, upstream_port))
        for n in counts:
            data = dataset(up_url, n, args.rules_per)
            versions = [stack.publish("replace", g, items=data[g])
                        for g in ("DISCOVER_UPSTREAM", "RULE", "SELECTOR")]
            stack.wait_cache(*versions, timeout=60)
            measure(nginx.port, direct_port, n, len(data["RULE"]), args, nginx.proc.pid)
        return 0
    except Exception as e:  # a benchmark reports, it does not crash run.sh
        log("failed: %s: %s" % (type(e).__name__, e))
        row(FIGURE + ". nginx requests/s", "failed: %s" % type(e).__name__, "-", None,
            ">= 0.8x", "not run")
        return 1
    finally:
        stack.close()


if __name__ == "__main__":
    sys.exit(main())
