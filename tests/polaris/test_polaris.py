#!/usr/bin/env python3
"""The Polaris source (issue 28, item 4) against the Polaris emulator (emulator.py), written
to as ShenYu's PolarisDataChangedListener writes (polpub.py): first sync, every event
type, list-key membership, settle, what one change costs, big values and many keys,
restarts and dropped watches, tokens, absent files, anti-entropy, the snapshot, the 2.6
layouts, and a random-edit soak. One emulator for the file (setUpClass), each test in a
file group of its own. The bad-input matrix is test_polaris_faults.py."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import polagent  # noqa: E402  (puts tests/kv and tests/integration on the path)
import harness  # noqa: E402
import polpub  # noqa: E402

NS = polpub.DEFAULT_NAMESPACE
_counter = [0]


def unique_group():
    _counter[0] += 1
    return "g%d-%d" % (os.getpid() % 10000, _counter[0])


class PolarisSource(harness.IntegrationTest):
    @classmethod
    def setUpClass(cls):
        # a 3 s hold instead of 30: the "no change" answers come often enough to be seen
        cls.emu = polagent.emulator.PolarisEmulator(hold=3.0).start()

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()

    def setUp(self):
        self.emu.clear_faults()
        self.emu.token = None

    def start(self, seed=1, layout="2.7", groups=None, wait=True, **kw):
        pub = polpub.Publisher(self.emu, group=unique_group(), layout=layout,
                               shenyu_ns=NS if layout == "2.7" else None)
        data = polpub.with_tcp(polpub.RandomData(seed=seed,
                                                 namespace=NS if layout == "2.7" else None))
        pub.sync_all(data.items)
        a = polagent.Agent(self, pub, [self.emu.url], groups=groups, **kw)
        if wait:
            a.wait_converged()
        return data, pub, a

    # -------------------------------------------------------------- first sync
    def test_first_sync_delivers_every_group_once(self):
        data, pub, a = self.start(seed=11)
        want = pub.published()
        for g in polpub.KV_GROUPS:
            self.assertTrue(want[g], "the dataset has no %s" % g)
            applies = a.applies(g)
            self.assertEqual(1, len(applies), (g, applies))
            self.assertEqual(len(want[g]), applies[0].items, g)
        c = a.conn()
        self.assertEqual("polling", c["state"])
        self.assertEqual("polaris://127.0.0.1:%d/default/%s" % (self.emu.port, pub.group),
                         c["url"])
        doc = a.status()
        self.assertEqual("polaris", doc["source"]["type"])
        m = a.ep.metrics()
        lbl = {"source": "polaris", "type": "polaris", "connection": c["url"]}
        self.assertGreater(m.value("gwsync_source_changes_total", **lbl), 0)
        self.assertEqual(0, m.value("gwsync_source_repairs_total", **lbl))
        # one watch names every file the walk reached: each item, its list, the root lists
        lists = 3 + len(want["PLUGIN"]) * 3 + len(want["SELECTOR"])
        items = sum(len(v) for v in want.values())
        a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] >= items + lists,
                      "every file watched")

    # -------------------------------------------------------------- events
    def test_every_event_type_reaches_the_gateway(self):
        data, pub, a = self.start(seed=12)
        for g in polpub.KV_GROUPS:
            item = data.new_item(g)
            if g == "PLUGIN" and any(p["name"] == item["name"] for p in data.items[g]):
                continue
            pub.write(g, item)
            data.items[g].append(item)
            a.wait_converged()
            changed = data.changed(g, item)
            pub.write(g, changed)
            data.items[g][-1] = changed
            a.wait_converged()
            self.assertEqual(polpub.strip_nulls(changed),
                             a.items(g)[polpub.item_key(g, changed)], g)
            pub.delete(g, changed)
            data.items[g].pop()
            a.wait_converged()
            self.assertNotIn(polpub.item_key(g, changed), a.items(g), g)
        # a selector's delete after its rules (as the admin does it)
        sel = data.items["SELECTOR"][0]
        rules = [r for r in data.items["RULE"] if r["selectorId"] == sel["id"]]
        for r in rules:
            pub.delete("RULE", r)
        pub.delete("SELECTOR", sel)
        a.wait_converged()
        self.assertNotIn(sel["id"], a.items("SELECTOR"))
        # a plugin's delete takes its selectors and rules with it
        victim = next(p for p in data.items["PLUGIN"]
                      if any(s["pluginName"] == p["name"] for s in data.items["SELECTOR"]))
        pub.delete("PLUGIN", victim)
        a.wait_converged()
        self.assertNotIn(victim["name"], a.items("PLUGIN"))
        self.assertFalse([s for s in a.items("SELECTOR").values()
                          if s["pluginName"] == victim["name"]])
        self.assertFalse([r for r in a.items("RULE").values()
                          if r["pluginName"] == victim["name"]])

    def test_refresh_deletes_by_bare_name_and_the_list_decides(self):
        data, pub, a = self.start(seed=13)
        keep = data.items["APP_AUTH"][:1]
        gone = data.items["APP_AUTH"][1:]
        self.assertTrue(gone)
        pub.refresh("APP_AUTH", keep)
        # ShenYu's bug, as it is: a stray file named by the bare appKey, holding "null",
        # and the vanished item's own file still there
        for it in gone:
            rel = self.emu.released("default", pub.group, it["appKey"])
            self.assertEqual("null", rel["content"])
            rel = self.emu.released("default", pub.group, pub.path("APP_AUTH", it))
            self.assertTrue(rel["content"].startswith("{"))
        a.wait_converged()
        self.assertEqual({it["appKey"] for it in keep}, set(a.items("APP_AUTH")))

    def test_a_list_only_change_decides_membership(self):
        data, pub, a = self.start(seed=14)
        meta = data.items["META_DATA"][0]
        lk = pub.list_key("META_DATA", meta)
        ids = pub._list(lk)
        pub.publish_config(lk, [i for i in ids if i != meta["id"]])
        a.wait_converged()
        self.assertNotIn(meta["id"], a.items("META_DATA"))
        # the item's file was never touched; naming it again brings it back
        pub.publish_config(lk, ids)
        a.wait_converged()
        self.assertIn(meta["id"], a.items("META_DATA"))

    def test_a_burst_of_writes_is_one_version(self):
        data, pub, a = self.start(seed=15)
        sel = data.items["SELECTOR"][1]
        rules = [data.new_rule(sel) for _ in range(12)]
        since = len(a.applies())
        pub.write_many("RULE", rules)
        data.items["RULE"].extend(rules)
        a.wait_converged()
        applied = a.applies("RULE", since)
        self.assertEqual(1, len(applied), applied)
        self.assertEqual(sorted(r["id"] for r in rules), sorted(applied[0].added))

    def test_one_change_reads_the_files_it_touched(self):
        data, pub, a = self.start(seed=16)
        a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] > 0, "watching")
        time.sleep(0.3)
        rule = data.items["RULE"][3]
        changed = data.changed("RULE", rule)
        mark = self.emu.mark()
        since = len(a.applies())
        pub.write("RULE", changed)  # the item file, then its list (re-published unchanged)
        a.wait_converged()
        gets = self.emu.since(mark, "get")
        self.assertEqual(sorted([pub.path("RULE", changed), pub.list_key("RULE", changed)]),
                         sorted(gets))
        applied = a.applies("RULE", since)
        self.assertEqual(1, len(applied))
        self.assertEqual([rule["id"]], applied[0].updated)

    # -------------------------------------------------------------- sizes
    def test_a_2mb_value(self):
        data, pub, a = self.start(seed=17)
        plugin = dict(data.items["PLUGIN"][0])
        plugin["config"] = json.dumps({"blob": "x" * (2 << 20)})
        pub.write("PLUGIN", plugin)
        data.items["PLUGIN"][0] = plugin
        a.wait_converged(timeout=60)
        self.assertEqual(plugin["config"], a.items("PLUGIN")[plugin["name"]]["config"])

    def test_twenty_thousand_keys(self):
        # Polaris's own 30 s hold here: no watch expires while the change's are counted
        self.emu.hold = 30.0
        self.addCleanup(setattr, self.emu, "hold", 3.0)
        pub = polpub.Publisher(self.emu, group=unique_group(), shenyu_ns=NS)
        data = polpub.RandomData(seed=18, namespace=NS, plugins=4, selectors=40, rules=0,
                                 app_auth=0, metadata=0, proxy_selectors=0,
                                 discover_upstreams=0)
        # one realistic rule, copied: RandomData.new_rule builds hundreds per call
        template = data.new_rule(data.items["SELECTOR"][0])
        rules = []
        for sel in data.items["SELECTOR"]:
            for _ in range(500):
                rules.append(dict(template, id=data.ident(), selectorId=sel["id"],
                                  pluginName=sel["pluginName"]))
        data.items["RULE"] = rules
        pub.sync_all(data.items)
        self.assertGreaterEqual(len(self.emu.file_names("default", pub.group)), 20000)
        t0 = time.monotonic()
        a = polagent.Agent(self, pub, [self.emu.url])
        a.wait_converged(timeout=180)
        first = time.monotonic() - t0
        # a one-rule change against 20,000 watched files
        changed = data.changed("RULE", rules[777])
        mark = self.emu.mark()
        t1 = time.monotonic()
        pub.write("RULE", changed)
        a.wait_converged(timeout=60)
        print("\n20,000 keys: first sync %.1f s, one change %.2f s"
              % (first, time.monotonic() - t1), file=sys.stderr)
        self.assertEqual(2, len(self.emu.since(mark, "get")))
        # watches of at most 10,000 files each: the change re-sent only the ones that
        # named its two files, not a body of every file
        a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] >= 20000, "watching")
        sizes = self.emu.since(mark, "watch")
        self.assertTrue(sizes)
        self.assertLessEqual(max(sizes), 10000, sizes)
        self.assertLessEqual(len(sizes), 2, sizes)
        # a new rule: its file joins the watch that named its list, the other watches stay
        # held (not cancelled and sent again)
        held = sum(len(self.emu.watchers.get(k, ())) for k in list(self.emu.watchers))
        self.assertGreater(held, 0)
        rule = dict(changed, id=data.ident())
        mark = self.emu.mark()
        pub.write("RULE", rule)
        a.wait_converged(timeout=60)
        a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] >= 20002, "watching")
        sizes = self.emu.since(mark, "watch")
        self.assertLessEqual(len(sizes), 2, sizes)
        self.assertEqual(sorted([pub.list_key("RULE", rule), pub.path("RULE", rule)]),
                         sorted(self.emu.since(mark, "get")))

    # -------------------------------------------------------------- connections
    def test_server_restart_and_a_watch_dropped_mid_hold(self):
        data, pub, a = self.start(seed=19)
        a.wait_status(lambda d: polagent.kvagent.connection(d)["watches"] > 0, "watching")
        self.emu.restart(down=1.0)
        rule = data.changed("RULE", data.items["RULE"][0])
        pub.write("RULE", rule)
        data.items["RULE"][0] = rule
        a.wait_converged()
        # a watch cut while held (a proxy's idle timeout, a server's restart)
        self.emu.fault("drop", path="WatchConfigFile", after=0.5)
        time.sleep(1.5)
        rule = data.changed("RULE", data.items["RULE"][0])
        pub.write("RULE", rule)
        a.wait_converged()
        self.emu.drop_holds()
        rule = data.changed("RULE", rule)
        pub.write("RULE", rule)
        a.wait_converged()
        c = a.conn()
        self.assertGreater(c["errors"]["connect"], 0, c)
        self.assertIn(self.emu.url, c["lastError"])

    def test_a_refused_token_is_an_auth_failure_named_with_the_server(self):
        self.emu.token = "right"
        data, pub, a = self.start(seed=20, wait=False, token="wrong")
        a.wait_status(lambda d: polagent.kvagent.connection(d)["errors"]["auth"] > 0,
                      "an auth failure")
        line = a.d.wait_log(r"token was refused").string
        self.assertIn(self.emu.url, line)
        self.assertIn("default/%s" % pub.group, line)
        self.assertNotIn("wrong", "\n".join(a.d.lines()))
        b = polagent.Agent(self, pub, [self.emu.url], token="right")
        b.wait_converged()

    def test_absent_files_are_empty_groups_until_released(self):
        pub = polpub.Publisher(self.emu, group=unique_group(), shenyu_ns=NS)
        a = polagent.Agent(self, pub, [self.emu.url])
        a.wait_converged()
        for g in polpub.KV_GROUPS:
            self.assertEqual({}, a.items(g))
        # a list naming an item whose file was never released: not found, not held
        data = polpub.with_tcp(polpub.RandomData(seed=21, namespace=NS))
        pub.publish_config(NS + ".meta.list", ["404404"])
        pub.write_many("PLUGIN", data.items["PLUGIN"])
        a.wait_converged()
        self.assertEqual({}, a.items("META_DATA"))
        self.assertEqual(len(data.items["PLUGIN"]), len(a.items("PLUGIN")))
        # an operator deletes a file outright: the next full read finds it not found
        self.emu.delete_file("default", pub.group, pub.path("PLUGIN", data.items["PLUGIN"][0]))

    # -------------------------------------------------------------- anti-entropy, snapshot
    def test_resync_repairs_a_lost_release_and_counts_it(self):
        data, pub, a = self.start(seed=22, resync_interval="1s")
        self.assertEqual(0, a.conn()["repairs"])
        rule = data.changed("RULE", data.items["RULE"][0])
        self.emu.create_file("default", pub.group, pub.path("RULE", rule), polpub.gson(rule))
        self.emu.release_file("default", pub.group, pub.path("RULE", rule), notify=False)
        data.items["RULE"][0] = rule
        a.wait_converged()
        a.wait_status(lambda d: polagent.kvagent.connection(d)["repairs"] > 0, "a repair")
        a.d.wait_log(r"RULE")

    def test_cold_start_serves_the_snapshot_while_polaris_is_down(self):
        state = self.tmpdir()
        data, pub, a = self.start(seed=23, state_dir=state)
        want = pub.published()
        a.d.stop()
        dead = "http://127.0.0.1:%d" % harness.free_port()
        b = polagent.Agent(self, pub, [dead], state_dir=state)
        b.wait_converged(want)
        b.wait_status(lambda d: polagent.kvagent.connection(d)["errors"]["connect"] > 0,
                      "connect failures")

    # -------------------------------------------------------------- older layouts
    def test_the_261_layout_without_a_namespace_prefix(self):
        data, pub, a = self.start(seed=24, layout="2.6.1")
        self.assertIn("plugin.list", self.emu.file_names("default", pub.group))
        for _ in range(10):
            data.random_edit(pub)
        a.wait_converged()

    def test_the_260_whole_group_layout(self):
        pub = polpub.Publisher(self.emu, group=unique_group(), layout="2.6.0", shenyu_ns=None)
        data = polpub.RandomData(seed=25, namespace=None)
        # v2.6.0 AbstractListDataChangedListener: name -> PluginData, pluginName ->
        # [SelectorData], selectorId -> [RuleData], appKey -> AppAuthData, path -> MetaData
        docs = {"PLUGIN": {p["name"]: p for p in data.items["PLUGIN"]},
                "APP_AUTH": {x["appKey"]: x for x in data.items["APP_AUTH"]},
                "META_DATA": {m["path"]: m for m in data.items["META_DATA"]}}
        sels, rules = {}, {}
        for s in data.items["SELECTOR"]:
            sels.setdefault(s["pluginName"], []).append(s)
        for r in data.items["RULE"]:
            rules.setdefault(r["selectorId"], []).append(r)
        docs["SELECTOR"], docs["RULE"] = sels, rules
        for g, doc in docs.items():
            pub.publish_config(polpub.WHOLE_NAMES[g], doc)
        groups = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"]
        a = polagent.Agent(self, pub, [self.emu.url], groups=groups)
        want = {g: {polpub.item_key(g, polpub.strip_nulls(it)): polpub.strip_nulls(it)
                    for it in data.items[g]} for g in groups}
        a.wait_converged(want)
        # an item gone from a document is gone at the gateway
        gone = data.items["APP_AUTH"].pop()
        del docs["APP_AUTH"][gone["appKey"]]
        pub.publish_config(polpub.WHOLE_NAMES["APP_AUTH"], docs["APP_AUTH"])
        want["APP_AUTH"].pop(gone["appKey"])
        a.wait_converged(want)

    # -------------------------------------------------------------- --check
    def test_check_refuses_ai_proxy_api_key_with_polaris(self):
        import subprocess
        harness.require_daemon()
        path = os.path.join(self.tmpdir(), "gwsync.yaml")
        with open(path, "w") as f:
            f.write(polagent.config([self.emu.url], groups=["PLUGIN", "AI_PROXY_API_KEY"],
                                    state_dir=self.tmpdir()))
        r = subprocess.run([os.environ["GWSYNCD"], "--check", "-c", path],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("polaris.groups", r.stderr)
        self.assertIn("AI_PROXY_API_KEY is never published to Polaris", r.stderr)

    # -------------------------------------------------------------- soak
    def test_random_edit_soak_ends_where_the_admin_is(self):
        data, pub, a = self.start(seed=26)
        log = []
        for i in range(200):
            log.append(data.random_edit(pub))
            if i % 50 == 49:
                time.sleep(0.2)  # edits while the agent is mid-build too
        try:
            a.wait_converged(timeout=60)
        except AssertionError as e:
            raise AssertionError("%s\nedits:\n%s" % (e, "\n".join(log[-20:])))
        want = pub.published()
        for g in polpub.KV_GROUPS:
            self.assertEqual(want[g], a.items(g), g)


if __name__ == "__main__":
    polagent.kvagent.main()
