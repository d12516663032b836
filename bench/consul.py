#!/usr/bin/env python3
"""The Consul source at scale (issue 28's figures for Consul, and its question: one
recursive blocking query on {namespace}/shenyu, or seven, one per group directory?).

Figure 12's method (bench/events.py, whose run is reused as it is): one gwsyncd follows a
Consul KV emulator (tests/consul/emulator.py, in this process) holding the bench dataset
(PLUGIN, SELECTOR and RULE of small, prop and big: 1k, 10k, 100k rules), and the mutable
rule changes N times, each a PUT as ShenYu's admin makes it; the clock starts at the PUT.
Two agents per size:

  root   groups PLUGIN, SELECTOR, RULE: ONE recursive query on {ns}/shenyu/, what the
         consul: source does (every answer holds every key of the three groups)
  rule   groups RULE only: the source then queries {ns}/shenyu/rule/, which is exactly
         what one of seven per-directory queries (ShenYu's own gateway's way) is for this
         change; a change in another group would wake only that group's (smaller) query

Values: PUT -> apply() p50/p99 and the agent's CPU per change (every thread's schedstat,
split by thread), beside the floor measured in the same run: the emulator's own answer
to the same prefix (a non-blocking GET of it from here, p50 of 5: the time Consul-the-
emulator needs to build and send the answer every change brings), and the answer's
size. And the full sync of the dataset (agent start -> every group applied).

Every result is a line "ROW|figure|value|floor|ratio|target|verdict" (table.py prints
them); details on stderr; agent logs in BUILD/bench-run/consul/. A 2-core shared machine
measures indicative numbers; the ratios are what to read.
"""
import argparse
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "consul"))

import events  # noqa: E402  (figure 12's run: dataset, agent, subscriber, CPU by thread)
import consulstore  # noqa: E402
from procfs import percentile  # noqa: E402

emulator = consulstore.load_emulator()
row = events.row
ALL_GROUPS = ["PLUGIN", "SELECTOR", "RULE"]


def log(msg):
    print("consul: " + msg, file=sys.stderr, flush=True)


class Consul(events.KvServer):
    """The emulator with the dataset, written straight into its store (as a restored
    snapshot would be); each change a PUT over HTTP, as the admin's."""
    key = "consul"
    label = "Consul, one recursive query on the root"
    groups = ALL_GROUPS

    def __init__(self, procs, tmp, data):
        self.data = data
        self.emu = emulator.Emulator()
        self.store = consulstore.ConsulStore(self.emu.url)

    def nodes(self):
        for g in ALL_GROUPS:
            for item in self.data.items.get(g, []):
                yield events.fanout.item_path(g, item), self.data.item_text(g, item)

    def load(self):
        for path, text in self.nodes():
            self.emu.store.put(path.lstrip("/"), text.encode("utf-8"))

    def prefix(self):
        dirs = {"PLUGIN": "plugin", "SELECTOR": "selector", "RULE": "rule"}
        root = events.ROOT.lstrip("/")
        return root + "/" if len(self.groups) > 1 else "%s/%s/" % (root, dirs[self.groups[0]])

    def agent_section(self):
        return ["consul:",
                '  servers: ["%s"]' % self.emu.url,
                "  settle: 1ms",
                "  max_response: 1GiB",
                "  groups: [%s]" % ", ".join(self.groups)]

    def write_node(self, path, text):
        self.store.put(path, text)

    def floor(self, n=5):
        """(p50 ms, bytes) of a non-blocking GET of the agent's prefix."""
        url = "%s/v1/kv/%s?recurse" % (self.emu.url, self.prefix())
        took, size = [], 0
        for _ in range(n):
            t0 = time.monotonic()
            with urllib.request.urlopen(url, timeout=300) as r:
                size = len(r.read())
            took.append((time.monotonic() - t0) * 1000)
        return percentile(sorted(took), 50), size

    def close(self):
        self.emu.close()


class ConsulRule(Consul):
    key = "consul-rule"
    label = "Consul, the RULE directory's query (one of seven)"
    groups = ["RULE"]


def run(kind, cls, dataset, args, build, keep):
    """events.run_one for one variant, with its groups, its floor and its start-up time."""
    events.SERVERS[kind] = cls
    floor = {}
    synced = []
    real_log = events.log

    def capture(msg):
        if "agent synced in" in msg:
            synced.append(float(msg.rsplit(" in ", 1)[1].split()[0]))
        real_log(msg)
    orig_close = cls.close

    def close(self):
        floor["ms"], floor["bytes"] = self.floor()
        orig_close(self)
    events.GROUPS, events.log, cls.close = cls.groups, capture, close
    try:
        r = events.run_one(kind, dataset, args, build, keep)
    finally:
        events.GROUPS, events.log, cls.close = ALL_GROUPS, real_log, orig_close
    r["floor"] = floor
    r["synced"] = synced[0] if synced else None
    return r


def report(kind, cls, results, args):
    for dataset in args.sizes:
        r = results.get(dataset)
        if not r:
            continue
        what = "%s, one rule changed among %s" % (cls.label, events.SIZES[dataset])
        p50, p99 = percentile(r["lat"], 50), percentile(r["lat"], 99)
        fl = r["floor"]
        row("28. %s: PUT -> apply() p50 / p99 (%d changes)" % (what, r["n"]),
            "%.1f / %.1f ms" % (p50, p99),
            "the emulator's GET of the prefix %.1f ms (%.1f MB)" % (fl["ms"], fl["bytes"] / 1e6),
            p50 / fl["ms"] if fl.get("ms") else None)
        split = ", ".join("%s %.2f" % (k, v) for k, v in
                          sorted(r["per"].items(), key=lambda x: -x[1]) if v >= 0.005)
        row("28. %s: agent CPU per change" % what, "%.2f ms (%s)" % (r["cpu"], split), "-", None)
        row("28. %s: every change arrived as 1 update" % what,
            "%d of %d" % (r["n"] - r["bad"], r["n"]), "-", None, "all",
            "met" if r["bad"] == 0 else "NOT met")
        if r["synced"] is not None:
            n = sum(1 for _ in cls.groups)
            row("28. %s: full sync, agent start -> %d group(s) applied, %s rules" % (
                cls.label, n, events.SIZES[dataset]), "%.1f s" % r["synced"], "-", None)
    lo, hi = results.get(args.sizes[0]), results.get(args.sizes[-1])
    if lo and hi and len(args.sizes) > 1:
        span = "%s vs %s rules" % (events.SIZES[args.sizes[-1]], events.SIZES[args.sizes[0]])
        a, b = hi["cpu"], lo["cpu"]
        row("28. %s growth, agent CPU per change, %s" % (cls.label, span), "%.2f ms" % a,
            "%.2f ms" % b, a / b if b else None, "<= 1.5x", "met" if a <= 1.5 * b else "NOT met")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", help="the build directory (gwsyncd, bench/bench_sub.so)")
    ap.add_argument("--data", help="the datasets (default BUILD/bench-data)")
    ap.add_argument("--variants", default="root,rule")
    ap.add_argument("--sizes", default="small,prop,big")
    ap.add_argument("--changes", type=int, default=int(os.environ.get("BENCH_CONSUL_CHANGES", 20)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--start-timeout", type=float, default=600.0)
    ap.add_argument("--change-timeout", type=float, default=60.0)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    args.data = os.path.abspath(args.data or os.path.join(build, "bench-data"))
    args.sizes = [s for s in args.sizes.split(",") if s]
    keep = os.path.join(build, "bench-run", "consul")
    os.makedirs(keep, exist_ok=True)
    variants = {"root": ("consul", Consul), "rule": ("consul-rule", ConsulRule)}
    ok = True
    for v in [x for x in args.variants.split(",") if x]:
        kind, cls = variants[v]
        results = {}
        for dataset in args.sizes:
            try:
                results[dataset] = run(kind, cls, dataset, args, build, keep)
                r = results[dataset]
                log("%s %s: p50 %.1f ms, CPU %.2f ms per change, floor %.1f ms, sync %s s" % (
                    kind, dataset, percentile(r["lat"], 50), r["cpu"], r["floor"]["ms"],
                    r["synced"]))
            except Exception as e:  # one failure must not hide the other figures
                log("%s %s failed: %s" % (kind, dataset, e))
                row("28. %s, %s rules" % (cls.label, events.SIZES[dataset]),
                    "failed: %s" % str(e)[:100], "-", None, "-", "NOT met")
                ok = False
        report(kind, cls, results, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
