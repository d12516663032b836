#!/usr/bin/env python3
"""Shutdown and request discipline (issue 3): SIGTERM ends the daemon in well under a
second (exit code 0) even while the admin holds its polls or a poller waits out a
backoff; and a quiet admin sees exactly one held listener per cycle, a change exactly one
fetch, never a successful poll repeated (apache/shenyu#6523)."""
import signal
import time

import harness
import synclog


class Shutdown(harness.IntegrationTest):

    def test_sigterm_while_polls_are_held(self):
        c = self.cluster(2, mode="shenyu", hold=60)
        d = self.daemon(c.config(log_level="info"))
        synclog.wait_synced(d, c[0])
        harness.wait_until(lambda: all(e.state()["held"] >= 1 for e in c.emulators),
                           message="both polls held")
        rc, elapsed = d.stop(signal.SIGTERM)
        print("SIGTERM with two held polls: exit %s after %.0f ms" % (rc, elapsed * 1000))
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)
        # no /status field reports this: the agent has exited
        d.wait_log(r"poller: server %s: long polling stopped" % c[1].url, timeout=1)

    def test_sigint_while_backing_off(self):
        emu = self.emulator(mode="shenyu", hold=60)
        emu.fault("http", status=502, endpoint="listener")
        d = self.daemon(emu.config(log_level="info", retry=(1, "100ms", "5m")))
        d.wait_status(harness.all_of(harness.conn_state(emu.url, "backing_off"),
                                     harness.conn_errors(emu.url, "http")), "backing off")
        rc, elapsed = d.stop(signal.SIGINT)
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)

    def test_sigterm_while_an_admin_is_slow_to_answer(self):
        emu = self.emulator(mode="shenyu", hold=2)
        d = self.daemon(emu.config(log_level="info"))
        synclog.wait_synced(d, emu)
        emu.fault("delay", seconds=30, endpoint="listener")
        harness.wait_until(lambda: any(r.get("faults") for r in emu.requests("listener")),
                           message="a delayed listener")
        rc, elapsed = d.stop(signal.SIGTERM)
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)


class RequestDiscipline(harness.IntegrationTest):

    def test_one_request_per_cycle(self):
        emu = self.emulator(mode="shenyu", hold=1)
        d = self.daemon(emu.config(log_level="info"))
        synclog.wait_synced(d, emu)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        emu.reset_requests()
        time.sleep(3.5)
        listeners = emu.requests("listener")
        print("quiet admin, hold 1 s, 3.5 s: %d listener requests" % len(listeners))
        # One held poll per second; never an immediate repeat of a successful poll.
        self.assertIn(len(listeners), (3, 4))
        done = [r for r in listeners if "answer" in r]  # the last one may be in flight
        self.assertGreaterEqual(len(done), 2)
        for r in done:
            self.assertEqual(r["answer"], [])
            self.assertGreaterEqual(r["held_ms"], 900)
        self.assertEqual(emu.requests("fetch"), [])
        self.assertEqual(emu.requests("login"), [])
        # All on one kept-alive connection.
        self.assertEqual(len({r["conn"] for r in listeners}), 1)

        emu.reset_requests()
        v = emu.upsert("SELECTOR", {"id": "s-new", "pluginName": "divide", "name": "new",
                                    "enabled": True, "conditionList": []})
        synclog.holds(d, "SELECTOR", v, emu.url)
        time.sleep(1.5)
        fetches = emu.requests("fetch")
        self.assertEqual(len(fetches), 1)
        self.assertEqual(fetches[0]["groups"], ["SELECTOR"])
        # The held poll woken by the change (logged before the reset) was followed by
        # held polls only: nothing answered at once, nothing repeated.
        listeners = emu.requests("listener")
        self.assertLessEqual(len(listeners), 3)
        for r in listeners:
            self.assertEqual(r.get("answer", []), [])


if __name__ == "__main__":
    harness.main()
