#!/usr/bin/env python3
"""The path-store test infrastructure checked on its own (no agent): the servers start and
answer, and the publisher's writes read back from each store exactly as ShenYu's admin
lays them out (PROTOCOL-PUSH.md 2.1, 2.2, 3.1): the paths of every group, the 2.7
namespace prefix and nested metaData, the 2.6 URL-encoded metaData, Gson's escapes and
omitted nulls, ZooKeeper parents without data, REFRESH clearing only the first item's
plugin, a PLUGIN delete taking its selectors and rules along; plus the fault helpers
(compaction, leader lookup). If these fail, the agent tests prove nothing."""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402  (puts tests/integration on the path)
import publisher  # noqa: E402
import servers  # noqa: E402

NS = "ns-infra"


class Layout:
    """Cases for both stores; the subclass sets up cls.store (a publisher store)."""

    def pub(self, root, layout="2.7"):
        p = publisher.Publisher(self.store, root, layout)
        self.addCleanup(p.wipe)
        return p

    def test_every_group_is_written_where_the_admin_writes_it(self):
        data = publisher.RandomData(seed=3, namespace=NS)
        p = self.pub("/%s/shenyu" % NS)
        p.sync_all(data.items)
        nodes = p.nodes()
        root = "/%s/shenyu" % NS
        sel = data.items["SELECTOR"][0]
        rule = data.items["RULE"][0]
        meta = data.items["META_DATA"][0]
        du = data.items["DISCOVER_UPSTREAM"][0]
        ps = data.items["PROXY_SELECTOR"][0]
        auth = data.items["APP_AUTH"][0]
        plugin = data.items["PLUGIN"][0]
        for path in ("%s/plugin/%s" % (root, plugin["name"]),
                     "%s/selector/%s/%s" % (root, sel["pluginName"], sel["id"]),
                     "%s/rule/%s/%s-%s" % (root, rule["pluginName"], rule["selectorId"],
                                            rule["id"]),
                     "%s/auth/%s" % (root, auth["appKey"]),
                     "%s/metaData%s" % (root, meta["path"]),
                     "%s/proxySelectorData/%s/%s" % (root, ps["pluginName"], ps["id"]),
                     "%s/discoveryUpstream/%s/%s" % (root, du["pluginName"], du["selectorId"])):
            self.assertIn(path, nodes)
        self.assertEqual(sum(len(v) for v in data.items.values()), len(nodes))
        self.assertEqual(p.published(), data.expected())
        for g in publisher.KV_GROUPS:
            for it in data.items[g]:
                self.assertTrue(it.get("namespaceId") == NS, (g, it))

    def test_values_are_gson_text(self):
        p = self.pub("/%s/shenyu" % NS)
        item = {"id": "1", "name": "waf", "config": None, "enabled": True,
                "role": "Authentication", "pluginJar": "",
                "namespaceId": NS, "note": "a=b&c<d>'e' 限流"}
        p.write("PLUGIN", item)
        text = p.nodes()["/%s/shenyu/plugin/waf" % NS]
        self.assertEqual('{"id":"1","name":"waf","enabled":true,"role":"Authentication",'
                         '"pluginJar":"","namespaceId":"ns-infra","note":"a\\u003db\\u0026c'
                         '\\u003cd\\u003e\\u0027e\\u0027 限流"}', text)
        self.assertEqual(json.loads(text), publisher.strip_nulls(item))

    def test_legacy_layout_url_encodes_metadata_in_one_node(self):
        data = publisher.RandomData(seed=4, namespace=None, groups=publisher.KV_GROUPS)
        p = self.pub("/shenyu", layout="2.6")
        meta = dict(data.items["META_DATA"][0], path="/order/find by id/é")
        p.write("META_DATA", meta)
        nodes = p.nodes("META_DATA")
        self.assertEqual(["/shenyu/metaData/%2Forder%2Ffind+by+id%2F%C3%A9"], list(nodes))
        self.assertNotIn("namespaceId", json.loads(nodes[list(nodes)[0]]))

    def test_refresh_clears_only_the_first_items_plugin(self):
        data = publisher.RandomData(seed=5, namespace=NS)
        p = self.pub("/%s/shenyu" % NS)
        a = data.new_selector(data.items["PLUGIN"][0])
        b = data.new_selector(data.items["PLUGIN"][1])
        c = data.new_selector(data.items["PLUGIN"][1])
        p.write_many("SELECTOR", [a, b, c])
        a2 = data.new_selector(data.items["PLUGIN"][0])
        # a list spanning two plugins: only the first item's plugin subtree is cleared
        p.refresh("SELECTOR", [a2, b])
        self.assertEqual(sorted([a2["id"], b["id"], c["id"]]),
                         sorted(p.published()["SELECTOR"]))

    def test_plugin_delete_cascades_to_its_selectors_and_rules_only(self):
        data = publisher.RandomData(seed=6, namespace=NS)
        p = self.pub("/%s/shenyu" % NS)
        p.sync_all(data.items)
        victim = data.items["SELECTOR"][0]["pluginName"]
        plugin = next(x for x in data.items["PLUGIN"] if x["name"] == victim)
        p.delete("PLUGIN", plugin)
        got = p.published()
        self.assertNotIn(victim, got["PLUGIN"])
        self.assertFalse([s for s in got["SELECTOR"].values() if s["pluginName"] == victim])
        self.assertFalse([r for r in got["RULE"].values() if r["pluginName"] == victim])
        others = [s for s in data.items["SELECTOR"] if s["pluginName"] != victim]
        self.assertEqual(sorted(s["id"] for s in others), sorted(got["SELECTOR"]))

    def test_random_edits_keep_the_model_and_the_store_equal(self):
        data = publisher.RandomData(seed=7, namespace=NS)
        p = self.pub("/%s/shenyu" % NS)
        p.sync_all(data.items)
        for _ in range(60):
            data.random_edit(p)
        self.assertEqual(data.expected(), p.published())


class ZooKeeperLayout(Layout, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.zk = servers.ZooKeeper().start()
        cls.client = cls.zk.client()
        cls.store = publisher.ZkStore(cls.client)

    @classmethod
    def tearDownClass(cls):
        cls.zk.close()

    def test_parents_exist_without_data(self):
        p = self.pub("/%s/shenyu" % NS)
        data = publisher.RandomData(seed=8, namespace=NS)
        p.write("RULE", data.items["RULE"][0])
        r = data.items["RULE"][0]
        for parent in ("/%s" % NS, "/%s/shenyu" % NS, "/%s/shenyu/rule" % NS,
                       "/%s/shenyu/rule/%s" % (NS, r["pluginName"])):
            value, _ = self.client.get(parent)
            self.assertEqual(b"", value, parent)

    def test_the_server_is_standalone_and_reports_sessions(self):
        self.assertEqual("standalone", self.zk.mode(0))
        sid = "0x%x" % self.client.client_id[0]
        self.assertTrue(self.zk.session_alive(sid))


class EtcdLayout(Layout, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.etcd = servers.Etcd().start()
        cls.store = publisher.EtcdStore(cls.etcd)

    @classmethod
    def tearDownClass(cls):
        cls.etcd.close()

    def test_only_leaf_keys_exist(self):
        p = self.pub("/%s/shenyu" % NS)
        data = publisher.RandomData(seed=9, namespace=NS)
        p.write("RULE", data.items["RULE"][0])
        r = self.etcd.call("/v3/kv/range", {"key": servers.b64("/%s" % NS),
                                            "range_end": servers.b64(servers.prefix_end("/%s" % NS))})
        self.assertEqual(1, len(r["kvs"]))

    def test_compaction_cancels_a_watch_from_an_older_revision(self):
        p = self.pub("/%s/shenyu" % NS)
        data = publisher.RandomData(seed=10, namespace=NS)
        before = self.etcd.revision()
        p.write("PLUGIN", data.items["PLUGIN"][0])
        p.write("PLUGIN", data.items["PLUGIN"][1])
        rev = self.etcd.compact()
        self.assertGreater(rev, before)
        # a watch from before the compaction is answered with compact_revision
        import urllib.request
        body = {"create_request": {"key": servers.b64("/"), "range_end": servers.b64("\0"),
                                   "start_revision": str(before)}}
        req = urllib.request.Request(self.etcd.endpoint(0) + "/v3/watch",
                                     data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            seen = ""
            while "compact_revision" not in seen:
                line = r.readline().decode()
                self.assertTrue(line, "the watch stream ended without compact_revision")
                seen += line
        self.assertIn('"compact_revision":"%d"' % rev, seen.replace(" ", ""))


class Clusters(unittest.TestCase):
    """The cluster helpers: who leads, and a new leader after the leader is killed."""

    def test_zookeeper_ensemble_elects_a_new_leader(self):
        zk = servers.ZooKeeper(members=3).start()
        self.addCleanup(zk.close)
        first = zk.kill_leader()
        second = zk.leader()
        self.assertNotEqual(first, second)
        c = zk.client([i for i in range(3) if i != first])
        c.ensure_path("/after-election")
        zk.start_member(first)
        self.assertIn(zk.mode(first), ("follower", "leader"))

    def test_etcd_cluster_elects_a_new_leader(self):
        et = servers.Etcd(members=3).start()
        self.addCleanup(et.close)
        first = et.kill_leader()
        second = et.leader()
        self.assertNotEqual(first, second)
        et.call("/v3/kv/put", {"key": servers.b64("/x"), "value": servers.b64("1")})
        et.start_member(first)
        self.assertTrue(et.serving(first))


if __name__ == "__main__":
    kvagent.main()
