#!/usr/bin/env python3
"""The Nacos source (issue 28 item 1) against the Nacos emulator (emulator.py, README.md),
written to as ShenYu's admin NacosDataChangedListener writes: first sync in the three
layouts, every event type, a list-key-only change, REFRESH's surviving item keys, a 2 MB
value, 20,000 keys (the listener split), the server restarting and holds dropped, expired
tokens (403), absent keys (404), a random-edit soak, bad input, and --check. One emulator
for the whole file (setUpClass); each test publishes under a ShenYu namespace of its own.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "kv"))
import kvagent  # noqa: E402  (puts tests/integration on the path)
import harness  # noqa: E402
import publisher  # noqa: E402
import nacos_emulator as emulator  # noqa: E402

WAIT = 30.0
GROUPS = publisher.KV_GROUPS
FAST_RETRY = {"attempts": 3, "interval": "200ms", "backoff": "1s"}
_counter = [0]


def with_tcp(data):
    """The proxy selectors and discovery upstreams RandomData makes are the "tcp" plugin's:
    in the admin that plugin is in plugin.list, which is where their lists are found."""
    if data.items.get("PROXY_SELECTOR") or data.items.get("DISCOVER_UPSTREAM"):
        if not any(p["name"] == "tcp" for p in data.items["PLUGIN"]):
            data.items["PLUGIN"].append(dict(data.items["PLUGIN"][0], name="tcp", id="99"))
    return data


def unique(prefix):
    _counter[0] += 1
    return "%s%d-%d" % (prefix, os.getpid() % 10000, _counter[0])


class Agent:
    """A gwsyncd with a nacos: section, a file subscriber, a recorder and /status."""

    def __init__(self, test, pub, namespace=None, layout=None, groups=GROUPS, start=True,
                 username="nacos", password="s3cret-pw", extra=None, servers=None,
                 state_dir="@TMP@/state"):
        self.test = test
        self.pub = pub
        self.groups = list(groups)
        self.files = test.tmpdir()
        self.rec = os.path.join(test.tmpdir(), "recorder.log")
        self.port = harness.free_port()
        self.ep = kvagent.Endpoint(self.port)
        sec = {"servers": servers or [test.emu.url()], "groups": self.groups,
               "retry": FAST_RETRY, "settle": "50ms"}
        if namespace:
            sec["namespace"] = namespace
        if layout:
            sec["layout"] = layout
        if username:
            sec["username"] = username
            sec["password"] = password
        sec.update(extra or {})
        doc = {"nacos": sec, "state_dir": state_dir, "log": {"level": "debug"},
               "status": {"listen": "127.0.0.1:%d" % self.port},
               "subscribers": [{"name": "files", "library": "file",
                                "config": {"dir": self.files}},
                               {"name": "rec", "library": "recorder",
                                "config": {"out": self.rec}}]}
        self.d = test.daemon(harness.to_yaml(doc), start=start)

    def want(self):
        return self.pub.published(self.groups)

    def wait_converged(self, want=None, timeout=WAIT):
        try:
            kvagent.wait_converged(self.files, want if want is not None else self.want(),
                                   timeout)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.d.tail(30)))

    def applies(self, group=None, since=0):
        return [x for x in kvagent.applies(self.rec)[since:] if group in (None, x.group)]

    def held(self, group):
        return kvagent.file_items(self.files, group) or {}

    def status(self):
        return self.ep.status()

    def conn(self):
        return kvagent.connection(self.status())

    def wait_status(self, predicate, message, timeout=WAIT):
        return self.ep.wait_status(predicate, timeout=timeout, message=message)


class NacosSource(harness.IntegrationTest):
    @classmethod
    def setUpClass(cls):
        cls.emu = emulator.NacosEmulator(users={"nacos": "s3cret-pw"}).start()

    @classmethod
    def tearDownClass(cls):
        cls.emu.stop()

    def setUp(self):
        self.emu.trickle = 0.0
        self.emu.flood = 0
        if self.emu.server is None:
            self.emu.start(self.emu.port)

    def new_publisher(self):
        ns = unique("ns-")
        pub = emulator.NodePublisher(self.emu, ns + ".")
        self.addCleanup(pub.wipe)
        return ns, pub

    def published_agent(self, seed=1, groups=GROUPS, **kw):
        ns, pub = self.new_publisher()
        data = with_tcp(publisher.RandomData(seed=seed, namespace=ns, groups=groups))
        pub.sync_all(data.items)
        a = Agent(self, pub, namespace=ns, groups=groups, **kw)
        a.wait_converged()
        return data, pub, a

    # ------------------------------------------------------------------ first sync
    def test_first_sync_reads_every_group_in_the_namespaced_layout(self):
        data, pub, a = self.published_agent(seed=11)
        self.assertEqual(data.expected(), a.want(), "the publisher and the store differ")
        doc = a.status()
        for g in GROUPS:
            self.assertEqual(len(data.items[g]), doc["groups"][g]["items"], g)
            self.assertEqual(a.conn()["url"], doc["groups"][g]["source"], g)
        # the item as the admin wrote it, byte for byte (Gson's \u003d)
        sel = data.items["SELECTOR"][0]
        raw = self.emu.get(pub.path("SELECTOR", sel))
        with open(os.path.join(a.files, "SELECTOR.json"), encoding="utf-8") as f:
            self.assertIn(raw, f.read())
        self.assertEqual("nacos://127.0.0.1:%d/public/DEFAULT_GROUP" % self.emu.port,
                         a.conn()["url"])

    def test_first_sync_reads_the_plain_layout_of_2_6(self):
        pub = emulator.NodePublisher(self.emu, "", tenant=unique("tenant-"))
        self.addCleanup(pub.wipe)
        data = with_tcp(publisher.RandomData(seed=12, namespace=None))
        pub.sync_all(data.items)
        a = Agent(self, pub, layout="plain", extra={"tenant": pub.tenant})
        a.wait_converged()
        self.assertEqual(data.expected(), a.want())

    def test_legacy_documents_explode_and_their_deletes_apply(self):
        groups = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"]
        pub = emulator.LegacyPublisher(self.emu, group=unique("G"))
        data = publisher.RandomData(seed=13, namespace=None, groups=groups)
        pub.put_all(data.items)
        a = Agent(self, pub, layout="legacy", groups=groups, extra={"group": pub.group})
        a.wait_converged(pub.published(groups))
        # a selector and an app leave their documents: gone at the gateway too
        sel = data.items["SELECTOR"].pop(0)
        data.items["RULE"] = [r for r in data.items["RULE"] if r["selectorId"] != sel["id"]]
        data.items["APP_AUTH"].pop(0)
        pub.put_all({g: data.items[g] for g in ("SELECTOR", "RULE", "APP_AUTH")})
        a.wait_converged(pub.published(groups))
        self.assertNotIn(sel["id"], a.held("SELECTOR"))

    # ------------------------------------------------------------------ events
    def test_every_event_type_arrives_deletes_included(self):
        data, pub, a = self.published_agent(seed=21)
        for g in GROUPS:
            item = data.new_item(g)
            pub.write(g, item)  # CREATE
            data.items[g].append(item)
        a.wait_converged(data.expected())
        for g in GROUPS:
            data.items[g][0] = data.changed(g, data.items[g][0])
            pub.write(g, data.items[g][0])  # UPDATE
        a.wait_converged(data.expected())
        for g in ("RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR", "DISCOVER_UPSTREAM"):
            victim = data.items[g].pop()
            pub.delete(g, victim)  # DELETE: ShenYu's own gateway loses these
        a.wait_converged(data.expected())
        victim = data.items["PLUGIN"][0]
        data.delete_plugin(pub, victim)
        a.wait_converged(data.expected())
        self.assertNotIn(victim["name"], a.held("PLUGIN"))

    def test_a_list_key_only_change_adds_and_removes_members(self):
        data, pub, a = self.published_agent(seed=22)
        app = data.items["APP_AUTH"][0]
        lst = pub.prefix + "auth.list"
        others = [x["appKey"] for x in data.items["APP_AUTH"][1:]]
        self.emu.publish(lst, json.dumps(others))  # only the list changes
        harness.wait_until(lambda: app["appKey"] not in a.held("APP_AUTH"), timeout=WAIT,
                           message="the app left with its id")
        self.assertIsNotNone(self.emu.get(pub.path("APP_AUTH", app)), "its key survives")
        self.emu.publish(lst, json.dumps(others + [app["appKey"]]))
        harness.wait_until(lambda: app["appKey"] in a.held("APP_AUTH"), timeout=WAIT,
                           message="the app came back with its id")

    def test_refresh_deleting_by_bare_name_leaves_no_ghost(self):
        data, pub, a = self.published_agent(seed=23)
        gone = data.items["APP_AUTH"][0]
        keep = data.items["APP_AUTH"][1:]
        pub.refresh("APP_AUTH", keep)
        self.assertIsNotNone(self.emu.get(pub.path("APP_AUTH", gone)), "ShenYu's bug")
        data.items["APP_AUTH"] = keep
        a.wait_converged(data.expected())
        # the surviving key changing is nothing to the gateway
        self.emu.publish(pub.path("APP_AUTH", gone), publisher.gson(data.changed("APP_AUTH", gone)))
        time.sleep(0.5)
        self.assertNotIn(gone["appKey"], a.held("APP_AUTH"))

    def test_a_one_rule_change_reads_that_key_only(self):
        data, pub, a = self.published_agent(seed=24)
        time.sleep(0.3)
        gets = self.emu.counts["get"]
        rule = data.changed("RULE", data.items["RULE"][0])
        self.emu.publish(pub.path("RULE", rule), publisher.gson(rule))
        harness.wait_until(lambda: a.held("RULE").get(rule["id"]) == publisher.strip_nulls(rule),
                           timeout=WAIT, message="the rule changed")
        self.assertEqual(1, self.emu.counts["get"] - gets)

    def test_a_2mb_value_arrives_whole(self):
        import base64
        data, pub, a = self.published_agent(seed=25)
        jar = base64.b64encode(os.urandom(1536 * 1024)).decode("ascii")
        plugin = dict(data.items["PLUGIN"][0], pluginJar=jar)
        pub.write("PLUGIN", plugin)
        harness.wait_until(lambda: a.held("PLUGIN").get(plugin["name"], {}).get("pluginJar")
                           == jar, timeout=WAIT, message="the 2 MB plugin")

    def test_20000_keys_are_split_in_listeners_of_at_most_10000(self):
        ns, pub = self.new_publisher()
        data = with_tcp(publisher.RandomData(seed=26, namespace=ns, selectors=2, rules=0))
        sel = data.items["SELECTOR"][0]
        base = data.new_rule(sel)
        rules = [dict(base, id=str(9000000000 + i), name="r%d" % i) for i in range(20000)]
        for r in rules:  # straight into the store: 20,000 admin events take too long
            self.emu.publish(pub.path("RULE", r), publisher.gson(r))
        self.emu.publish("%srule.%s.%s.list" % (pub.prefix, sel["pluginName"], sel["id"]),
                         json.dumps([r["id"] for r in rules]))
        data.items["RULE"] = rules
        pub.sync_all({g: v for g, v in data.items.items() if g != "RULE"})
        a = Agent(self, pub, namespace=ns)
        a.wait_converged(data.expected(), timeout=90)
        a.wait_status(lambda d: kvagent.connection(d)["watches"] == 3, "3 listeners")
        self.assertLessEqual(max(self.emu.listen_sizes[-10:]), emulator.MAX_LISTEN)
        self.assertEqual(0, self.emu.counts["listen_400"])
        # a change to the last rule is seen (whichever listener holds it)
        last = data.changed("RULE", rules[-1])
        self.emu.publish(pub.path("RULE", last), publisher.gson(last))
        harness.wait_until(lambda: a.held("RULE")[last["id"]] == publisher.strip_nulls(last),
                           timeout=WAIT, message="a change among 20,000 keys")

    # ------------------------------------------------------------------ faults
    def test_server_restart_and_dropped_holds_are_followed(self):
        data, pub, a = self.published_agent(seed=31)
        self.emu.drop_holds()
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged(data.expected())
        self.emu.stop()
        rule2 = data.new_rule()
        time.sleep(0.5)
        self.emu.start(self.emu.port)
        pub.write("RULE", rule2)  # written while the agent was away or just back
        data.items["RULE"].append(rule2)
        a.wait_converged(data.expected())
        a.wait_status(lambda d: d["healthy"], "healthy again")

    def test_a_server_refusing_every_listener_reaches_the_backoff(self):
        # reads work, listeners fail: the retry rule still counts to its backoff (3 tries,
        # then the backoff), it does not start over at every successful full read
        data, pub, a = self.published_agent(seed=35)
        self.emu.refuse_listen = 500
        self.addCleanup(setattr, self.emu, "refuse_listen", 0)
        self.emu.drop_holds()
        a.d.wait_log(r"all 3 tries failed", timeout=WAIT)
        self.emu.refuse_listen = 0
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged(data.expected())

    def test_an_expired_token_is_renewed_on_403(self):
        data, pub, a = self.published_agent(seed=32)
        logins = self.emu.counts["login"]
        self.emu.expire_tokens()
        self.emu.drop_holds()  # the next listener request carries the dead token
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged(data.expected())
        self.assertGreater(self.emu.counts["login"], logins)
        self.assertGreater(self.emu.counts["listen_403"] + self.emu.counts["get_403"], 0)

    def test_the_token_is_renewed_before_its_ttl(self):
        emu = emulator.NacosEmulator(users={"nacos": "s3cret-pw"}, token_ttl=3).start()
        self.addCleanup(emu.stop)
        pub = emulator.NodePublisher(emu, "ns1.")
        data = with_tcp(publisher.RandomData(seed=33, namespace="ns1"))
        pub.sync_all(data.items)
        a = Agent(self, pub, namespace="ns1", servers=[emu.url()])
        a.wait_converged()
        harness.wait_until(lambda: emu.counts["login"] >= 3, timeout=WAIT,
                           message="renewals at nine tenths of a 3 s ttl")
        self.assertEqual(0, emu.counts["listen_403"] + emu.counts["get_403"])

    def test_tls_with_the_configured_ca_and_a_refusal_with_another(self):
        pki = harness.make_test_ca(os.path.join(self.tmpdir(), "pki"))
        emu = emulator.NacosEmulator(users={"nacos": "s3cret-pw"}, tls=pki).start()
        self.addCleanup(emu.stop)
        pub = emulator.NodePublisher(emu, "ns1.")
        data = with_tcp(publisher.RandomData(seed=36, namespace="ns1"))
        pub.sync_all(data.items)
        a = Agent(self, pub, namespace="ns1", servers=[emu.url()],
                  extra={"tls": {"ca_file": pki["ca"]}})
        a.wait_converged()
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged(data.expected())
        b = Agent(self, pub, namespace="ns1", servers=[emu.url()],
                  extra={"tls": {"ca_file": pki["wrong_ca"]}})
        b.d.wait_log(r"server https://127\.0\.0\.1:\d+: login: .*TLS certificate verification "
                     r"failed: .*check nacos\.tls\.ca_file", timeout=WAIT)
        self.assertIsNone(kvagent.file_items(b.files, "PLUGIN"))

    def test_a_wrong_password_is_logged_and_retried(self):
        ns, pub = self.new_publisher()
        a = Agent(self, pub, namespace=ns, password="wrong")
        # the line names the server and the groups
        a.d.wait_log(r"server http://127\.0\.0\.1:\d+: login as nacos refused: HTTP 403.*"
                     r"\(groups PLUGIN,SELECTOR,RULE", timeout=WAIT)
        self.assertNotIn("wrong", "\n".join(a.d.lines(None, 0)))

    def test_absent_keys_are_empty_groups(self):
        ns, pub = self.new_publisher()
        a = Agent(self, pub, namespace=ns)
        a.wait_converged({g: {} for g in GROUPS})
        data = publisher.RandomData(seed=34, namespace=ns)
        pub.write("PLUGIN", data.items["PLUGIN"][0])
        a.wait_converged()

    def test_random_edits_converge_to_the_admins_state(self):
        data, pub, a = self.published_agent(seed=41)
        log = [data.random_edit(pub) for _ in range(150)]
        want = a.want()
        try:
            a.wait_converged(want)
        except AssertionError as e:
            raise AssertionError("%s\nlast edits:\n%s" % (e, "\n".join(log[-10:])))
        st = a.status()
        for g in GROUPS:
            self.assertEqual(len(want[g]), st["groups"][g]["items"], g)

    def test_snapshot_cold_start_serves_the_snapshot_then_catches_up(self):
        ns, pub = self.new_publisher()
        data = with_tcp(publisher.RandomData(seed=61, namespace=ns))
        pub.sync_all(data.items)
        state = self.tmpdir()
        first = Agent(self, pub, namespace=ns, state_dir=state)
        first.wait_converged()
        old = first.want()
        first.d.stop()
        self.emu.stop()  # the server is down when the agent starts
        for _ in range(5):
            data.random_edit(pub)
        a = Agent(self, pub, namespace=ns, state_dir=state)
        a.wait_converged(old)
        doc = a.wait_status(lambda d: all(d["groups"][g] for g in GROUPS), "every group held")
        self.assertTrue(all(doc["groups"][g]["fromSnapshot"] for g in GROUPS))
        self.emu.start(self.emu.port)  # the server comes
        a.wait_converged()
        a.wait_status(lambda d: not any(d["groups"][g]["fromSnapshot"] for g in GROUPS),
                      "snapshot replaced")

    def test_resync_repairs_what_a_lost_answer_missed_and_counts_it(self):
        data, pub, a = self.published_agent(seed=42, extra={"resync_interval": "2s"})
        # a change the listener never reports: the md5 the agent registered still matches
        # (the emulator is told to forget it), so only the resync finds it
        rule = data.changed("RULE", data.items["RULE"][0])
        key = pub.path("RULE", rule)
        old = self.emu.store[("", "DEFAULT_GROUP", key)]
        with self.emu.cv:  # a change without notifying holds (a lost notification)
            self.emu.store[("", "DEFAULT_GROUP", key)] = publisher.gson(rule).encode()
        self.assertNotEqual(old, self.emu.store[("", "DEFAULT_GROUP", key)])
        a.wait_status(lambda d: kvagent.connection(d)["repairs"] >= 1, "a repair counted",
                      timeout=WAIT)
        harness.wait_until(lambda: a.held("RULE")[rule["id"]] == publisher.strip_nulls(rule),
                           timeout=WAIT, message="the rule repaired")
        m = a.ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_source_repairs_total", source="nacos",
                                        type="nacos", connection=a.conn()["url"]), 1)

    def test_a_multi_key_admin_write_is_one_version(self):
        data, pub, a = self.published_agent(seed=43)
        time.sleep(0.3)
        since = len(a.applies())
        sel = data.items["SELECTOR"][0]
        rules = [data.new_rule(sel) for _ in range(5)]
        pub.write_many("RULE", rules)  # five item keys, then the rule list once
        data.items["RULE"].extend(rules)
        a.wait_converged(data.expected())
        got = a.applies("RULE", since)
        self.assertEqual(1, len(got), got)
        self.assertEqual(sorted(r["id"] for r in rules), sorted(got[0].added))

    # ------------------------------------------------------------------ bad input
    def test_bad_values_are_refused_and_the_last_good_kept(self):
        data, pub, a = self.published_agent(seed=51)
        app = data.items["APP_AUTH"][0]
        key = pub.path("APP_AUTH", app)
        for bad in (b"not json", b"\xff\xfe{\"appKey\":1}", b"[" * 5000, b'{"appKey": "x"'):
            self.emu.publish(key, bad)
            time.sleep(0.3)
            self.assertEqual(publisher.strip_nulls(app), a.held("APP_AUTH")[app["appKey"]])
        self.emu.publish(pub.prefix + "auth.list", b"\xff not a list")
        time.sleep(0.3)
        self.assertIn(app["appKey"], a.held("APP_AUTH"))
        fixed = data.changed("APP_AUTH", app)
        self.emu.publish(key, publisher.gson(fixed))
        self.emu.publish(pub.prefix + "auth.list",
                         json.dumps([x["appKey"] for x in data.items["APP_AUTH"]]))
        harness.wait_until(lambda: a.held("APP_AUTH")[app["appKey"]] ==
                           publisher.strip_nulls(fixed), timeout=WAIT, message="the fix")

    def test_a_flooding_or_trickling_server_fails_a_read_not_the_agent(self):
        data, pub, a = self.published_agent(
            seed=52, extra={"transfer_timeout": "2s"})
        self.emu.flood = 80 << 20  # above max_response (64 MiB)
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.d.wait_log("too_large", timeout=WAIT)
        self.emu.flood = 0
        self.emu.trickle = 0.05
        a.d.wait_log("timeout", timeout=WAIT)
        self.emu.trickle = 0.0
        data.items["RULE"].append(rule)
        a.wait_converged(data.expected())

    # ------------------------------------------------------------------ configuration
    def check(self, sec):
        d = harness.Daemon(harness.to_yaml({"nacos": sec}))
        self.addCleanup(d.close)
        return d.run_check(timeout=30)

    def test_check_refuses_ai_proxy_api_key_saying_why(self):
        r = self.check({"servers": [self.emu.url()], "groups": ["PLUGIN", "AI_PROXY_API_KEY"]})
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("AI_PROXY_API_KEY is never published to Nacos", r.stderr)

    def test_check_names_bad_keys_and_values(self):
        r = self.check({"servers": [self.emu.url()], "layuot": "plain"})
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("layout", r.stderr)  # did you mean
        r = self.check({"servers": [self.emu.url()], "layout": "flat"})
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("namespaced, plain or legacy", r.stderr)
        r = self.check({"servers": ["127.0.0.1:8848"]})
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("http://127.0.0.1:8848", r.stderr)
        r = self.check({"servers": [self.emu.url()], "context_path": "/nacos/"})
        self.assertEqual(0, r.returncode, r.stderr)


if __name__ == "__main__":
    harness.main()
