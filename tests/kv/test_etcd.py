#!/usr/bin/env python3
"""The etcd source (issue 12) against a real etcd server (Debian's etcd-server 3.4),
written to through the v3 JSON gateway as ShenYu's admin (jetcd) writes: every case of
kvcases.KvCases, plus what only etcd has (prefix deletes, the endpoint in /status)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402
import kvcases  # noqa: E402
import harness  # noqa: E402
import proxy  # noqa: E402
import publisher  # noqa: E402
import servers  # noqa: E402


class EtcdSource(kvcases.KvCases, harness.IntegrationTest):
    KIND = "etcd"

    @classmethod
    def setUpClass(cls):
        cls.server = servers.Etcd().start()
        cls.store = publisher.EtcdStore(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def server_addresses(self):
        return self.server.endpoints

    def proxy(self, make_filter=None):
        px = proxy.Proxy(self.server.ports[0][0], make_filter=make_filter)
        self.addCleanup(px.close)
        return px, px.url

    def losing_proxy(self):
        px, state = proxy.etcd_watch_blinder(self.server.ports[0][0])
        state["blind"] = True  # set before the agent opens its watches
        self.addCleanup(px.close)
        # the watch is blind from the start; "armed" is a no-op, and what the agent missed
        # is every change once a blinded watch exists
        return px, px.url, state, lambda: None, lambda: state["blinded"]

    def check_session(self, session):
        self.assertIn(session, self.server.endpoints)

    # -------------------------------------------------------------- etcd only
    def test_a_prefix_delete_removes_every_key_below_it(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=52, namespace=ns)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        pub.store.delete_tree(pub.dir("RULE") + "/")
        a.wait_converged({"RULE": {}})

    def test_keys_next_to_the_root_are_not_read(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=53, namespace=ns)
        pub.sync_all(data.items)
        # "/ns/shenyu/pluginX/..." and "/ns/shenyuX/plugin/..." share a prefix only
        pub.write_raw(pub.root + "/pluginX/foo", publisher.gson(data.new_plugin()))
        pub.write_raw(pub.root + "X/plugin/foo", publisher.gson(data.new_plugin()))
        self.addCleanup(pub.store.delete_tree, pub.root + "X/")
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        self.assertEqual(len(data.items["PLUGIN"]), len(kvagent.file_items(a.files, "PLUGIN")))


if __name__ == "__main__":
    kvagent.main()
