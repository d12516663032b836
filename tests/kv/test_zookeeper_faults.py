#!/usr/bin/env python3
"""The ZooKeeper source's faults (issue 12) against a real 3-node ensemble: session
expiry (everything re-read on the new session), connection loss, the leader killed, the
whole ensemble restarted. Each time the agent recovers without a restart, and every
change published during or after the fault is delivered exactly once."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402
import kvcases  # noqa: E402
import harness  # noqa: E402
import publisher  # noqa: E402
import servers  # noqa: E402

SESSION = "2s"  # the agent's session timeout: expiry tests wait about this long


class ZooKeeperFaults(kvcases.FaultCases, harness.IntegrationTest):
    KIND = "zookeeper"

    @classmethod
    def setUpClass(cls):
        cls.server = servers.ZooKeeper(members=3).start()
        cls.client = cls.server.client()
        cls.store = publisher.ZkStore(cls.client)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    AGENT_SETTINGS = {"session_timeout": SESSION}

    def member_addresses(self):
        return self.server.servers

    def member_port(self, i):
        return self.server.client_port(i)

    # -------------------------------------------------------------- faults
    def test_session_expiry_rereads_everything_on_the_new_session(self):
        data, pub, a = self.start(61)
        old = a.wait_status(lambda d: kvagent.connection(d)["session"], "a session")
        sid = kvagent.connection(old)["session"]
        mark = len(a.applies())
        # the agent frozen past its session timeout; the admin writes meanwhile
        import os as _os
        import signal
        _os.kill(a.d.pid, signal.SIGSTOP)
        try:
            added = self.publish_new_rules(data, pub, 5)
            for _ in range(20):
                data.random_edit(pub)
            harness.wait_until(lambda: not self.server.session_alive(sid), timeout=kvcases.WAIT,
                               interval=0.1, message="the server to expire session %s" % sid)
        finally:
            _os.kill(a.d.pid, signal.SIGCONT)
        a.wait_converged()
        doc = a.wait_status(lambda d: kvagent.connection(d)["session"] not in (None, sid) and
                            kvagent.connection(d)["state"] == "connected", "a new session")
        self.assertTrue(self.server.session_alive(kvagent.connection(doc)["session"]))
        # the old session ended either way the agent can learn it: the server's "expired"
        # on reconnecting, or, when that answer is slower than the session timeout (a slow
        # sanitizer build on a busy machine), the agent's own give-up ("no server answered
        # for the session timeout", counted as a timeout): both start a new session
        errs = kvagent.connection(doc)["errors"]
        self.assertGreaterEqual(errs.get("session", 0) + errs.get("timeout", 0), 1, errs)
        still = [r for r in added if r in {x["id"] for x in data.items["RULE"]}]
        self.assertEqual(data.expected(), a.want())
        self.assert_added_once(a, "RULE", still, mark)
        # and it keeps watching on the new session
        more = self.publish_new_rules(data, pub, 2)
        a.wait_converged()
        self.assert_added_once(a, "RULE", more, mark)

    def test_connection_loss_keeps_the_session_and_loses_nothing(self):
        pxs = self.proxies()
        data, pub, a = self.start(62, servers_=[p.address for p in pxs])
        sid = a.wait_status(lambda d: kvagent.connection(d)["session"], "a session")
        sid = kvagent.connection(sid)["session"]
        mark = len(a.applies())
        for p in pxs:
            p.block()
        added = self.publish_new_rules(data, pub, 4)
        a.wait_status(lambda d: kvagent.connection(d)["state"] != "connected",
                      "the connection lost")
        for p in pxs:
            p.unblock()
        a.wait_converged()
        self.assert_added_once(a, "RULE", added, mark)
        doc = a.wait_status(lambda d: kvagent.connection(d)["state"] == "connected", "connected")
        self.assertEqual(sid, kvagent.connection(doc)["session"],
                         "a short connection loss must not cost the session")
        # reset (not a partition): the connection comes back at once
        for p in pxs:
            p.reset()
        more = self.publish_new_rules(data, pub, 3)
        a.wait_converged()
        self.assert_added_once(a, "RULE", more, mark)

    def test_leader_killed_a_new_leader_is_followed(self):
        data, pub, a = self.start(63)
        mark = len(a.applies())
        old = self.server.kill_leader()
        added = self.publish_new_rules(data, pub, 4)  # kazoo retries until a new quorum
        a.wait_converged()
        self.assertNotEqual(old, self.server.leader())
        self.server.start_member(old)
        added += self.publish_new_rules(data, pub, 2)
        a.wait_converged()
        self.assert_added_once(a, "RULE", added, mark)
        self.assertTrue(a.d.alive())

    def test_whole_ensemble_restart_is_followed(self):
        data, pub, a = self.start(64)
        mark = len(a.applies())
        for i in range(self.server.n):
            self.server.stop_member(i)
        a.wait_status(lambda d: kvagent.connection(d)["state"] != "connected",
                      "the connection lost")
        for i in range(self.server.n):
            self.server.start_member(i, wait=False)
        for i in range(self.server.n):
            self.server.wait_serving(i)
        added = self.publish_new_rules(data, pub, 4)
        for _ in range(10):
            data.random_edit(pub)
        a.wait_converged()
        still = [r for r in added if r in {x["id"] for x in data.items["RULE"]}]
        self.assert_added_once(a, "RULE", still, mark)
        self.assertTrue(a.d.alive())

    def test_the_member_in_use_killed_the_agent_moves_on(self):
        pxs = self.proxies()
        data, pub, a = self.start(65, servers_=[p.address for p in pxs])
        mark = len(a.applies())
        used = [i for i, p in enumerate(pxs) if p.open_connections()]
        self.assertTrue(used, "the agent holds no connection")
        for i in used:
            pxs[i].block()
            if i != self.server.leader():
                self.server.kill(i)
        added = self.publish_new_rules(data, pub, 3)
        a.wait_converged()
        self.assert_added_once(a, "RULE", added, mark)

    def test_servers_as_one_string_and_a_dead_first_member(self):
        # zookeeper.servers may be one "h1:p1,h2:p2" string; the first member is down
        self.server.kill(0)
        data, pub, a = self.start(66, servers_=self.server.connect_string)
        self.assertEqual(a.label, kvagent.connection(a.status())["url"])
        added = self.publish_new_rules(data, pub, 2)
        a.wait_converged()
        self.assert_added_once(a, "RULE", added)


if __name__ == "__main__":
    kvagent.main()
