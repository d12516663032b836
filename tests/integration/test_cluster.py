#!/usr/bin/env python3
"""Several admin servers (issue 3): a change seen through either, applied once; a lagging
admin serving older data can neither roll the gateway back nor draw a request storm; the
first server down at start-up means the start-up fetch comes from the second."""
import time

import harness
import synclog


class TwoAdmins(harness.IntegrationTest):

    def test_a_change_through_either_admin_is_applied_once(self):
        c = self.cluster(2, mode="shenyu", hold=5)
        d = self.daemon(c.config(log_level="debug", retry=(3, "300ms", "2s")))
        synclog.wait_synced(d, c[0])
        harness.wait_until(lambda: all(e.state()["held"] >= 1 for e in c.emulators),
                           message="both pollers holding")
        before = d.status()["servers"]
        versions = c.upsert("RULE", synclog.rule("both"))
        self.assertEqual(versions[0]["md5"], versions[1]["md5"])
        # Both pollers fetched it; the store took it from one and left the other alone.
        fetched = lambda doc: all(s["fetches"] > b["fetches"]  # noqa: E731
                                  for s, b in zip(doc["servers"], before))
        d.wait_status(harness.all_of(harness.holds("RULE", versions[0]["md5"]), fetched),
                      "RULE fetched through both admins")
        time.sleep(0.3)
        after = d.status()["servers"]
        self.assertEqual(sum(s["changes"] for s in after) - sum(b["changes"] for b in before),
                         1, after)

        # Either admin alone is enough: stop the first, change through the second.
        c[0].stop()
        v = c[1].upsert("RULE", synclog.rule("second-only"))
        synclog.holds(d, "RULE", v, c[1].url)
        self.assertTrue(d.alive())

    def test_first_server_down_at_startup_fetches_from_the_second(self):
        emu = self.emulator(mode="shenyu", hold=5)
        dead = "http://127.0.0.1:%d" % harness.free_port()
        cfg = harness.make_config([dead, emu.url], groups=emu.groups, username=emu.username,
                                  password=emu.password, log_level="info",
                                  retry=(3, "300ms", "5s"))
        d = self.daemon(cfg)
        synclog.wait_synced(d, emu, url=emu.url)
        # no /status field reports this: the start-up fetch is in no per-server counter
        d.wait_log(r"startup: server %s: .*\[connect\]; trying the next server, %s"
                   % (dead, emu.url), stream=None)
        self.assertEqual(len(emu.requests("fetch")), 1)
        # The poller of the dead server reports, the other one polls on.
        d.wait_status(harness.conn_failing(dead, 1, "connect"), "the dead server's poller failing")
        v = emu.upsert("RULE", synclog.rule("after-start"))
        synclog.holds(d, "RULE", v, emu.url)


class LaggingAdmin(harness.IntegrationTest):

    def test_lagging_admin_cannot_roll_back_nor_storm(self):
        c = self.cluster(2, mode="shenyu", hold=5)
        d = self.daemon(c.config(log_level="debug", retry=(3, "500ms", "5s")))
        synclog.wait_synced(d, c[0])
        # Both pollers hold a listener before the lag begins: a first poll that arrives
        # after it (a slow machine) would find the lag before the mark below.
        for emu in c:
            harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        held = c[0].group("RULE")
        # The second admin stops catching up and serves an older RULE.
        c[1].lag(groups=["RULE"], back=0)
        lagged = c[1].state()["groups"]["RULE"]["served"]
        self.assertNotEqual(lagged["md5"], held["md5"])
        self.assertLess(lagged["lastModifyTime"], held["lastModifyTime"])
        c[1].reset_requests()
        mark = d.mark()
        st = d.status()
        base, taken = harness.connection(st, c[1].url), harness.changes(st)
        # Wake its held poll: from now on it answers every poll at once ("RULE changed").
        c[1].notify("RULE")
        # It fetched the older RULE and the store kept what it held.
        doc = d.wait_status(lambda doc: harness.connection(doc, c[1].url)["fetches"]
                            > base["fetches"], "a fetch from the lagging admin")
        self.assertEqual(harness.held(doc, "RULE")["md5"], held["md5"])
        self.assertEqual(harness.connection(doc, c[1].url)["changes"], base["changes"])
        # log wording is the behaviour here: the warning an operator must see
        d.wait_log(r"poller: server %s serves older data than held" % c[1].url, since=mark,
                   stream=None)
        t0 = time.monotonic()
        time.sleep(3.0)
        elapsed = time.monotonic() - t0
        # No roll-back ...
        st = d.status()
        self.assertEqual(harness.changes(st), taken)
        self.assertEqual(harness.held(st, "RULE")["md5"], held["md5"])
        # ... and no storm: one listener and one fetch per retry interval at most.
        listeners = len(c[1].requests("listener"))
        fetches = len(c[1].requests("fetch"))
        budget = int(elapsed / 0.5) + 3
        print("lagging admin over %.1fs: %d listener, %d fetch requests"
              % (elapsed, listeners, fetches))
        self.assertLessEqual(listeners, budget)
        self.assertLessEqual(fetches, budget)
        self.assertGreaterEqual(fetches, 3)  # it keeps checking whether it caught up
        gaps = [b["t"] - a["t"] for a, b in zip(c[1].requests("fetch"), c[1].requests("fetch")[1:])]
        self.assertTrue(all(g >= 0.45 for g in gaps), gaps)

        # Meanwhile a real change through the healthy admin is applied.
        v = c[0].upsert("RULE", synclog.rule("newer"))
        synclog.holds(d, "RULE", v, c[0].url)

        # Once it catches up (serves what we hold), it is held like any other.
        c[1].upsert("RULE", synclog.rule("newer"))
        c[1].lag_off()
        # no /status field reports this (a lagging admin is in no field)
        d.wait_log(r"poller: server %s caught up" % c[1].url, since=mark, timeout=10)
        self.assertEqual(harness.changes(d.status()) - taken, 1)   # the healthy admin's


if __name__ == "__main__":
    harness.main()
