#!/usr/bin/env python3
"""An admin that holds a poller without failing it (issue 20, items 4 and 6).

A reply trickled at 4 bytes a second is never silent, so a bound on silence alone let it
hold a poller for days: every transfer now has a deadline for the whole of it
(admin.transfer_timeout for fetch and login, read_timeout for the held listener), and a
trickled transfer fails, is logged with the server and groups, counted under `timeout`
and retried like any failure.

An admin whose listener keeps answering "RULE changed" while its fetch serves the version
already held had the poller ask as fast as it answered (58 listener+fetch pairs in 5 s,
logged at debug only): the poller now waits as after a failed try from the second such
poll in a row, and warns once per episode."""
import re
import time

import harness
import synclog


def metric(text, name, **labels):
    """The value of one series of a Prometheus text page (0 if absent)."""
    want = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        m = re.match(r"^%s\{(.*)\} (\S+)$" % re.escape(name), line)
        if m and ",".join(sorted(m.group(1).split(","))) == want:
            return float(m.group(2))
    return 0.0


class SlowAdmin(harness.IntegrationTest):

    def agent(self, emu, **kw):
        self.port = harness.free_port()
        admin_extra = dict(kw.pop("admin_extra", {}))
        cfg = emu.config(retry=kw.pop("retry", (3, "100ms", "1s")),
                         status={"listen": "127.0.0.1:%d" % self.port},
                         admin_extra=admin_extra, **kw)
        return self.daemon(cfg)

    def metrics(self):
        st, _, body = harness.http_request("GET", "http://127.0.0.1:%d/metrics" % self.port)
        self.assertEqual(st, 200)
        return body.decode("utf-8")

    def test_a_trickled_fetch_fails_at_its_deadline_and_is_retried(self):
        emu = self.emulator(hold=1)
        d = self.agent(emu, admin_extra={"transfer_timeout": "2s"})
        d.wait_status(harness.holds("RULE"), timeout=20)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        emu.fault("trickle", endpoint="fetch", rate=4, count=1)
        t0 = time.monotonic()
        v = emu.upsert("RULE", synclog.rule("trickled-1"))
        doc = d.wait_status(harness.conn_errors(emu.url, "timeout"), "a fetch past its deadline")
        self.assertRegex(harness.connection(doc, emu.url)["lastError"],
                         r"fetch of RULE: GET /configs/fetch: not complete after 2000 ms, the "
                         r"whole transfer's limit \(transfer_timeout\): \d+ bytes had arrived")
        synclog.holds(d, "RULE", v, timeout=30)
        self.assertLess(time.monotonic() - t0, 20)  # seconds, not days
        url = emu.url
        self.assertGreaterEqual(metric(self.metrics(), "gwsync_errors_total", server=url,
                                       reason="timeout"), 1)

    def test_a_trickled_login_and_listener_fail_and_are_retried(self):
        emu = self.emulator(hold=1)
        d = self.agent(emu, hold="1s", read_timeout="3s",
                       admin_extra={"transfer_timeout": "2s"})
        d.wait_status(harness.holds("RULE"), timeout=20)
        # the listener, held then trickled: read_timeout bounds it whole
        emu.fault("trickle", endpoint="listener", rate=4, count=1)
        doc = d.wait_status(harness.conn_errors(emu.url, "timeout"), "a listener timed out")
        self.assertIn("POST /configs/listener: timed out",
                      harness.connection(doc, emu.url)["lastError"])
        # a login trickled: transfer_timeout
        emu.fault("trickle", endpoint="login", rate=4, count=1)
        emu.expire_tokens()
        v = emu.upsert("RULE", synclog.rule("trickled-2"))
        doc = d.wait_status(harness.conn_errors(emu.url, "timeout", 2), "a login timed out")
        self.assertIn("POST /platform/login: not complete after 2000 ms",
                      harness.connection(doc, emu.url)["lastError"])
        synclog.holds(d, "RULE", v, timeout=30)
        self.assertGreaterEqual(metric(self.metrics(), "gwsync_errors_total", server=emu.url,
                                       reason="timeout"), 2)

    def test_a_listener_that_keeps_saying_changed_is_paced_and_warned_once(self):
        emu = self.emulator(hold=1)
        d = self.agent(emu, retry=(3, "500ms", "2s"))
        d.wait_status(harness.holds("RULE"), timeout=20)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        mark = d.mark()
        emu.reset_requests()
        emu.fault("changed", endpoint="listener", groups=["RULE"])
        time.sleep(4.0)
        listens = len(emu.requests("listener"))
        fetches = len(emu.requests("fetch"))
        # paced: two at once, then 500 ms, 500 ms, 2 s... (unpaced: hundreds)
        self.assertLessEqual(listens, 10, "%d listener calls in 4 s" % listens)
        self.assertGreaterEqual(listens, 3)
        self.assertLessEqual(fetches, listens + 1)  # + the poll held when the fault came
        warned = [t for t in d.lines(since=mark) if "keeps answering" in t]
        self.assertEqual(len(warned), 1, "\n".join(d.lines(since=mark)))
        self.assertRegex(warned[0], r"warn  poller: server %s: the listener keeps answering "
                         r"that RULE changed, but the fetch serves the version already held "
                         r"\([0-9a-f]{32}\): polling this server as after a failed try"
                         % re.escape(emu.url))
        # the admin heals: a real change arrives, and the episode ends
        emu.clear_faults()
        v = emu.upsert("RULE", synclog.rule("after-the-episode"))
        synclog.holds(d, "RULE", v, timeout=20)
        # no /status field reports this: the end of a listener/fetch disagreement
        d.wait_log(r"info  poller: server %s: its listener and fetch agree again"
                   % re.escape(emu.url), since=mark, timeout=20)
        # a second episode warns again, once
        mark = d.mark()
        emu.fault("changed", endpoint="listener", groups=["RULE"])
        # log wording is the behaviour here: the warning, once per episode
        d.wait_log(r"keeps answering", since=mark, timeout=20)
        time.sleep(2.0)
        self.assertEqual(len([t for t in d.lines(since=mark) if "keeps answering" in t]), 1)

    def test_one_notify_of_identical_data_is_not_paced(self):
        # an admin wakes its listeners when an update wrote identical data: one poll that
        # brings nothing new is normal and costs no wait
        emu = self.emulator(hold=1)
        d = self.agent(emu, retry=(3, "5s", "10s"))
        d.wait_status(harness.holds("RULE"), timeout=20)
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        mark = d.mark()
        emu.notify("RULE")
        time.sleep(0.3)
        v = emu.upsert("RULE", synclog.rule("right-after"))
        t0 = time.monotonic()
        synclog.holds(d, "RULE", v, timeout=20)
        self.assertLess(time.monotonic() - t0, 4.0)
        d.assert_no_log(r"keeps answering", since=mark)


if __name__ == "__main__":
    harness.main()
