#!/usr/bin/env python3
"""Figure 9's fan-out row for Consul (issue 28): fanout.py's run, as it is, with one more
server: the Consul KV emulator (tests/consul/emulator.py, its own process, so its CPU is
measured as etcd's and ZooKeeper's are), written to as ShenYu's admin writes
(tests/consul/consulstore.py: one PUT per item at {ns}/shenyu/..., Gson text). Each agent
holds one recursive blocking query on the root; a change wakes every agent's query and
the emulator answers each with the whole root (the figure's cost, against etcd's one event
per watcher).
  bench/fanout_consul.py BUILD [fanout.py's options; --servers defaults to consul]
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "consul"))

import fanout  # noqa: E402
import consulstore  # noqa: E402


class Consul:
    key = "consul"
    label = "Consul (emulator)"

    def __init__(self, procs, tmp, sizes):
        self.port = fanout.free_port()
        self.proc = procs.spawn([sys.executable, os.path.join(SRC, "tests", "consul", "emulator.py"),
                                 "--port", str(self.port)],
                                os.path.join(tmp, "consul.log"), stdout=subprocess.DEVNULL)
        self.pids = [self.proc.pid]
        self.store = consulstore.ConsulStore("http://127.0.0.1:%d" % self.port)

        def up():
            try:
                self.store.read_tree("/x")
                return True
            except OSError:
                time.sleep(0.05)
                return False
        fanout.wait_for(up, 30, "the Consul emulator")

    def load(self, data):
        for group in fanout.GROUPS:
            for item in data[group]:
                self.store.put(fanout.item_path(group, item), fanout.ws_messages.gson(item))

    def agent_section(self):
        return ["consul:",
                '  servers: ["http://127.0.0.1:%d"]' % self.port,
                "  settle: 20ms",
                "  groups: [%s]" % ", ".join(fanout.GROUPS)]

    def write(self, item):
        self.store.put(fanout.item_path("RULE", item), fanout.ws_messages.gson(item))

    def close(self):
        pass


fanout.SERVERS["consul"] = Consul

if __name__ == "__main__":
    if not any(a.startswith("--servers") for a in sys.argv[1:]):
        sys.argv += ["--servers", "consul"]
    sys.exit(fanout.main())
