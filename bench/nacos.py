#!/usr/bin/env python3
"""Figure 12's rows for Nacos (issue 28): a one-rule change among 1,000, 10,000 and 100,000
rules, the agent following the Nacos emulator (tests/nacos/nacos_emulator.py) over the v1
config API, beside the emulator's own GET floor measured in the same run.

The server holds the bench datasets (gendata.py: small, prop, big) as ShenYu 2.7's admin
publishes them to Nacos (PROTOCOL-PUSH.md 4.1): plugin.list, one selector list per plugin,
one rule list per selector, one key per item, written straight into the emulator's store.
The agent (`settle: 1ms`, the bench subscriber, log level warn) reads them all, holds
listener long polls over every key (one per 10,000), and the mutable rule's key changes N
times, one change at a time, as in events.py (whose loop, subscriber and report this
reuses): the clock starts at the write into the store, which wakes the held listener.

Value: write -> the subscriber's apply() returning (p50, p99) and the agent's CPU per change
by thread. Floor: one GET of the rule's key from the same emulator over a kept-alive
connection (p50 of 200), the least a re-read costs; a change costs at least the listener's
answer, one GET and the listener posted again. Rows: "ROW|figure|value|floor|ratio|target|
verdict" (table.py). Also the full sync time of each size at start-up.
"""
import http.client
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "nacos"))

import events  # noqa: E402  (run_one, report, Dataset, the bench subscriber's protocol)
import nacos_emulator  # noqa: E402
from procfs import percentile  # noqa: E402

NS = events.NS


class NacosServer:
    """The dataset in the Nacos emulator, in ShenYu 2.7's node layout."""
    key = "nacos"
    label = "Nacos"
    last = None  # the instance of the latest run, for the floor and the sync time

    def __init__(self, procs, tmp, data):
        self.data = data
        self.emu = nacos_emulator.NacosEmulator().start()
        self.prefix = NS + "."
        NacosServer.last = self

    def key_of(self, group, item):
        if group == "PLUGIN":
            return "%splugin.%s" % (self.prefix, item["name"])
        if group == "SELECTOR":
            return "%sselector.%s.%s" % (self.prefix, item["pluginName"], item["id"])
        return "%srule.%s.%s.%s" % (self.prefix, item["pluginName"], item["selectorId"],
                                    item["id"])

    def load(self):
        import json
        store, g = self.emu.store, nacos_emulator.DEFAULT_GROUP
        lists = {}
        for group in events.GROUPS:
            for item in self.data.items[group]:
                store[("", g, self.key_of(group, item))] = \
                    self.data.item_text(group, item).encode("utf-8")
                if group == "PLUGIN":
                    lists.setdefault(self.prefix + "plugin.list", []).append(item["name"])
                elif group == "SELECTOR":
                    lists.setdefault("%sselector.%s.list" % (self.prefix, item["pluginName"]),
                                     []).append(item["id"])
                else:
                    lists.setdefault("%srule.%s.%s.list" % (
                        self.prefix, item["pluginName"], item["selectorId"]), []).append(item["id"])
        for k, ids in lists.items():
            store[("", g, k)] = json.dumps(ids).encode("utf-8")
        self.t_loaded = time.monotonic()

    def agent_section(self):
        return ["nacos:",
                '  servers: ["%s"]' % self.emu.url(),
                "  namespace: %s" % NS,
                "  groups: [%s]" % ", ".join(events.GROUPS),
                "  settle: 1ms"]

    def change(self, k):
        item, text = self.data.changed_rule(k)
        t0 = time.monotonic_ns()
        self.emu.publish(self.key_of("RULE", item), text)
        return t0, None

    def get_floor(self, n=200):
        """p50 ms of one GET of the mutable rule's key over a kept-alive connection."""
        item = self.data.items["RULE"][self.data.mutable]
        path = "/nacos/v1/cs/configs?dataId=%s&group=DEFAULT_GROUP" % self.key_of("RULE", item)
        c = http.client.HTTPConnection("127.0.0.1", self.emu.port)
        out = []
        for _ in range(n):
            t0 = time.monotonic()
            c.request("GET", path)
            c.getresponse().read()
            out.append((time.monotonic() - t0) * 1000)
        c.close()
        return percentile(sorted(out), 50)

    def close(self):
        self.floor = self.get_floor()
        threading.Thread(target=self.emu.stop, daemon=True).start()


class NacosFanout:
    """Figure 9's Nacos row: the emulator as a process of its own (its CPU is the server's),
    the data and each change written through its /_control/publish as the admin's
    publishConfig calls, in ShenYu 2.7's node layout."""
    key = "nacos"
    label = "Nacos (emulator)"

    def __init__(self, procs, tmp, sizes):
        import fanout
        self.fanout = fanout
        self.port = fanout.free_port()
        argv = [sys.executable, os.path.join(SRC, "tests", "nacos", "nacos_emulator.py"),
                "--port", str(self.port), "--empty"]
        self.proc = procs.spawn(argv, os.path.join(tmp, "emulator.log"))
        self.pids = [self.proc.pid]
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        fanout.wait_for(self.ready, 30, "the Nacos emulator")

    def ready(self):
        try:
            self.publish({})
            return True
        except (OSError, http.client.HTTPException):
            self.conn.close()
            return False

    def publish(self, keys):
        import json
        self.conn.request("POST", "/_control/publish", json.dumps(keys),
                          {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError("emulator publish: HTTP %d" % r.status)

    @staticmethod
    def key_of(group, item):
        p = NS + "."
        if group == "PLUGIN":
            return "%splugin.%s" % (p, item["name"])
        if group == "SELECTOR":
            return "%sselector.%s.%s" % (p, item["pluginName"], item["id"])
        return "%srule.%s.%s.%s" % (p, item["pluginName"], item["selectorId"], item["id"])

    def load(self, data):
        import json
        keys, lists = {}, {}
        for group in ("PLUGIN", "SELECTOR", "RULE"):
            for item in data[group]:
                keys[self.key_of(group, item)] = self.fanout.ws_messages.gson(item)
                if group == "PLUGIN":
                    lists.setdefault(NS + ".plugin.list", []).append(item["name"])
                elif group == "SELECTOR":
                    lists.setdefault("%s.selector.%s.list" % (NS, item["pluginName"]),
                                     []).append(item["id"])
                else:
                    lists.setdefault("%s.rule.%s.%s.list" % (
                        NS, item["pluginName"], item["selectorId"]), []).append(item["id"])
        keys.update({k: json.dumps(v) for k, v in lists.items()})
        self.publish(keys)

    def agent_section(self):
        return ["nacos:",
                '  servers: ["http://127.0.0.1:%d"]' % self.port,
                "  namespace: %s" % NS,
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(events.GROUPS)]

    def write(self, item):
        self.publish({self.key_of("RULE", item): self.fanout.ws_messages.gson(item)})

    def close(self):
        self.conn.close()


def fanout_main(argv):
    """bench/nacos.py BUILD --fanout [fanout.py's options]: figure 9 for Nacos."""
    import fanout
    return fanout.main_for("nacos", NacosFanout, argv)


def main():
    if "--fanout" in sys.argv[1:]:
        return fanout_main(sys.argv[1:])
    args = events.event_args(start_timeout=600.0)
    return events.run_against_floor("nacos", NacosServer, "Nacos", "write", args)


if __name__ == "__main__":
    sys.exit(main())
