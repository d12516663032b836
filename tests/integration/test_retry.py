#!/usr/bin/env python3
"""Retries and backoff (issue 3): tries come in rounds of retry.attempts spaced by
retry.interval, a whole failed round waits retry.backoff, a success resets the count; a
failed fetch after the listener answered is a failed try too. Spacing is measured from
the emulator's request log."""
import time

import harness
import synclog

INTERVAL, BACKOFF = 0.3, 1.5


class Retry(harness.IntegrationTest):

    def assertGap(self, gap, want, what):
        # Never early; late by at most a scheduling hiccup.
        self.assertGreaterEqual(gap, want - 0.03, "%s: %.3fs, want %.1fs" % (what, gap, want))
        self.assertLess(gap, want + 0.35, "%s: %.3fs, want %.1fs" % (what, gap, want))

    def test_rounds_of_tries_then_backoff_then_recovery(self):
        emu = self.emulator(mode="shenyu", hold=2)
        d = self.daemon(emu.config(log_level="info", retry=(3, "300ms", "1500ms")))
        synclog.wait_synced(d, emu)
        # The poller's first listener must be held before the fault: on a slow machine
        # (TSan, load) it can arrive after it, and a failed try before reset_requests()
        # shifts the rounds by one.
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        emu.fault("http", status=503, endpoint="listener")
        emu.reset_requests()
        # The held listener returns within the hold; from then on every one fails.
        harness.wait_until(lambda: len(emu.requests("listener")) >= 7, timeout=15,
                           message="7 failing listener requests")
        times = [r["t"] for r in emu.requests("listener")]
        self.assertEqual(emu.requests("listener")[0]["status"], 503)
        gaps = [b - a for a, b in zip(times, times[1:])][:6]
        want = [INTERVAL, INTERVAL, BACKOFF, INTERVAL, INTERVAL, BACKOFF]
        print("gaps between failing listener requests: %s s"
              % ", ".join("%.3f" % g for g in gaps))
        for i, (g, w) in enumerate(zip(gaps, want)):
            self.assertGap(g, w, "gap %d" % (i + 1))
        doc = d.wait_status(harness.all_of(harness.conn_errors(emu.url, "http", 6),
                                           harness.conn_failing(emu.url, 6, "http")),
                            "two failed rounds of HTTP 503")
        self.assertIn("HTTP 503", harness.connection(doc, emu.url)["lastError"])
        self.assertEqual(emu.requests("fetch"), [])  # a failed poll fetches nothing

        emu.clear_faults()
        d.wait_status(harness.conn_recovered(emu.url), "polling again", timeout=10)
        v = emu.upsert("RULE", synclog.rule("recovered"))
        synclog.holds(d, "RULE", v, emu.url)

    def test_a_sidecar_started_before_its_admin_waits_the_startup_backoff(self):
        # No admin and no snapshot at start: the 5-minute backoff would leave the agent
        # unready for minutes after the admin comes up; retry.startup_backoff caps it.
        port = harness.free_port()
        cfg = harness.make_config(["http://127.0.0.1:%d" % port], groups=harness.SHENYU_GROUPS,
                                  username="admin", password="123456", log_level="info",
                                  retry={"attempts": 2, "interval": "200ms", "backoff": "5m",
                                         "startup_backoff": "1s"})
        d = self.daemon(cfg)
        d.wait_status(harness.conn_state("http://127.0.0.1:%d" % port, "backing_off"),
                      "a failed round")
        emu = self.emulator(start=False, mode="shenyu", hold=2)
        emu.port = port
        emu.start()
        synclog.wait_synced(d, emu, timeout=10)

    def test_a_failed_fetch_is_a_failed_try(self):
        emu = self.emulator(mode="shenyu", hold=5)
        d = self.daemon(emu.config(log_level="info", retry=(3, "300ms", "1500ms")))
        synclog.wait_synced(d, emu)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        emu.fault("code", code=500, endpoint="fetch", count=2)
        emu.reset_requests()
        v = emu.upsert("RULE", synclog.rule("after-fetch-faults"))
        doc = synclog.holds(d, "RULE", v, emu.url)
        self.assertEqual(harness.connection(doc, emu.url)["errors"]["code"], 2, doc)
        self.assertIn("fetch of RULE", harness.connection(doc, emu.url)["lastError"])
        fetches = emu.requests("fetch")
        self.assertEqual([f["code"] for f in fetches], [500, 500, 200])
        for a, b in zip(fetches, fetches[1:]):
            self.assertGap(b["t"] - a["t"], INTERVAL, "fetch retry")
        # The listener answered at once each time (our md5 still differs), no storm: one
        # listener request per failed fetch, plus the next held poll once it has arrived
        # (the count is read while that one may still be on its way).
        self.assertIn(len(emu.requests("listener")), (2, 3))

    def test_refused_data_is_a_failed_try_and_the_last_good_version_stays(self):
        emu = self.emulator(mode="shenyu", hold=5)
        d = self.daemon(emu.config(log_level="info", retry=(3, "300ms", "1500ms")))
        synclog.wait_synced(d, emu)
        held = emu.group("RULE")
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        emu.fault("bad_item", endpoint="fetch", count=1)
        v = emu.upsert("RULE", synclog.rule("bad-then-good"))
        doc = d.wait_status(harness.conn_errors(emu.url, "fetch"), "a refused fetch")
        self.assertEqual(harness.held(doc, "RULE")["md5"], held["md5"])
        self.assertIn("fetch of RULE", harness.connection(doc, emu.url)["lastError"])
        self.assertNotEqual(held["md5"], v["md5"])
        synclog.holds(d, "RULE", v, emu.url)

    def test_oversized_reply_is_refused_and_recovered_from(self):
        emu = self.emulator(mode="shenyu", hold=5)
        d = self.daemon(emu.config(log_level="info", retry=(3, "300ms", "1500ms"),
                                   max_response="1MiB"))
        synclog.wait_synced(d, emu)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        emu.fault("oversize", endpoint="fetch", bytes=3 * 1024 * 1024, count=1)
        v = emu.upsert("RULE", synclog.rule("after-oversize"))
        doc = d.wait_status(harness.conn_errors(emu.url, "too_large"), "an oversized reply")
        self.assertIn("admin.max_response (1048576 bytes)",
                      harness.connection(doc, emu.url)["lastError"])
        synclog.holds(d, "RULE", v, emu.url)


if __name__ == "__main__":
    harness.main()
