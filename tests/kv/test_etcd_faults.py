#!/usr/bin/env python3
"""The etcd source's faults (issue 12) against a real 3-member cluster: the watch
cancelled by compaction (compact_revision: everything re-read from a fresh revision),
connection loss, the endpoint in use failing, the leader killed, the whole cluster
restarted. Each time the agent recovers without a restart, and every change published
during or after the fault is delivered exactly once."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402
import kvcases  # noqa: E402
import harness  # noqa: E402
import publisher  # noqa: E402
import servers  # noqa: E402


class EtcdFaults(kvcases.FaultCases, harness.IntegrationTest):
    KIND = "etcd"

    @classmethod
    def setUpClass(cls):
        cls.server = servers.Etcd(members=3).start()
        cls.store = publisher.EtcdStore(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def member_addresses(self):
        return self.server.endpoints

    def member_port(self, i):
        return self.server.ports[i][0]

    # -------------------------------------------------------------- faults
    def test_compaction_while_away_rereads_from_a_fresh_revision(self):
        px = self.proxies()[0]
        data, pub, a = self.start(71, servers_=[px.url])
        mark = len(a.applies())
        px.block()
        a.wait_status(lambda d: kvagent.connection(d)["state"] != "connected",
                      "the connection lost")
        added = self.publish_new_rules(data, pub, 4)
        for _ in range(20):
            data.random_edit(pub)
        rev = self.server.compact()
        px.unblock()
        a.wait_converged()
        still = [r for r in added if r in {x["id"] for x in data.items["RULE"]}]
        self.assert_added_once(a, "RULE", still, mark)
        a.wait_status(lambda d: kvagent.connection(d)["revision"] >= rev,
                      "the revision past the compaction")
        # and it watches on from there
        more = self.publish_new_rules(data, pub, 2)
        a.wait_converged()
        self.assert_added_once(a, "RULE", more, mark)
        self.assertTrue(a.d.alive())
        # the fault really was the one meant: a watch refused for a compacted revision
        conn = kvagent.connection(a.status())
        self.assertGreaterEqual(conn["errors"]["session"], 1, conn)
        self.assertIn("compact", conn["lastError"])

    def test_compaction_of_a_live_watch_loses_nothing(self):
        data, pub, a = self.start(72)
        mark = len(a.applies())
        for _ in range(3):
            added = self.publish_new_rules(data, pub, 2)
            self.server.compact()
            a.wait_converged()
            self.assert_added_once(a, "RULE", added, mark)

    def test_connection_loss_loses_nothing(self):
        pxs = self.proxies()
        data, pub, a = self.start(73, servers_=[p.url for p in pxs])
        mark = len(a.applies())
        for p in pxs:
            p.block()
        a.wait_status(lambda d: kvagent.connection(d)["state"] != "connected",
                      "the connection lost")
        added = self.publish_new_rules(data, pub, 4)
        for p in pxs:
            p.unblock()
        a.wait_converged()
        for p in pxs:
            p.reset()
        added += self.publish_new_rules(data, pub, 3)
        a.wait_converged()
        self.assert_added_once(a, "RULE", added, mark)

    def test_the_endpoint_in_use_failing_the_agent_moves_on(self):
        pxs = self.proxies()
        data, pub, a = self.start(74, servers_=[p.url for p in pxs])
        mark = len(a.applies())
        doc = a.wait_status(lambda d: kvagent.connection(d)["session"], "an endpoint in use")
        used = kvagent.connection(doc)["session"]
        self.assertIn(used, [p.url for p in pxs])
        i = [p.url for p in pxs].index(used)
        pxs[i].block()
        added = self.publish_new_rules(data, pub, 3)
        a.wait_converged()
        doc = a.wait_status(lambda d: kvagent.connection(d)["session"] not in (None, used),
                            "another endpoint in use")
        self.assert_added_once(a, "RULE", added, mark)

    def test_leader_killed_a_new_leader_is_followed(self):
        data, pub, a = self.start(75)
        mark = len(a.applies())
        old = self.server.kill_leader()
        added = self.publish_new_rules(data, pub, 4)
        a.wait_converged()
        self.assertNotEqual(old, self.server.leader())
        self.server.start_member(old)
        added += self.publish_new_rules(data, pub, 2)
        a.wait_converged()
        self.assert_added_once(a, "RULE", added, mark)

    def test_whole_cluster_restart_is_followed(self):
        data, pub, a = self.start(76)
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


if __name__ == "__main__":
    kvagent.main()
