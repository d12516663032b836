"""The Apollo source against the Apollo config service emulator (issue 28 item 2): the
real gwsyncd follows ShenYu's node layout as the admin's publisher writes it into one
Apollo namespace (one release per key), and what its subscribers hold is compared with
what the gateway's walk of the released keys gives (Publisher.published()).

One emulator for the file (setUpClass), with an access key: every request the agent makes
is signed. Each test follows an Apollo namespace of its own, so tests never see each
other's releases.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import apolloagent  # noqa: E402  (puts tests/kv and tests/integration on the path)
import apollo_emulator as emulator  # noqa: E402
import harness  # noqa: E402
import kvagent  # noqa: E402
import apollo_publisher as publisher  # noqa: E402

SECRET = "apollo-test-secret-0123456789"
_counter = [0]


class ApolloTest(harness.IntegrationTest):
    @classmethod
    def setUpClass(cls):
        cls.emu = emulator.Emulator(app_id="shenyu", secret=SECRET, hold=60).start()

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()

    def setUp(self):
        e = self.emu
        e.clock_offset_s = 0.0
        e.hold = 60
        e.incremental = False
        e.reply_override.clear()
        e.trickle = None
        e.flood.clear()

    def new_pub(self):
        _counter[0] += 1
        return publisher.Publisher(self.emu, apollo_namespace="ns%d-%d" % (os.getpid() % 1000,
                                                                            _counter[0]))

    def start(self, seed=1, **kw):
        pub = self.new_pub()
        data = publisher.random_data(seed=seed)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        a = apolloagent.Agent(self, pub, secret=SECRET, **kw)
        a.wait_converged()
        return data, pub, a

    # ------------------------------------------------------------------ first sync
    def test_first_sync_delivers_every_group_through_signed_requests(self):
        data, pub, a = self.start(seed=11)
        want = pub.published()
        self.assertTrue(all(want[g] for g in publisher.GROUPS), want.keys())
        # the notification id reached (the first poll, with -1, is answered at once)
        c = kvagent.connection(a.wait_status(lambda d: kvagent.connection(d)["revision"] >= 1,
                                             "a notification id held"))
        self.assertEqual("connected", c["state"])
        self.assertEqual(self.emu.url, c["session"])
        self.assertEqual(0, c["errors"]["auth"])
        # one version per group at start-up, nothing partial
        for g in publisher.GROUPS:
            self.assertEqual(1, len(a.accepted(g)), g)
        # the secret never reaches the log
        self.assertNotIn(SECRET, a.d.text())

    # ------------------------------------------------------------------ events
    def test_every_event_type_is_followed_and_a_burst_is_one_version(self):
        data, pub, a = self.start(seed=12)
        n0 = len(a.applies())
        # CREATE of one rule: the item key, then the list key: two releases, one version
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.wait_converged()
        new = a.applies(since=n0)
        self.assertEqual(1, len(new), new)
        self.assertEqual(["RULE"], [x.group for x in new])
        self.assertEqual([rule["id"]], new[0].added)
        # /history names the source and the one rule added
        entry = a.d.wait_history("RULE", new[0].md5)
        self.assertIn(rule["id"], json.dumps(entry))
        # UPDATE of one item per group: only that item is delivered
        for g in ("PLUGIN", "SELECTOR", "APP_AUTH", "META_DATA", "PROXY_SELECTOR",
                  "DISCOVER_UPSTREAM"):
            n = len(a.applies())
            it = data.changed(g, data.items[g][0])
            data.items[g][0] = it
            pub.write(g, it)
            a.wait_converged()
            got = a.applies(since=n)
            self.assertEqual([g], [x.group for x in got], g)
            self.assertEqual([publisher.item_key(g, it)], got[0].updated, g)
        # DELETE of an app, a meta item, a discovery upstream, a selector with its rules
        for g in ("APP_AUTH", "META_DATA", "DISCOVER_UPSTREAM"):
            victim = data.items[g][0]
            pub.delete(g, victim)
            a.wait_converged()
            self.assertNotIn(publisher.item_key(g, victim), kvagent.file_items(a.files, g))
        sel = next(s for s in data.items["SELECTOR"]
                   if any(r["selectorId"] == s["id"] for r in data.items["RULE"]))
        rules = [r for r in data.items["RULE"] if r["selectorId"] == sel["id"]]
        pub.event("RULE", "DELETE", rules)
        pub.delete("SELECTOR", sel)
        a.wait_converged()
        have = kvagent.file_items(a.files, "RULE")
        self.assertFalse(any(r["id"] in have for r in rules))
        # a PLUGIN delete: its selectors and rules go first, then the plugin
        victim = next(p for p in data.items["PLUGIN"] if p["name"] != "tcp")
        pub.delete("PLUGIN", victim)
        a.wait_converged()
        self.assertNotIn(victim["name"], kvagent.file_items(a.files, "PLUGIN"))

    def test_refresh_with_a_vanished_item_follows_the_list_key(self):
        """REFRESH of APP_AUTH with one app fewer: the admin's bare-name delete throws in
        Apollo, so the list keeps the vanished app and the gateway must keep it too;
        a REFRESH with as many items rewrites the list and the app goes."""
        data, pub, a = self.start(seed=13)
        apps = data.items["APP_AUTH"]
        fresh = [data.changed("APP_AUTH", x) for x in apps[1:]]
        aborted = pub.aborted
        pub.refresh("APP_AUTH", fresh)
        self.assertEqual(aborted + 1, pub.aborted)  # the admin stopped on removeItem
        a.wait_converged()
        have = kvagent.file_items(a.files, "APP_AUTH")
        self.assertIn(apps[0]["appKey"], have)  # still listed: still there
        self.assertEqual(fresh[0]["appSecret"], have[fresh[0]["appKey"]]["appSecret"])
        # the same number of apps: the list is rewritten without it
        other = data.new_app_auth()
        pub.refresh("APP_AUTH", fresh + [other])
        a.wait_converged()
        have = kvagent.file_items(a.files, "APP_AUTH")
        self.assertNotIn(apps[0]["appKey"], have)
        self.assertIn(other["appKey"], have)

    def test_a_list_key_only_change_decides_membership(self):
        data, pub, a = self.start(seed=14)
        lkey = pub.list_key("META_DATA")
        ids = json.loads(pub.emu.item(lkey, namespace=pub.apollo_namespace))
        gone = ids[0]
        n = len(a.applies())
        pub.write_raw(lkey, publisher.gson(ids[1:]))  # only the list key: one release
        a.wait_converged()
        got = a.applies(since=n)
        self.assertEqual(1, len(got), got)
        self.assertEqual([gone], got[0].removed)
        pub.write_raw(lkey, publisher.gson(ids))
        a.wait_converged()
        self.assertIn(gone, kvagent.file_items(a.files, "META_DATA"))

    def test_a_2mb_value_arrives_whole(self):
        data, pub, a = self.start(seed=15)
        big = dict(data.items["PLUGIN"][0], config=json.dumps({"blob": "x" * (2 << 20)}))
        data.items["PLUGIN"][0] = big
        pub.write("PLUGIN", big)
        a.wait_converged()
        have = kvagent.file_items(a.files, "PLUGIN")[big["name"]]
        self.assertEqual(len(big["config"]), len(have["config"]))

    def test_20000_keys_are_read_and_one_change_among_them_costs_one_item(self):
        pub = self.new_pub()
        data = publisher.random_data(seed=16, selectors=1, rules=1)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        # 20,000 rules under one selector, as items and a list, in one release
        base = data.items["RULE"][0]
        ns = pub.apollo_namespace
        ids = []
        for i in range(20000):
            r = dict(base, id=str(9100000000000000000 + i), name="r%d" % i)
            self.emu.create_or_update_item(pub.path("RULE", r), publisher.gson(r), namespace=ns)
            ids.append(r["id"])
        self.emu.create_or_update_item(pub.list_key("RULE", base),
                                       publisher.gson([base["id"]] + ids), namespace=ns)
        self.emu.publish_namespace(namespace=ns)
        a = apolloagent.Agent(self, pub, secret=SECRET, groups=["PLUGIN", "SELECTOR", "RULE"])
        a.wait_converged(timeout=60)
        self.assertEqual(20001, len(kvagent.file_items(a.files, "RULE")))
        n = len(a.applies())
        r = dict(base, id=ids[777], name="changed")
        pub.write("RULE", r)
        a.wait_converged(timeout=60)
        got = a.applies(since=n)
        self.assertEqual(1, len(got), got)
        self.assertEqual([ids[777]], got[0].updated)

    def test_incremental_replies_are_applied_at_the_cost_of_what_changed(self):
        """With the config service's incremental option on, a read with a known releaseKey
        is answered with configurationChanges only."""
        data, pub, a = self.start(seed=29)
        self.emu.incremental = True
        before = self.emu.incremental_replies
        for _ in range(40):
            data.random_edit(pub)
        a.wait_converged()
        self.assertGreater(self.emu.incremental_replies, before)
        n = len(a.applies())
        rule = data.changed("RULE", data.items["RULE"][0])
        data.items["RULE"][0] = rule
        pub.write("RULE", rule)
        a.wait_converged()
        got = a.applies(since=n)
        self.assertEqual([(rule["id"],)], [tuple(x.updated) for x in got])

    # ------------------------------------------------------------------ faults
    def test_dropped_holds_and_a_server_restart_are_followed(self):
        data, pub, a = self.start(seed=17)
        dropped = self.emu.count("/notifications/v2", status=0)
        self.emu.drop_held()
        # the connection closed without an answer; a new request is held (libcurl itself
        # sends it again at once when the connection was a reused one)
        harness.wait_until(lambda: self.emu.count("/notifications/v2", status=0) > dropped,
                           message="the held request dropped")
        self.emu.wait_held()
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.wait_converged()
        self.emu.restart(down_s=0.5)
        rule2 = data.new_rule()
        pub.write("RULE", rule2)
        a.wait_converged()
        self.assertIn(rule2["id"], kvagent.file_items(a.files, "RULE"))

    def test_an_expired_signature_is_a_401_logged_and_recovered(self):
        data, pub, a = self.start(seed=18)
        self.emu.clock_offset_s = 120  # the service's clock 2 minutes ahead: skew > 60 s
        self.emu.drop_held()           # the next request is signed now, and refused
        a.wait_failure("auth", "a 401 counted")
        a.d.wait_log(r"HTTP 401: the access key's signature was refused")
        rule = data.new_rule()
        pub.write("RULE", rule)
        time.sleep(0.5)
        self.assertNotIn(rule["id"], kvagent.file_items(a.files, "RULE") or {})
        self.emu.clock_offset_s = 0
        a.wait_converged()
        self.assertNotIn(SECRET, a.d.text())

    def test_an_absent_namespace_is_a_404_retried_until_released(self):
        pub = self.new_pub()
        a = apolloagent.Agent(self, pub, secret=SECRET)
        a.d.wait_log(r"HTTP 404: nothing is released in app shenyu, cluster default, "
                     r"namespace %s" % pub.apollo_namespace)
        data = publisher.random_data(seed=19)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        a.wait_converged()

    def test_anti_entropy_repairs_a_release_changed_behind_the_notifications(self):
        self.emu.hold = 1  # a poll answered every second: the resync runs between polls
        data, pub, a = self.start(seed=20, extra={"resync_interval": "1s"})
        self.assertEqual(0, a.conn()["repairs"])
        # the service's release changed without a release message or a new releaseKey:
        # only a whole read finds it
        n = self.emu.ns(namespace=pub.apollo_namespace)
        app = data.changed("APP_AUTH", data.items["APP_AUTH"][0])
        with self.emu.lock:
            conf = dict(n.release[1])
            conf[pub.path("APP_AUTH", app)] = publisher.gson(app)
            n.release = (n.release[0], conf)
        a.wait_status(lambda d: kvagent.connection(d)["repairs"] >= 1, "a repair counted")
        a.wait_converged()
        m = a.ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_source_repairs_total", source="apollo",
                                        type="apollo", connection=a.conn()["url"]), 1)

    def test_random_edits_converge_to_the_admins_state(self):
        data, pub, a = self.start(seed=21)
        for _ in range(150):
            data.random_edit(pub)
        a.wait_converged()
        self.assertGreater(pub.writes, 300)

    # ------------------------------------------------------------------ bad input
    def bad_reply(self, a, pub, data, kind, body, failure):
        """With `body` answering every `kind` request, a change is not delivered and a
        failure of `failure` is counted; the last good data stays; once the service
        answers properly again the agent catches up."""
        before = {g: kvagent.file_items(a.files, g) for g in ("RULE",)}
        self.emu.wait_held()  # not in a settle window, where reads need no notification
        since = a.failures(failure)
        self.emu.reply_override[kind] = body
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.wait_failure(failure, "a %s failure on a bad %s reply" % (failure, kind), since)
        self.assertEqual(before["RULE"], kvagent.file_items(a.files, "RULE"))
        self.emu.reply_override.clear()
        a.wait_converged()

    def test_bad_configs_replies_change_nothing_and_are_recovered(self):
        data, pub, a = self.start(seed=22)
        self.bad_reply(a, pub, data, "configs", b"<html>not json</html>", "parse")
        self.bad_reply(a, pub, data, "configs",
                       b'{"releaseKey":"x","configurations":{"k":"\xff\xfe"}}', "parse")
        self.bad_reply(a, pub, data, "configs", b"[" * 100000 + b"]" * 100000, "parse")
        self.bad_reply(a, pub, data, "configs",
                       b'{"releaseKey":"x","configurations":{"k":1}}', "parse")

    def test_bad_notification_replies_change_nothing_and_are_recovered(self):
        data, pub, a = self.start(seed=23)
        self.bad_reply(a, pub, data, "notifications", b"not json", "parse")
        self.bad_reply(a, pub, data, "notifications", b'[{"namespaceName":1}]', "parse")

    def test_a_trickling_and_a_flooding_service_fail_and_recover(self):
        data, pub, a = self.start(seed=24, extra={"transfer_timeout": "2s",
                                                  "max_response": "8MiB"})
        self.emu.trickle = ("configs", 10)
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.wait_failure("timeout", "a trickled read timed out")
        self.emu.trickle = None
        a.wait_converged()
        self.emu.flood.add("notifications")
        pub.write("RULE", data.new_rule())  # the notification of it floods
        a.wait_failure("too_large", "a flooding notification reply cut off")
        self.emu.flood.clear()
        rule2 = data.new_rule()
        pub.write("RULE", rule2)
        a.wait_converged()

    # ------------------------------------------------------------------ layouts
    def test_the_26x_layout_without_a_namespace_prefix(self):
        pub = self.new_pub()
        pub.namespace = None  # a 2.6.1+ admin: "plugin.list", "selector.divide.1", ...
        data = publisher.random_data(seed=26, namespace=None)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        self.assertIn("plugin.list", self.emu.released(namespace=pub.apollo_namespace))
        a = apolloagent.Agent(self, pub, secret=SECRET, extra={"layout": "plain"})
        a.wait_converged()
        victim = data.items["META_DATA"][0]
        pub.delete("META_DATA", victim)
        a.wait_converged()
        self.assertNotIn(victim["id"], kvagent.file_items(a.files, "META_DATA"))

    def test_the_260_whole_group_documents(self):
        """ShenYu 2.6.0 wrote one document per group (AbstractListDataChangedListener):
        shenyu.plugin.json name -> plugin, shenyu.selector.json plugin -> [selectors],
        shenyu.rule.json selectorId -> [rules], shenyu.auth.json appKey -> app,
        shenyu.meta.json path -> meta; each write is the whole document, one release."""
        pub = self.new_pub()
        groups = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"]
        data = publisher.random_data(seed=27, namespace=None, groups=groups)

        def docs():
            sel, rule = {}, {}
            for it in data.items["SELECTOR"]:
                sel.setdefault(it["pluginName"], []).append(it)
            for it in data.items["RULE"]:
                rule.setdefault(it["selectorId"], []).append(it)
            return {"shenyu.plugin.json": {p["name"]: p for p in data.items["PLUGIN"]},
                    "shenyu.selector.json": sel, "shenyu.rule.json": rule,
                    "shenyu.auth.json": {x["appKey"]: x for x in data.items["APP_AUTH"]},
                    "shenyu.meta.json": {x["path"]: x for x in data.items["META_DATA"]}}

        def publish(name):
            pub.publish_config(name, publisher.gson(docs()[name]))

        for name in docs():
            publish(name)
        a = apolloagent.Agent(self, pub, secret=SECRET, groups=groups,
                              extra={"layout": "legacy"})
        a.wait_converged(data.expected())
        gone = data.items["APP_AUTH"].pop(0)  # ShenYu's own gateway never removed it
        publish("shenyu.auth.json")
        a.wait_converged(data.expected())
        self.assertNotIn(gone["appKey"], kvagent.file_items(a.files, "APP_AUTH"))
        data.items["RULE"][0] = data.changed("RULE", data.items["RULE"][0])
        publish("shenyu.rule.json")
        a.wait_converged(data.expected())

    # ------------------------------------------------------------------ snapshot
    def test_snapshot_cold_start_then_catch_up(self):
        data, pub, a = self.start(seed=28)
        a.d.stop()
        self.emu.stop()
        try:
            a.d.start()
            # the snapshot is served while the config service is down
            a.wait_status(lambda d: all(g and g["fromSnapshot"] for g in
                                        (d["groups"].get(x) for x in publisher.GROUPS)),
                          "every group from the snapshot")
            kvagent.wait_converged(a.files, pub.published(), timeout=apolloagent.WAIT)
            rule = data.new_rule()
            pub.write("RULE", rule)
        finally:
            self.emu.start()
        a.wait_converged()
        self.assertIn(rule["id"], kvagent.file_items(a.files, "RULE"))

    # ------------------------------------------------------------------ configuration
    def test_meta_discovery_finds_the_config_service(self):
        pub = self.new_pub()
        data = publisher.random_data(seed=25)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        port = harness.free_port()
        files = self.tmpdir()
        rec = os.path.join(self.tmpdir(), "rec.log")
        cfg = apolloagent.config(None, "shenyu", pub.apollo_namespace, files, rec, port,
                                 secret=SECRET, extra={"meta": self.emu.url})
        d = self.daemon(cfg)
        kvagent.wait_converged(files, pub.published(), timeout=apolloagent.WAIT)
        self.assertTrue(d.alive())

    def test_check_refuses_what_cannot_work(self):
        base = {"app_id": "shenyu", "servers": [self.emu.url]}
        cases = [
            ({"servers": None}, "apollo.servers: required (or apollo.meta)"),
            ({"app_id": None}, "apollo.app_id: required"),
            ({"servers": ["http://u:p@h:1"]}, "credentials in the URL are not supported"),
            ({"servers": ["h:1"]}, "is not an http:// or https:// URL"),
            ({"meta": "http://h:1/?x=1"}, "without a query or fragment"),
            ({"secret": "a", "secret_file": "/etc/hostname"}, "cannot be used together"),
            ({"layout": "tree"}, "expected namespaced"),
            ({"shenyu_namespace": "a.b"}, "contains a '.'"),
            ({"settle": "2s"}, "apollo.settle"),
            ({"servre": []}, "did you mean"),
        ]
        for change, message in cases:
            sec = dict(base)
            for k, v in change.items():
                if v is None:
                    sec.pop(k, None)
                else:
                    sec[k] = v
            d = self.daemon(harness.to_yaml({"apollo": sec, "state_dir": "@TMP@/state"}),
                            start=False)
            r = d.run_check()
            self.assertEqual(2, r.returncode, (change, r.stderr))
            self.assertIn(message, r.stderr, change)
        # a valid one passes, and never shows the secret
        d = self.daemon(harness.to_yaml({"apollo": dict(base, secret=SECRET),
                                         "state_dir": "@TMP@/state"}), start=False)
        r = d.run_check()
        self.assertEqual(0, r.returncode, r.stderr)
        self.assertNotIn(SECRET, r.stdout + r.stderr)

    def test_an_https_config_service_is_verified_with_the_configured_ca(self):
        pki = harness.make_test_ca(self.tmpdir())
        emu = emulator.Emulator(app_id="shenyu", secret=SECRET,
                                tls=(pki["cert"], pki["key"])).start()
        self.addCleanup(emu.stop)
        pub = publisher.Publisher(emu)
        data = publisher.random_data(seed=30)
        for g in publisher.GROUPS:
            pub.write_many(g, data.items[g])
        a = apolloagent.Agent(self, pub, secret=SECRET, extra={"tls": {"ca_file": pki["ca"]}})
        a.wait_converged()
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.wait_converged()
        # another CA: refused, named as a connection failure, nothing delivered
        b = apolloagent.Agent(self, pub, secret=SECRET,
                              extra={"tls": {"ca_file": pki["wrong_ca"]}})
        b.wait_failure("connect", "a certificate refused")
        self.assertIsNone(kvagent.file_items(b.files, "RULE"))

    def test_ai_proxy_api_key_is_refused_at_check_saying_why(self):
        cfg = apolloagent.config(self.emu.url, "shenyu", "application", "/tmp", "/tmp/r", 1,
                                 groups=["PLUGIN", "AI_PROXY_API_KEY"])
        d = self.daemon(cfg, start=False)
        r = d.run_check()
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("AI_PROXY_API_KEY is never published to Apollo", r.stderr)


if __name__ == "__main__":
    harness.main()
