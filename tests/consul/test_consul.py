#!/usr/bin/env python3
"""The Consul source (issue 28 item 3) against the Consul KV emulator (emulator.py; no
Consul server can be installed here), written to as ShenYu's admin writes
(consulstore.ConsulStore behind tests/kv's Publisher): every case the path stores owe
(tests/kv/kvcases.py), plus what only Consul has: the index rules, an absent prefix (404),
the 512 KB value limit, and a repair of a change no blocking query could see."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "kv"))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402  (puts tests/integration on the path)
import kvcases  # noqa: E402
import harness  # noqa: E402
import proxy  # noqa: E402
import publisher  # noqa: E402
import consulstore  # noqa: E402
emulator = consulstore.load_emulator()

WAIT = kvcases.WAIT


class ConsulSource(kvcases.KvCases, harness.IntegrationTest):
    KIND = "consul"

    @classmethod
    def setUpClass(cls):
        cls.server = emulator.Emulator()
        cls.store = consulstore.ConsulStore(cls.server.url)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def server_addresses(self):
        return [self.server.url]

    def proxy(self, make_filter=None):
        px = proxy.Proxy(self.server.port, make_filter=make_filter)
        self.addCleanup(px.close)
        return px, px.url

    def check_session(self, session):
        self.assertEqual(self.server.url, session)

    def losing_proxy(self, pub):
        raise NotImplementedError("Consul answers every key at each change: see below")

    # -------------------------------------------------------------- Consul only
    def test_resync_repairs_a_lost_change_and_counts_it(self):
        # A recursive blocking query answers with every key, so a change is only lost if
        # the server changes a value without moving its ModifyIndex (a bug, a restore
        # gone wrong): the diff, which trusts ModifyIndex, skips it; the resync compares
        # every value and repairs it.
        data, pub, a = self.published_agent(seed=41, resync_interval="1s")
        time.sleep(2.5)  # in step: resyncs find nothing to repair
        self.assertEqual(0, a.conn()["repairs"])
        a.d.assert_no_log(r"resync repaired")
        mark = a.d.mark()
        rule = data.changed("RULE", data.items["RULE"][0])
        self.server.store.hide_prefix = pub.store.key(pub.dir("RULE")) + "/"
        self.addCleanup(setattr, self.server.store, "hide_prefix", None)
        pub.write("RULE", rule)
        data.items["RULE"][0] = rule
        self.assertEqual(1, self.server.store.hidden)
        doc = a.wait_status(lambda d: kvagent.connection(d)["repairs"] >= 1, "repairs counted")
        a.wait_converged()
        self.assertIn(pub.path("RULE", rule), "\n".join(a.d.lines(None, mark)))
        m = a.ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_source_repairs_total", source=self.KIND,
                                        type=self.KIND, connection=a.label), 1)
        self.assertTrue(doc["healthy"])

    def test_keys_are_read_without_a_leading_slash_and_the_root_is_checked(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=61, namespace=ns)
        pub.sync_all(data.items)
        # what the admin wrote is stored without the leading '/'
        st, body, _ = pub.store.call("GET", "%s/shenyu/plugin/" % ns, query="?keys")
        self.assertEqual(200, st)
        self.assertTrue(all(not k.startswith("/") for k in __import__("json").loads(body)))
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        # a root written as a path is refused at --check with the key to write instead
        r = self.check(harness.to_yaml({"consul": {"servers": [self.server.url],
                                                   "root": "/%s/shenyu" % ns}}))
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertRegex(r.stderr, r"consul\.root: .*begins with '/'.*write \"%s/shenyu\"" % ns)

    def test_an_absent_prefix_is_empty_and_its_first_item_arrives(self):
        ns, pub = self.new_publisher()
        a = self.agent(pub, namespace=ns)
        a.wait_converged({g: {} for g in publisher.KV_GROUPS})
        gets = self.server.gets()
        self.assertTrue(any(pub.store.key(pub.root) in p for _, _, p in gets))
        data = publisher.RandomData(seed=62, namespace=ns)
        pub.write("APP_AUTH", data.items["APP_AUTH"][0])
        a.wait_converged()

    def test_a_plugin_with_a_large_jar_arrives_whole(self):
        # kvcases' 600 KB jar is over Consul's 512 KB value limit (the admin's write is
        # refused: the next test): values just under it arrive whole, at start-up and as
        # a change
        import base64
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=15, namespace=ns)
        jar = base64.b64encode(os.urandom(370 * 1024)).decode("ascii")
        data.items["PLUGIN"][0]["pluginJar"] = jar
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        second = dict(data.items["PLUGIN"][1], pluginJar=jar[::-1])
        pub.write("PLUGIN", second)
        a.wait_converged()
        got = kvagent.file_items(a.files, "PLUGIN")
        self.assertEqual(jar, got[data.items["PLUGIN"][0]["name"]]["pluginJar"])
        self.assertEqual(jar[::-1], got[second["name"]]["pluginJar"])

    def test_a_value_over_512kb_is_refused_by_consul_and_500kb_arrives(self):
        import base64
        data, pub, a = self.published_agent(seed=63)
        plugin = dict(data.items["PLUGIN"][0])
        plugin["pluginJar"] = base64.b64encode(os.urandom(2 << 20)).decode("ascii")
        with self.assertRaises(consulstore.ConsulError) as cm:
            pub.write("PLUGIN", plugin)
        self.assertEqual(413, cm.exception.status)
        self.assertIn("too large", cm.exception.text)
        # the refusal changed nothing: a 500 KB value is taken and delivered whole
        plugin["pluginJar"] = base64.b64encode(os.urandom(370 * 1024)).decode("ascii")
        self.assertLess(len(publisher.gson(plugin)), 512 * 1024)
        self.assertGreater(len(publisher.gson(plugin)), 480 * 1024)
        pub.write("PLUGIN", plugin)
        data.items["PLUGIN"][0] = plugin
        a.wait_converged()
        got = kvagent.file_items(a.files, "PLUGIN")[plugin["name"]]
        self.assertEqual(plugin["pluginJar"], got["pluginJar"])

    def test_a_one_rule_change_decodes_only_that_key(self):
        # the diff skips keys whose ModifyIndex did not move: the store's "accepted" line
        # for RULE carries the whole group, but the mirror only saw one event
        data, pub, a = self.published_agent(seed=64)
        mark_rec = len(a.applies())
        rule = data.changed("RULE", data.items["RULE"][0])
        pub.write("RULE", rule)
        a.wait_converged()
        changes = [x for x in a.applies()[mark_rec:] if x.group == "RULE"]
        self.assertEqual(1, len(changes))
        self.assertEqual(([], [rule["id"]], []),
                         (changes[0].added, changes[0].updated, changes[0].removed))
        self.assertEqual([], [x for x in a.applies()[mark_rec:] if x.group != "RULE"])

    def test_one_configured_group_queries_its_own_directory(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=65, namespace=ns)
        pub.sync_all(data.items)
        t0 = time.monotonic()
        a = self.agent(pub, namespace=ns, groups=["RULE"])
        a.wait_converged()
        # the agent's blocking queries (the test's own reads are not blocking)
        paths = [p for _, _, p in self.server.gets(t0) if "&index=" in p]
        self.assertTrue(paths)
        self.assertTrue(all("/v1/kv/%s/shenyu/rule/?recurse" % ns in p for p in paths), paths)


if __name__ == "__main__":
    kvcases.kvagent.main()
