#!/usr/bin/env python3
"""Figure 14, what a short anti-entropy interval costs an idle WebSocket agent (issue 31,
item 9): a ShenYu 2.7 admin sends nothing when a group is emptied (REFRESH []), so only a
full sync removes a revoked app from APP_AUTH, and admin.websocket.resync_groups lets
APP_AUTH ask for one often. The admin answers a full sync with every group, so the cost is
that of the whole dataset, whatever group asked.

For each dataset (the emulator's default, 110 items; and 10,000 rules in 1,000 selectors)
one gwsyncd follows the bundled admin emulator over WebSocket, with no subscriber, and is
left idle for WINDOW seconds (no change at the admin) twice: with the default interval
(10 minutes: no full sync in the window, the floor) and with `resync_groups: {APP_AUTH: 1s}`.
Value: the agent's CPU (every thread, /proc utime + stime) and the admin's, per minute of
idleness, and the full syncs the agent asked for (its `fetches` counter). Everything a 2-core
shared machine measures is indicative: read the difference from the floor.

  bench/resync_idle.py BUILD_DIR [WINDOW_SECONDS]

Processes started here are stopped here (the harness stops them by pid).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)

import harness  # noqa: E402
import procfs  # noqa: E402

DATASETS = (("default, 110 items", {}),
            ("10,000 rules", {"rules": 10000, "selectors": 1000}))


def fetches(doc):
    return sum(c.get("fetches", 0) for c in doc["source"]["connections"])


def run(build, flags, websocket, window):
    emu = harness.Emulator(mode="shenyu", hold=60, **flags).start()
    config = harness.make_config(servers=["ws://127.0.0.1:%d/websocket" % emu.port],
                                 groups=emu.groups, log_level="warn",
                                 admin_extra={"websocket": websocket} if websocket else None)
    d = harness.Daemon(config, binary=os.path.join(build, "gwsyncd")).start()
    try:
        d.wait_status(lambda s: s["healthy"], "healthy", timeout=120)
        time.sleep(2)  # the start-up's full sync and deliveries are over
        before = (procfs.cpu_seconds(d.pid), procfs.cpu_seconds(emu.pid), fetches(d.status()))
        time.sleep(window)
        after = (procfs.cpu_seconds(d.pid), procfs.cpu_seconds(emu.pid), fetches(d.status()))
    finally:
        d.stop()
        emu.stop()
    per_min = 60.0 / window
    return ((after[0] - before[0]) * per_min, (after[1] - before[1]) * per_min,
            after[2] - before[2])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build")
    window = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    os.environ.setdefault("GWSYNCD", os.path.join(build, "gwsyncd"))
    print("idle %.0f s; CPU seconds per minute of idleness (agent / admin), full syncs asked"
          % window)
    print("%-20s %-28s %12s %12s %8s" % ("dataset", "anti-entropy", "agent", "admin", "syncs"))
    for name, flags in DATASETS:
        for label, ws in (("10m (default): floor", None),
                          ("APP_AUTH every 1s", {"resync_groups": {"APP_AUTH": "1s"}})):
            agent, admin, syncs = run(build, flags, ws, window)
            print("%-20s %-28s %12.3f %12.3f %8d" % (name, label, agent, admin, syncs))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
