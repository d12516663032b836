#!/usr/bin/env python3
"""Admin faults (issue 5): an admin SIGKILLed while it holds a poll, then restarted with new
data; an admin flapping up and down; every admin of a cluster down, then back. Through all
of it the agent keeps running and keeps the last good data (file plugin output and
snapshot unchanged), and converges on the admins' data once they answer again."""
import os
import random
import signal
import time

import groupfiles
import harness
import synclog

RETRY = (3, "200ms", "500ms")


class AdminFaults(harness.IntegrationTest):

    def dirs(self):
        tmp = self.tmpdir()
        return os.path.join(tmp, "files"), os.path.join(tmp, "state")

    def snapshot_of(self, files, groups):
        return {g: groupfiles.read(files, g) for g in groups}

    def test_admin_killed_while_holding_a_poll_then_restarted_with_new_data(self):
        files, state = self.dirs()
        emu = self.emulator(mode="shenyu", hold=30)
        d = self.daemon(emu.config(log_level="info", retry=RETRY, state_dir=state,
                                   subscribers=[groupfiles.file_subscriber(files)]))
        groupfiles.wait_admin_data(files, emu)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        before = self.snapshot_of(files, emu.groups)
        old = {g: emu.group(g)["md5"] for g in emu.groups}

        t0 = time.monotonic()
        emu.kill()
        # The held poll fails at once (the kernel closes the dead admin's socket), long
        # before the 30 s hold or the read timeout.
        doc = d.wait_status(harness.conn_failing(emu.url, 1, "connect"), "a failed poll",
                            timeout=10)
        self.assertIn("/configs/listener", harness.connection(doc, emu.url)["lastError"])
        self.assertLess(time.monotonic() - t0, 10)
        d.wait_status(harness.conn_failing(emu.url, 3, "connect"), "a whole failed round")
        self.assertTrue(d.alive())
        self.assertEqual(self.snapshot_of(files, emu.groups), before)
        for g in emu.groups:
            self.assertEqual(groupfiles.md5(state, g), old[g])

        # Restarted with other data (another seed): its tokens are new, its data replaces
        # ours group by group.
        emu.restart(seed=2)
        new = {g: emu.group(g)["md5"] for g in emu.groups}
        changed = [g for g in emu.groups if new[g] != old[g]]
        self.assertGreaterEqual(len(changed), 5)
        groupfiles.wait_admin_data(files, emu, timeout=20, times=False)
        d.wait_status(harness.holds_all({g: new[g] for g in changed}, source=emu.url),
                      "the restarted admin's data")
        for g in changed:
            groupfiles.wait_version(state, g, new[g])
        d.wait_status(harness.conn_recovered(emu.url), "polling again")

    def test_admin_flapping(self):
        files, state = self.dirs()
        emu = self.emulator(mode="shenyu", hold=2)
        d = self.daemon(emu.config(log_level="info", retry=RETRY, state_dir=state,
                                   subscribers=[groupfiles.file_subscriber(files)]))
        groupfiles.wait_admin_data(files, emu)
        rnd = random.Random(5)
        # Up and down faster than the agent can finish a poll: kills, clean stops, and
        # changes made while it was up.
        for i in range(6):
            emu.stop(signal.SIGKILL if i % 2 == 0 else signal.SIGTERM)
            time.sleep(rnd.uniform(0.05, 0.4))
            emu.start()
            emu.upsert("RULE", synclog.rule("flap-%d" % i))
            time.sleep(rnd.uniform(0.05, 0.4))
            self.assertTrue(d.alive())
            for g in emu.groups:   # whatever it holds now is whole
                groupfiles.check_whole(os.path.join(files, g + ".json"))
        # Once it stays up, the agent converges on exactly its data.
        v = emu.upsert("RULE", synclog.rule("after-flapping"))
        synclog.holds(d, "RULE", v, emu.url, timeout=20)
        groupfiles.wait_admin_data(files, emu, times=False)
        groupfiles.wait_version(state, "RULE", v["md5"])
        # Each restart was a new admin: the agent logged in again, and no more than
        # the retry policy allows (no storm): at most a few requests per restart.
        logins = emu.requests("login")
        self.assertGreaterEqual(len(logins), 1)
        self.assertLessEqual(len(emu.requests()), 20)

    def test_every_admin_down_then_back(self):
        files, state = self.dirs()
        c = self.cluster(2, mode="shenyu", hold=5)
        d = self.daemon(c.config(log_level="info", retry=RETRY, state_dir=state,
                                 subscribers=[groupfiles.file_subscriber(files)]))
        groupfiles.wait_admin_data(files, c[0])
        harness.wait_until(lambda: all(e.state()["held"] >= 1 for e in c.emulators),
                           message="both pollers holding")
        before = self.snapshot_of(files, c[0].groups)

        taken = harness.changes(d.status())
        c[0].kill()
        c[1].kill()
        for e in c.emulators:   # two whole failed rounds each
            d.wait_status(harness.conn_failing(e.url, 6, "connect"), "%s down" % e.url)
        self.assertTrue(d.alive())
        self.assertEqual(self.snapshot_of(files, c[0].groups), before)
        self.assertEqual(harness.changes(d.status()), taken)

        # Both come back with new data: each group is taken once, from either.
        for e in c.emulators:
            e.restart(seed=3)
        groupfiles.wait_admin_data(files, c[0], timeout=20, times=False)
        for g in c[0].groups:
            self.assertEqual(c[0].group(g)["md5"], c[1].group(g)["md5"])
        for e in c.emulators:
            d.wait_status(harness.conn_recovered(e.url), "%s polling again" % e.url)
        new = [g for g in c[0].groups if before[g]["md5"] != c[0].group(g)["md5"]]
        doc = d.wait_status(harness.holds_all({g: c[0].group(g)["md5"] for g in c[0].groups}),
                            "the admins' new data")
        time.sleep(0.5)   # a second fetch of the same version would be counted by now
        self.assertEqual(harness.changes(d.status()) - taken, len(new), doc)
        # And ordinary changes flow again.
        versions = c.upsert("RULE", synclog.rule("after-outage"))
        synclog.holds(d, "RULE", versions[0])
        groupfiles.wait_version(files, "RULE", versions[0]["md5"])


if __name__ == "__main__":
    harness.main()
