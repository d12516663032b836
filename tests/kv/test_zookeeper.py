#!/usr/bin/env python3
"""The ZooKeeper source (issue 12) against a real standalone ZooKeeper server (Debian's
package), written to as ShenYu's admin writes: every case of kvcases.KvCases, plus what
only ZooKeeper has (parents without data, the session id in /status)."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402
import kvcases  # noqa: E402
import harness  # noqa: E402
import proxy  # noqa: E402
import publisher  # noqa: E402
import servers  # noqa: E402


class ZooKeeperSource(kvcases.KvCases, harness.IntegrationTest):
    KIND = "zookeeper"
    SHORT_TRIES = {"session_timeout": "2s"}

    @classmethod
    def setUpClass(cls):
        cls.server = servers.ZooKeeper().start()
        cls.client = cls.server.client()
        cls.store = publisher.ZkStore(cls.client)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def server_addresses(self):
        return self.server.servers

    def proxy(self, make_filter=None):
        px = proxy.Proxy(self.server.client_port(0), make_filter=make_filter)
        self.addCleanup(px.close)
        return px, px.address

    def losing_proxy(self, pub):
        px, state = proxy.zk_event_dropper(self.server.client_port(0))
        self.addCleanup(px.close)
        return px, px.address, state, lambda: state.update(dropping=True), \
            lambda: state["dropped"]

    def check_session(self, session):
        self.assertRegex(session or "", r"^0x[0-9a-f]+$")
        self.assertTrue(self.server.session_alive(session), session)

    # -------------------------------------------------------------- ZooKeeper only
    def test_data_on_a_parent_node_is_an_item_and_empty_parents_are_not(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=51, namespace=ns)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        # an empty node under a group (as Curator leaves parents) is no item
        self.client.ensure_path(pub.dir("RULE") + "/someplugin/empty")
        # metaData nests by path: an item at /a/b and another at /a/b/c are both items
        outer = dict(data.new_meta(), path="/nest/outer")
        inner = dict(data.new_meta(), path="/nest/outer/inner")
        pub.write("META_DATA", inner)
        pub.write("META_DATA", outer)
        a.wait_converged()
        items = kvagent.file_items(a.files, "META_DATA")
        self.assertIn(outer["id"], items)
        self.assertIn(inner["id"], items)
        # deleting the outer meta path deletes the nested one with it (recursive delete)
        pub.delete("META_DATA", outer)
        a.wait_converged()
        self.assertNotIn(inner["id"], kvagent.file_items(a.files, "META_DATA"))

    def test_selectors_created_again_while_their_plugin_directory_was_found_gone_arrive(self):
        # The order that once lost a selector in the 200 random edits (under TSan, with
        # the agent's reads lagging behind the admin), made exact by holding the agent's
        # reads at a proxy: a child event on a plugin's selector directory is answered
        # after a REFRESH deleted the directory ("no node": the directory and its known
        # selectors are forgotten), then each selector's delete event re-reads the
        # selector after the REFRESH created it again, and last the directory's own delete
        # event removes the directory's subtree from the mirror and walks it again. Every
        # selector must be read again by that walk, not skipped as already known.
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=61, namespace=ns)
        pub.sync_all(data.items)
        gate = proxy.ZkRequestGate()
        px, addr = self.proxy(make_filter=gate.filter)
        self.addCleanup(gate.open)  # before the proxy closes (cleanups run last first)
        a = self.agent(pub, namespace=ns, servers_=[addr])
        a.wait_converged()
        plugin = next(p["name"] for p in data.items["PLUGIN"]
                      if any(s["pluginName"] == p["name"] for s in data.items["SELECTOR"]))
        mine = [s for s in data.items["SELECTOR"] if s["pluginName"] == plugin]
        pdir = "%s/%s" % (pub.dir("SELECTOR"), plugin)

        gate.close()
        extra = data.new_selector(next(p for p in data.items["PLUGIN"]
                                       if p["name"] == plugin))
        pub.write("SELECTOR", extra)  # a child event on the directory: its list is read
        gate.wait_held(gate.GET_CHILDREN2, pdir)
        pub.store.delete_tree(pdir)  # a REFRESH begins: selectors, then the directory
        gate.step()  # the list read finds the directory gone
        gate.wait_held(gate.GET_DATA, pdir + "/")  # a selector's delete event re-reads it
        # the REFRESH ends: every selector created again, edited (so nothing the agent held
        # before already equals the result)
        fresh = [data.changed("SELECTOR", s) for s in mine]
        pub.write_many("SELECTOR", fresh)
        data.items["SELECTOR"] = [s for s in data.items["SELECTOR"]
                                  if s["pluginName"] != plugin] + fresh
        gate.open()
        self.sentinel(a, data, 0)  # every event before it has been applied and offered
        self.assertEqual(data.expected(), a.want())
        a.wait_converged()
        self.assertEqual(set(kvagent.file_items(a.files, "SELECTOR")),
                         {s["id"] for s in data.items["SELECTOR"]})

    def test_a_session_id_is_shown_and_the_server_holds_it(self):
        ns, pub = self.new_publisher()
        a = self.agent(pub, namespace=ns)
        a.wait_converged({g: {} for g in publisher.KV_GROUPS})
        doc = a.wait_status(lambda d: kvagent.connection(d)["session"], "a session")
        sid = kvagent.connection(doc)["session"]
        self.assertTrue(re.match(r"^0x[0-9a-f]+$", sid), sid)
        self.assertTrue(self.server.session_alive(sid))
        a.d.stop()
        # a clean stop closes the session rather than leaving it to expire
        harness.wait_until(lambda: not self.server.session_alive(sid), timeout=10,
                           message="the session closed")


if __name__ == "__main__":
    kvagent.main()
