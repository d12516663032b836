#!/usr/bin/env python3
"""Figure 12 for the Apollo source (issue 28): a one-rule change among 1,000, 10,000 and
100,000 rules, through the Apollo config service emulator (tests/apollo/apollo_emulator.py,
in this process), measured by bench/events.py's loop (run_one, report) with this server.

The dataset (gendata.py's small, prop and big: PLUGIN, SELECTOR, RULE) is written in
ShenYu's node layout ({ns}.plugin.list, {ns}.rule.{plugin}.{selectorId}.{id}, ...) into
app `shenyu`, namespace `application`, as one release; each change is one release of the
mutable rule's key (what the admin's createOrUpdateItem + publishNamespace of that key
does; the list key it rewrites next is unchanged and adds a second, empty-diff release).

Apollo's client API has no per-key read: every newer notification means reading the whole
namespace (`GET /configs/...`, the release's every key) and comparing it. So the floor is
that read as a plain client does it in the same run (the emulator serving the release's
cached JSON, read and parsed by Python's urllib and json): the agent's event -> apply()
is compared with it, and its CPU per change grows with the namespace by design of the API;
the rows say so beside the figures (the agent's own share after the read is the diff, one
hash lookup and compare per key, and what changed).

With --incremental the service answers a read with a known releaseKey with the changes
only (Apollo's config-service.incremental.change.enabled, off by default): the agent's
cost is then what changed.

    bench/apollo.py BUILD [--sizes small,prop,big] [--changes N] [--incremental]
    bench/apollo.py BUILD --fanout [fanout.py's options]   (figure 9's Apollo row)
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "apollo"))
import events  # noqa: E402  (run_one, report, the datasets)
from procfs import percentile  # noqa: E402

import apollo_emulator  # noqa: E402

NS = events.NS


class ApolloServer:
    """The emulator holding the dataset in ShenYu's node layout (2.7, prefix "{ns}.")."""
    label = "Apollo"

    incremental = False  # the config service's incremental option (--incremental)

    def __init__(self, procs, tmp, data):
        self.data = data
        self.emu = apollo_emulator.Emulator(app_id="shenyu", hold=60,
                                            incremental=self.incremental).start()
        self.prefix = NS + "."
        self.floor = []

    def key(self, group, item):
        p = self.prefix
        if group == "PLUGIN":
            return p + "plugin." + item["name"]
        if group == "SELECTOR":
            return "%sselector.%s.%s" % (p, item["pluginName"], item["id"])
        return "%srule.%s.%s.%s" % (p, item["pluginName"], item["selectorId"], item["id"])

    def load(self):
        lists = {}
        for g in events.GROUPS:
            for item in self.data.items[g]:
                self.emu.create_or_update_item(self.key(g, item), self.data.item_text(g, item))
                if g == "PLUGIN":
                    lk, ident = self.prefix + "plugin.list", item["name"]
                elif g == "SELECTOR":
                    lk, ident = "%sselector.%s.list" % (self.prefix, item["pluginName"]), item["id"]
                else:
                    lk, ident = "%srule.%s.%s.list" % (self.prefix, item["pluginName"],
                                                       item["selectorId"]), item["id"]
                lists.setdefault(lk, []).append(ident)
        for lk, ids in lists.items():
            self.emu.create_or_update_item(lk, json.dumps(ids, separators=(",", ":")))
        self.emu.publish_namespace()

    def agent_section(self):
        return ["apollo:",
                '  servers: ["%s"]' % self.emu.url,
                "  app_id: shenyu",
                "  groups: [%s]" % ", ".join(events.GROUPS),
                "  settle: 1ms",
                "  max_response: 256MiB"]

    def change(self, k):
        """One release of the mutable rule's key; (t0 ns, None). Then, off the clock, the
        floor: one whole read of the namespace as a plain client does it."""
        item, text = self.data.changed_rule(k)
        t0 = time.monotonic_ns()
        self.emu.create_or_update_item(self.key("RULE", item), text)
        self.emu.publish_namespace()
        return t0, None

    def read_floor(self):
        t = time.monotonic()
        with urllib.request.urlopen(self.emu.url + "/configs/shenyu/default/application",
                                    timeout=120) as r:
            json.loads(r.read())
        self.floor.append((time.monotonic() - t) * 1000)

    def close(self):
        self.emu.stop()


class ApolloFanout:
    """Figure 9's Apollo row: the emulator as a process of its own (its CPU is the
    server's), the data and each change written through its /_control/publish as the
    admin's createOrUpdateItem + publishNamespace (one release), in ShenYu 2.7's node layout.
    Every agent long-polls the notifications and reads the namespace on each release."""
    key = "apollo"
    label = "Apollo (emulator)"

    def __init__(self, procs, tmp, sizes):
        import fanout
        self.fanout = fanout
        self.port = fanout.free_port()
        argv = [sys.executable, os.path.join(SRC, "tests", "apollo", "apollo_emulator.py"),
                "--port", str(self.port)]
        self.proc = procs.spawn(argv, os.path.join(tmp, "emulator.log"))
        self.pids = [self.proc.pid]
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        fanout.wait_for(self.ready, 30, "the Apollo emulator")

    def ready(self):
        try:
            self.publish({})
            return True
        except (OSError, http.client.HTTPException):
            self.conn.close()
            return False

    def publish(self, keys):
        self.conn.request("POST", "/_control/publish", json.dumps(keys),
                          {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError("emulator publish: HTTP %d" % r.status)

    def load(self, data):
        srv = ApolloServer.__new__(ApolloServer)
        srv.prefix = NS + "."
        keys, lists = {}, {}
        for group in events.GROUPS:
            for item in data[group]:
                keys[srv.key(group, item)] = self.fanout.ws_messages.gson(item)
                if group == "PLUGIN":
                    lists.setdefault(NS + ".plugin.list", []).append(item["name"])
                elif group == "SELECTOR":
                    lists.setdefault("%s.selector.%s.list" % (NS, item["pluginName"]),
                                     []).append(item["id"])
                else:
                    lists.setdefault("%s.rule.%s.%s.list" % (
                        NS, item["pluginName"], item["selectorId"]), []).append(item["id"])
        keys.update({k: json.dumps(v) for k, v in lists.items()})
        self.key_of = srv.key
        self.publish(keys)

    def agent_section(self):
        return ["apollo:",
                '  servers: ["http://127.0.0.1:%d"]' % self.port,
                "  app_id: shenyu",
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(events.GROUPS)]

    def write(self, item):
        self.publish({self.key_of("RULE", item): self.fanout.ws_messages.gson(item)})

    def close(self):
        self.conn.close()


def fanout_main(argv):
    """bench/apollo.py BUILD --fanout [fanout.py's options]: figure 9 for Apollo."""
    import fanout
    return fanout.main_for("apollo", ApolloFanout, argv)


def full_sync(build, dataset_dir, keep):
    """`gwsyncd --once` against an emulator holding the dataset: the whole first read
    (one release of every key) and every group delivered, in ms; and the floor, a client's
    whole read of the same namespace."""
    srv = ApolloServer(None, None, events.Dataset(dataset_dir))
    try:
        srv.load()
        srv.read_floor()  # the release's body made once, as for the agent
        cfg = os.path.join(keep, "apollo-once.yaml")
        with open(cfg, "w") as f:
            f.write("\n".join(srv.agent_section() + [
                "state_dir: %s" % os.path.join(keep, "apollo-once-state"),
                "log:", "  level: warn",
                "subscribers:",
                "  - name: bench",
                "    library: %s" % os.path.join(build, "bench", "bench_sub.so")]) + "\n")
        t = time.monotonic()
        rc = subprocess.run([os.path.join(build, "gwsyncd"), "-c", cfg, "--once"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
        took = (time.monotonic() - t) * 1000
        if rc.returncode != 0:
            raise RuntimeError("gwsyncd --once exited %d: %s" % (rc.returncode,
                                                                 rc.stderr[-300:]))
        srv.floor.clear()
        for _ in range(3):
            srv.read_floor()
        return took, percentile(sorted(srv.floor), 50)
    finally:
        srv.close()


def main():
    if "--fanout" in sys.argv[1:]:
        return fanout_main(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--data")
    ap.add_argument("--sizes", default="small,prop,big")
    ap.add_argument("--changes", type=int, default=int(os.environ.get("BENCH_EVENT_CHANGES", 30)))
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--start-timeout", type=float, default=300.0)
    ap.add_argument("--change-timeout", type=float, default=60.0)
    ap.add_argument("--incremental", action="store_true",
                    help="the config service answers with configurationChanges (its "
                         "config-service.incremental.change.enabled)")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    args.data = os.path.abspath(args.data or os.path.join(build, "bench-data"))
    args.sizes = [s for s in args.sizes.split(",") if s]
    ApolloServer.incremental = args.incremental
    if args.incremental:
        ApolloServer.label = "Apollo (incremental replies)"
    events.SERVERS["apollo"] = ApolloServer
    keep = os.path.join(build, "bench-run", "events")
    os.makedirs(keep, exist_ok=True)
    results, floors, ok = {}, {}, True
    for dataset in args.sizes:
        try:
            results[dataset] = events.run_one("apollo", dataset, args, build, keep)
            # the floor in the same run, on a server holding the same dataset
            srv = ApolloServer(None, None, events.Dataset(os.path.join(args.data, dataset)))
            try:
                srv.load()
                for _ in range(5):
                    srv.read_floor()
            finally:
                srv.close()
            floors[dataset] = percentile(sorted(srv.floor), 50)
            r = results[dataset]
            events.log("apollo %s: p50 %.2f ms, CPU %.2f ms per change, whole read %.2f ms" % (
                dataset, percentile(r["lat"], 50), r["cpu"], floors[dataset]))
        except Exception as e:  # one failure must not hide the other figures
            events.log("apollo %s failed: %s" % (dataset, e))
            events.row("12. %s, %s rules" % (ApolloServer.label, events.SIZES[dataset]),
                       "failed: %s" % str(e)[:100], "-", None, "-", "NOT met")
            ok = False
    events.report("apollo", results, args)
    if not args.incremental:
        for dataset in args.sizes:
            try:
                took, floor = full_sync(build, os.path.join(args.data, dataset), keep)
                events.row("12. Apollo, full sync of %s rules (gwsyncd --once: read, build, "
                           "deliver)" % events.SIZES[dataset], "%.0f ms" % took,
                           "whole read %.0f ms" % floor, took / floor)
            except Exception as e:
                events.log("apollo full sync %s failed: %s" % (dataset, e))
                ok = False
    for dataset in args.sizes:
        if dataset in results and dataset in floors:
            p50 = percentile(results[dataset]["lat"], 50)
            events.row("12. %s, one rule changed among %s: event -> apply() p50 against a "
                       "client's whole read of the namespace (Apollo has no per-key read)"
                       % (ApolloServer.label, events.SIZES[dataset]), "%.2f ms" % p50,
                       "whole read %.2f ms" % floors[dataset], p50 / floors[dataset])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
