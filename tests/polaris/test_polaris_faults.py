#!/usr/bin/env python3
"""The Polaris source against a hostile or broken Polaris (the bad-input matrix of the other
sources): bodies that are not JSON, invalid UTF-8, huge and deep JSON, an HTTP 500, a
trickled answer, a flood, on the file reads and on the watch. Each time the failure is
counted under its reason and logged naming the server and the groups, the last good
data stays, and the agent converges once the server behaves. One emulator for the file
(setUpClass), an agent per case."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import polagent  # noqa: E402
import harness  # noqa: E402
import polpub  # noqa: E402

NS = polpub.DEFAULT_NAMESPACE
GET = "GetConfigFile"
WATCH = "WatchConfigFile"


class PolarisFaults(harness.IntegrationTest):
    @classmethod
    def setUpClass(cls):
        cls.emu = polagent.emulator.PolarisEmulator(hold=3.0).start()

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()

    def setUp(self):
        self.emu.clear_faults()
        self.pub = polpub.Publisher(self.emu, group="faults-%s" % self.id().rsplit(".", 1)[-1],
                                    shenyu_ns=NS)
        self.data = polpub.RandomData(seed=31, namespace=NS)
        self.pub.sync_all(self.data.items)
        self.a = polagent.Agent(self, self.pub, [self.emu.url], max_response="4MiB",
                                transfer_timeout="2s")
        self.a.wait_converged()
        self.a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] > 0, "watching")

    def errors(self):
        return self.a.conn()["errors"]

    def survive(self, kind, path, reason, count=2, **params):
        """Misbehave on the next `count` requests of `path` while a rule changes: the
        failure is counted under `reason` and logged naming the server and the groups;
        what was held stays until the server behaves, then the change arrives."""
        before = self.errors()[reason]
        held = self.a.items("RULE")
        self.emu.fault(kind, count=count, path=path, **params)
        rule = self.data.changed("RULE", self.data.items["RULE"][0])
        self.pub.write("RULE", rule)
        self.data.items["RULE"][0] = rule
        self.a.wait_status(lambda d: polagent.kvagent.connection(d)["errors"][reason] > before,
                           "a %s failure" % reason)
        # the last good version is still what the subscribers hold, whole
        now = self.a.items("RULE")
        self.assertTrue(now == held or now == self.pub.published()["RULE"])
        self.assertEqual(len(held), len(now))
        line = self.a.d.wait_log(r"\[%s\]" % reason).string
        self.assertIn(self.emu.url, line)
        self.assertIn("default/%s" % self.pub.group, line)
        self.a.wait_converged()
        self.assertIn(polpub.item_key("RULE", rule), self.a.items("RULE"))

    def test_a_read_answered_with_html(self):
        self.survive("non_json", GET, "parse")

    def test_a_read_answered_with_invalid_utf8(self):
        self.survive("bad_utf8", GET, "parse")

    def test_a_read_answered_with_deep_json(self):
        self.survive("deep", GET, "parse", depth=50000)

    def test_a_read_answered_with_huge_json(self):
        self.survive("huge", GET, "too_large", size=6 << 20)

    def test_a_read_answered_with_http_500(self):
        self.survive("http500", GET, "http")

    def test_a_trickled_read_times_out(self):
        self.survive("trickle", GET, "timeout", count=1, delay=0.05)

    def test_a_watch_answered_with_html(self):
        self.survive("non_json", WATCH, "parse")

    def test_a_watch_flooded(self):
        self.survive("flood", WATCH, "too_large", size=64 << 20)

    def test_a_watch_answered_with_deep_json(self):
        self.survive("deep", WATCH, "parse", depth=50000)

    def test_a_watch_refused_by_code(self):
        # a Polaris error code in a well-formed answer (an HTTP 400 with code 400001)
        self.survive("http500", WATCH, "http")

    def test_a_watch_that_is_not_held_is_paced(self):
        # a server (or a proxy) answering "no change" at once: one watch a second, not a
        # busy loop; changes still arrive
        mark = self.emu.mark()
        self.emu.fault("nohold", count=1000, path=WATCH)
        harness.wait_until(lambda: len(self.emu.since(mark, "watch")) >= 2, timeout=10,
                           message="watches")
        t0 = self.emu.mark()
        time.sleep(3.0)
        n = len(self.emu.since(t0, "watch"))
        self.assertLessEqual(n, 5, "%d watches in 3 s" % n)
        self.assertGreaterEqual(n, 2)
        rule = self.data.changed("RULE", self.data.items["RULE"][0])
        self.pub.write("RULE", rule)
        self.a.wait_converged()
        self.assertEqual(0, sum(self.errors().values()))


if __name__ == "__main__":
    polagent.kvagent.main()
