#!/usr/bin/env python3
"""Figure 12's rows for Polaris (issue 28): a one-rule change among 1,000, 10,000 and 100,000
rules, the agent following the Polaris emulator (tests/polaris/emulator.py) over Polaris's
plain HTTP config API, beside the emulator's own GET floor measured in the same run.

The emulator holds the bench datasets (gendata.py: small, prop, big) as ShenYu 2.7's admin
publishes them to Polaris (PROTOCOL-PUSH.md 4.1): plugin.list, one selector list per plugin,
one rule list per selector, one file per item, each released once. The agent (`settle: 1ms`,
the bench subscriber, log level warn) reads them all and holds one WatchConfigFile naming
every file; the mutable rule's file is released N times, one change at a time, as in
events.py (whose loop, subscriber and report this reuses): the clock starts at the release,
which answers the held watch.

Value: release -> the subscriber's apply() returning (p50, p99) and the agent's CPU per
change by thread. Floor: one GetConfigFile of the rule's file from the same emulator over a
kept-alive connection (p50 of 200), the least a re-read costs; a change costs at least the
watch's answer, one GET and the next watch posted (whose body names every file: the part
that grows with the rules). Rows: "ROW|figure|value|floor|ratio|target|verdict" (table.py).

`bench/polaris.py BUILD --fanout [fanout.py's options]`: figure 9's row for Polaris instead,
fanout.py's run (100 agents by default) with the emulator as a process of its own.
"""
import http.client
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import events  # noqa: E402  (run_one, report, Dataset, the bench subscriber's protocol)
from procfs import percentile  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "polaris_emulator", os.path.join(SRC, "tests", "polaris", "emulator.py"))
polaris_emulator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(polaris_emulator)

NS = events.NS
GROUP = "shenyu"


class PolarisServer:
    """The dataset in the Polaris emulator, in ShenYu 2.7's node layout."""
    key = "polaris"
    label = "Polaris"
    last = None  # the instance of the latest run, for the floor

    def __init__(self, procs, tmp, data):
        self.data = data
        self.emu = polaris_emulator.PolarisEmulator().start()
        self.prefix = NS + "."
        PolarisServer.last = self

    def key_of(self, group, item):
        if group == "PLUGIN":
            return "%splugin.%s" % (self.prefix, item["name"])
        if group == "SELECTOR":
            return "%sselector.%s.%s" % (self.prefix, item["pluginName"], item["id"])
        return "%srule.%s.%s.%s" % (self.prefix, item["pluginName"], item["selectorId"],
                                    item["id"])

    def load(self):
        lists = {}
        for group in events.GROUPS:
            for item in self.data.items[group]:
                self.emu.publish("default", GROUP, self.key_of(group, item),
                                 self.data.item_text(group, item))
                if group == "PLUGIN":
                    lists.setdefault(self.prefix + "plugin.list", []).append(item["name"])
                elif group == "SELECTOR":
                    lists.setdefault("%sselector.%s.list" % (self.prefix, item["pluginName"]),
                                     []).append(item["id"])
                else:
                    lists.setdefault("%srule.%s.%s.list" % (
                        self.prefix, item["pluginName"], item["selectorId"]),
                        []).append(item["id"])
        for k, ids in lists.items():
            self.emu.publish("default", GROUP, k, json.dumps(ids))

    def agent_section(self):
        return ["polaris:",
                '  servers: ["%s"]' % self.emu.url,
                "  shenyu_namespace: %s" % NS,
                "  groups: [%s]" % ", ".join(events.GROUPS),
                "  settle: 1ms"]

    def change(self, k):
        item, text = self.data.changed_rule(k)
        t0 = time.monotonic_ns()
        self.emu.publish("default", GROUP, self.key_of("RULE", item), text)
        return t0, None

    def get_floor(self, n=200):
        """p50 ms of one GetConfigFile of the mutable rule's file, kept-alive connection."""
        item = self.data.items["RULE"][self.data.mutable]
        path = "/config/v1/GetConfigFile?namespace=default&group=%s&fileName=%s&version=0" % (
            GROUP, self.key_of("RULE", item))
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


class PolarisFanout:
    """Figure 9's Polaris row: the emulator as a process of its own (its CPU is the
    server's), written through its /_control/publish as ShenYu's admin writes (node layout,
    one release per file). A rule's UPDATE is what the admin's onRuleChanged publishes:
    the rule's file, then its selector's rule list again (the same ids, still one more
    release: Polaris versions every release), so each change answers each agent's held
    watch and the agent must apply the one rule once."""
    key = "polaris"
    label = "Polaris (emulator)"

    def __init__(self, procs, tmp, sizes):
        import fanout
        self.fanout = fanout
        self.port = fanout.free_port()
        argv = [sys.executable, os.path.join(SRC, "tests", "polaris", "emulator.py"),
                "--port", str(self.port)]
        self.proc = procs.spawn(argv, os.path.join(tmp, "emulator.log"),
                                stdout=subprocess.DEVNULL)
        self.pids = [self.proc.pid]
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.lists = {}  # list file -> its text, as loaded (a rule's UPDATE re-releases it)
        fanout.wait_for(self.ready, 30, "the Polaris emulator")

    def ready(self):
        try:
            self.publish({})
            return True
        except (OSError, http.client.HTTPException):
            self.conn.close()
            return False

    def publish(self, files):
        self.conn.request("POST", "/_control/publish?namespace=default&group=" + GROUP,
                          json.dumps(files), {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError("emulator publish: HTTP %d %s" % (r.status, body[:200]))

    @staticmethod
    def key_of(group, item):
        if group == "PLUGIN":
            return "%s.plugin.%s" % (NS, item["name"])
        if group == "SELECTOR":
            return "%s.selector.%s.%s" % (NS, item["pluginName"], item["id"])
        return "%s.rule.%s.%s.%s" % (NS, item["pluginName"], item["selectorId"], item["id"])

    @staticmethod
    def list_of(group, item):
        if group == "PLUGIN":
            return NS + ".plugin.list"
        if group == "SELECTOR":
            return "%s.selector.%s.list" % (NS, item["pluginName"])
        return "%s.rule.%s.%s.list" % (NS, item["pluginName"], item["selectorId"])

    def load(self, data):
        files, ids = {}, {}
        for group in events.GROUPS:
            for item in data[group]:
                files[self.key_of(group, item)] = self.fanout.ws_messages.gson(item)
                ids.setdefault(self.list_of(group, item), []).append(
                    item["name"] if group == "PLUGIN" else item["id"])
        self.lists = {k: self.fanout.ws_messages.gson(v) for k, v in ids.items()}
        files.update(self.lists)
        self.publish(files)

    def agent_section(self):
        return ["polaris:",
                '  servers: ["http://127.0.0.1:%d"]' % self.port,
                "  shenyu_namespace: %s" % NS,
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(events.GROUPS)]

    def write(self, item):
        rules = self.list_of("RULE", item)
        self.publish({self.key_of("RULE", item): self.fanout.ws_messages.gson(item),
                      rules: self.lists[rules]})

    def close(self):
        self.conn.close()


def fanout_main(argv):
    """bench/polaris.py BUILD --fanout [fanout.py's options]: figure 9 for Polaris."""
    import fanout
    return fanout.main_for("polaris", PolarisFanout, argv)


def main():
    if "--fanout" in sys.argv[1:]:
        return fanout_main(sys.argv[1:])
    args = events.event_args(start_timeout=900.0)
    return events.run_against_floor("polaris", PolarisServer, "Polaris", "release", args)


if __name__ == "__main__":
    sys.exit(main())
