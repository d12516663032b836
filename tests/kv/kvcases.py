"""The cases issue 12 promises for both path-store sources, run by test_zookeeper.py and
test_etcd.py against one server each (started once per file, shared by every test, each
test under its own namespace so they never see each other's nodes).

A backend class mixes KvCases into harness.IntegrationTest and provides:
  KIND                      "zookeeper" or "etcd"
  setUpClass                cls.server (servers.ZooKeeper / servers.Etcd) and cls.store
  server_addresses()        what the agent's servers/endpoints list holds
  proxy(make_filter=None)   a proxy.Proxy to the server, and its address for the agent
  losing_proxy(pub)         (proxy, address, state, arm, lost) for anti-entropy: a proxy
                            that makes the agent miss changes of pub's RULE group once
                            arm() is called; lost() says how many it made it miss

What is asserted is behaviour: the data a subscriber holds against what was published,
how many versions reached the store and each subscriber, counters. Log wording is used
only where the issue names it (a refused value names its path; a repair names its group).
"""
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402  (puts tests/integration on the path)
import harness  # noqa: E402
import proxy  # noqa: E402
import publisher  # noqa: E402

WAIT = 30.0  # convergence limit: generous for a busy 2-core box and TSan builds
_counter = [0]


def _unique(prefix="t"):
    _counter[0] += 1
    return "%s%d-%d" % (prefix, os.getpid() % 10000, _counter[0])


class Agent:
    """One running (or configured) gwsyncd with a file subscriber, a recorder and the
    status endpoint, and the publisher it follows."""

    def __init__(self, test, pub, servers_, namespace=None, root=None, groups=None,
                 start=True, state_dir=None, **kw):
        self.test = test
        self.pub = pub
        self.files = test.tmpdir()
        self.rec = os.path.join(test.tmpdir(), "recorder.log")
        self.port = harness.free_port()
        self.ep = kvagent.Endpoint(self.port)
        self.groups = list(groups or publisher.KV_GROUPS)
        self.label = kvagent.label(test.KIND, servers_, root or pub.root)
        cfg = kvagent.config(test.KIND, servers_, root=root, namespace=namespace,
                             groups=self.groups, files=self.files, recorder=self.rec,
                             status_port=self.port,
                             state_dir=state_dir or "@TMP@/state", **kw)
        self.d = test.daemon(cfg, start=start)

    # -------------------------------------------------------------- what it holds
    def want(self):
        return self.pub.published(self.groups)

    def wait_converged(self, want=None, timeout=WAIT):
        try:
            kvagent.wait_converged(self.files, want if want is not None else self.want(),
                                   timeout)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.d.tail(25)))
        # the file subscriber has it; the recorder too (the dispatcher serves them in turn)
        self.wait_status(lambda d: all(s["inStep"] for s in d["subscribers"]),
                         "every subscriber in step", timeout)

    def applies(self, group=None, since=0):
        """The recorder's applies after the first `since` (of every group), optionally
        only those of `group`."""
        return [x for x in kvagent.applies(self.rec)[since:] if group in (None, x.group)]

    def accepted(self, group=None, since=0):
        return kvagent.accepted(self.d, group, since)

    def status(self):
        return self.ep.status()

    def conn(self):
        return kvagent.connection(self.status())

    def wait_status(self, predicate, message, timeout=WAIT):
        return self.ep.wait_status(predicate, timeout=timeout, message=message)


class FaultCases:
    """What the fault files share (test_zookeeper_faults.py, test_etcd_faults.py): a
    cluster started once per file by the subclass, every member alive again before each
    test, an agent converged on random data, new rules published, one proxy per member.
    A subclass names its members' addresses and client ports and its agent settings."""
    AGENT_SETTINGS = {}

    def member_addresses(self):
        raise NotImplementedError

    def member_port(self, i):
        raise NotImplementedError

    def setUp(self):
        # a test that stopped members leaves a whole cluster to the next one
        for i in range(self.server.n):
            if not self.server.alive(i):
                self.server.start_member(i)

    def new_publisher(self, layout="2.7", root=None):
        return KvCases.new_publisher(self, layout, root)

    def assert_added_once(self, a, group, keys, since=0):
        return KvCases.assert_added_once(self, a, group, keys, since)

    def start(self, seed, servers_=None, **kw):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=seed, namespace=ns)
        pub.sync_all(data.items)
        a = Agent(self, pub, servers_ or self.member_addresses(), namespace=ns,
                  **dict(self.AGENT_SETTINGS, **kw))
        a.wait_converged()
        return data, pub, a

    def publish_new_rules(self, data, pub, n):
        rules = [data.new_rule() for _ in range(n)]
        pub.write_many("RULE", rules)
        data.items["RULE"].extend(rules)
        return [r["id"] for r in rules]

    def proxies(self):
        out = []
        for i in range(self.server.n):
            px = proxy.Proxy(self.member_port(i))
            self.addCleanup(px.close)
            out.append(px)
        return out


class KvCases:
    KIND = None
    # agent settings that keep one connection try short (ZooKeeper: the session timeout)
    SHORT_TRIES = {}

    # -------------------------------------------------------------- helpers
    def new_publisher(self, layout="2.7", root=None):
        """A publisher under a namespace of this test's own: (namespace, Publisher)."""
        ns = _unique("ns-")
        p = publisher.Publisher(self.store, root or "/%s/shenyu" % ns, layout)
        self.addCleanup(p.wipe)
        return ns, p

    def agent(self, pub, namespace=None, servers_=None, **kw):
        return Agent(self, pub, servers_ or self.server_addresses(), namespace=namespace, **kw)

    def published_agent(self, seed=1, groups=publisher.KV_GROUPS, **kw):
        """Publish a random dataset, start an agent on it, wait until it holds it all."""
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=seed, namespace=ns, groups=groups)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns, groups=groups, **kw)
        a.wait_converged()
        return data, pub, a

    def sentinel(self, a, data, since):
        """Publish one new APP_AUTH item and wait until the recorder has it: every change
        published before it has been built and offered by then (settle runs per group,
        the sentinel's window ends last)."""
        item = data.new_app_auth()
        a.pub.write("APP_AUTH", item)
        data.items["APP_AUTH"].append(item)
        key = item["appKey"]
        harness.wait_until(lambda: any(key in x.added for x in a.applies("APP_AUTH", since)),
                           timeout=WAIT, message="the sentinel APP_AUTH %s delivered" % key)

    def assert_added_once(self, a, group, keys, since=0):
        """Each key was delivered as added exactly once (no change lost or duplicated)."""
        seen = {}
        for x in a.applies(group, since):
            for k in x.added:
                seen[k] = seen.get(k, 0) + 1
        wrong = {k: seen.get(k, 0) for k in keys if seen.get(k, 0) != 1}
        self.assertFalse(wrong, "%s keys not added exactly once: %s" % (group, wrong))

    def raw_file(self, a, group):
        with open(os.path.join(a.files, group + ".json"), encoding="utf-8") as f:
            return f.read()

    # -------------------------------------------------------------- start-up
    def test_startup_syncs_every_group_in_the_27_namespace_layout(self):
        data, pub, a = self.published_agent(seed=11)
        self.assertEqual(data.expected(), a.want(), "the publisher's model and the store differ")
        # one version per group at start, each with every item
        got = {}
        for g, _, _, n in a.accepted():
            got.setdefault(g, []).append(n)
        self.assertEqual({g: [len(data.items[g])] for g in publisher.KV_GROUPS}, got)
        # the items are kept as the admin wrote them, byte for byte (Gson's \u003d ...)
        for path, text in pub.nodes().items():
            self.assertIn(text, self.raw_file(a, pub.group_of(path)), path)
        self.assertIn("\\u003d", self.raw_file(a, "SELECTOR"))
        # and every group's version names the store it came from
        doc = a.status()
        for g in publisher.KV_GROUPS:
            self.assertEqual(a.label, doc["groups"][g]["source"], g)
            self.assertEqual(len(data.items[g]), doc["groups"][g]["items"], g)

    def test_startup_syncs_the_26_layout_with_url_encoded_metadata(self):
        ns, pub = self.new_publisher(layout="2.6", root="/shenyu")
        data = publisher.RandomData(seed=12, namespace=None)
        data.items["META_DATA"].append(dict(data.new_meta(), path="/order/find by id/é+x"))
        pub.sync_all(data.items)
        self.assertTrue(any("%2F" in p for p in pub.nodes("META_DATA")))
        a = self.agent(pub, root="/shenyu")
        a.wait_converged()
        self.assertEqual(data.expected(), a.want())
        # a change after start-up, in the flat metaData layout
        meta = data.changed("META_DATA", data.items["META_DATA"][-1])
        pub.write("META_DATA", meta)
        a.wait_converged()
        self.assertEqual("m", kvagent.file_items(a.files, "META_DATA")[meta["id"]]["methodName"][0])

    def test_an_empty_store_gives_every_group_an_empty_version(self):
        ns, pub = self.new_publisher()
        a = self.agent(pub, namespace=ns)
        a.wait_converged({g: {} for g in publisher.KV_GROUPS})
        doc = a.wait_status(lambda d: d["healthy"], "healthy with empty groups")
        self.assertTrue(all(doc["groups"][g]["items"] == 0 for g in publisher.KV_GROUPS))
        # the first item of a group that had none arrives
        data = publisher.RandomData(seed=13, namespace=ns)
        pub.write("PLUGIN", data.items["PLUGIN"][0])
        a.wait_converged()

    def test_only_the_configured_groups_are_read(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=14, namespace=ns)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns, groups=["PLUGIN", "RULE"])
        a.wait_converged()
        self.assertFalse(os.path.exists(os.path.join(a.files, "SELECTOR.json")))
        self.assertEqual({"PLUGIN", "RULE"}, {g for g, _, _, _ in a.accepted()})

    def test_a_plugin_with_a_large_jar_arrives_whole(self):
        # A PluginData node holds its uploaded jar (Base64) in pluginJar: values near the
        # store's limits (ZooKeeper's jute.maxbuffer is about 1 MiB) must arrive whole, at
        # start-up and as a change.
        import base64
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=15, namespace=ns)
        jar = base64.b64encode(os.urandom(600 * 1024)).decode("ascii")
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

    # -------------------------------------------------------------- watching
    def test_200_random_edits_converge_to_exactly_the_published_state(self):
        data, pub, a = self.published_agent(seed=21)
        log = [data.random_edit(pub) for _ in range(200)]
        want = a.want()
        self.assertEqual(data.expected(), want, "the publisher's model and the store differ")
        try:
            a.wait_converged(want)
        except AssertionError as e:
            # name the edits and store paths behind each key that differs
            keys = set()
            for g, items in want.items():
                have = kvagent.file_items(a.files, g) or {}
                keys |= {k for k in set(items) ^ set(have)}
                keys |= {k for k in set(items) & set(have) if items[k] != have[k]}
            paths = [p for p in pub.nodes() if any(k in p for k in keys)]
            edits = ["%d: %s" % (i, x) for i, x in enumerate(log) if any(k in x for k in keys)]
            raise AssertionError("%s\nstore paths: %s\nedits naming them:\n%s\nlast edits:\n%s"
                                 % (e, paths, "\n".join(edits), "\n".join(log[-10:])))
        # and nothing after: the store holds exactly one version per group's final state
        st = a.status()
        for g in publisher.KV_GROUPS:
            self.assertEqual(len(want[g]), st["groups"][g]["items"], g)

    def test_a_change_arrives_without_waiting_for_a_resync(self):
        data, pub, a = self.published_agent(seed=22)
        rule = data.new_rule()
        t0 = time.monotonic()
        pub.write("RULE", rule)
        harness.wait_until(lambda: rule["id"] in (kvagent.file_items(a.files, "RULE") or {}),
                           timeout=WAIT, message="the new rule delivered")
        self.assertLess(time.monotonic() - t0, 10.0)

    def test_a_subtree_deleted_and_created_again_at_once_is_followed(self):
        # one-shot watches (ZooKeeper) fire once: a plugin's selector directory deleted
        # and created again before the watch is set again must still be read again
        data, pub, a = self.published_agent(seed=29)
        plugin = next(p for p in data.items["PLUGIN"]
                      if any(s["pluginName"] == p["name"] for s in data.items["SELECTOR"]))
        for _ in range(15):
            data.delete_plugin(pub, plugin)
            pub.write("PLUGIN", plugin)
            data.items["PLUGIN"].append(plugin)
            sel = data.new_selector(plugin)
            pub.write("SELECTOR", sel)
            data.items["SELECTOR"].append(sel)
            rule = data.new_rule(sel)
            pub.write("RULE", rule)
            data.items["RULE"].append(rule)
        self.assertEqual(data.expected(), a.want())
        a.wait_converged()

    def test_refresh_arrives_as_one_change_with_the_true_delta(self):
        data, pub, a = self.published_agent(seed=23)
        plugin = data.items["SELECTOR"][0]["pluginName"]
        mine = [s for s in data.items["SELECTOR"] if s["pluginName"] == plugin]
        while len(mine) < 4:
            s = data.new_selector(next(p for p in data.items["PLUGIN"] if p["name"] == plugin))
            pub.write("SELECTOR", s)
            data.items["SELECTOR"].append(s)
            mine.append(s)
        a.wait_converged()
        mark_rec = len(a.applies())
        mark_log = a.d.mark()
        removed = mine[-1]
        changed = data.changed("SELECTOR", mine[0])
        added = data.new_selector(next(p for p in data.items["PLUGIN"] if p["name"] == plugin))
        fresh = [changed] + mine[1:-1] + [added]
        pub.refresh("SELECTOR", fresh)
        data.items["SELECTOR"] = [s for s in data.items["SELECTOR"]
                                  if s["pluginName"] != plugin] + fresh
        a.wait_converged()
        self.sentinel(a, data, mark_rec)
        total = len(data.items["SELECTOR"])
        versions = a.accepted("SELECTOR", mark_log)
        self.assertEqual(1, len(versions), "the store took %s for one REFRESH" % versions)
        self.assertEqual(total, versions[0][3])
        changes = [x for x in a.applies()[mark_rec:] if x.group == "SELECTOR"]
        self.assertEqual(1, len(changes), "the subscriber saw %s" % changes)
        x = changes[0]
        self.assertEqual(total, x.items)
        self.assertEqual([added["id"]], x.added)
        self.assertEqual([changed["id"]], x.updated)
        self.assertEqual([removed["id"]], x.removed)

    def test_deletes_are_applied_including_a_plugins_selectors_and_rules(self):
        data, pub, a = self.published_agent(seed=24)
        mark = len(a.applies())
        gone = {}
        for g in ("RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR", "DISCOVER_UPSTREAM"):
            victim = data.items[g][0]
            pub.delete(g, victim)
            data.items[g].remove(victim)
            gone[g] = publisher.item_key(g, victim)
        plugin = next(p for p in data.items["PLUGIN"]
                      if any(s["pluginName"] == p["name"] for s in data.items["SELECTOR"]))
        sels = [s["id"] for s in data.items["SELECTOR"] if s["pluginName"] == plugin["name"]]
        rules = [r["id"] for r in data.items["RULE"] if r["pluginName"] == plugin["name"]]
        data.delete_plugin(pub, plugin)
        self.assertEqual(data.expected(), a.want())
        a.wait_converged()
        removed = {}
        for x in a.applies()[mark:]:
            removed.setdefault(x.group, set()).update(x.removed)
        for g, key in gone.items():
            self.assertIn(key, removed.get(g, ()), g)
        self.assertIn(plugin["name"], removed["PLUGIN"])
        self.assertTrue(set(sels) <= removed["SELECTOR"])
        self.assertTrue(set(rules) <= removed["RULE"])

    def test_a_renamed_plugin_leaves_no_ghost(self):
        # A plugin renamed in ShenYu's admin is an update of its id under the new name:
        # the admin writes a node under the new name and leaves the old one, holding the
        # same id (issue 20 item 10). The newest of the nodes holding one id is the
        # plugin; the old one is not delivered, by the watch nor by a fresh read.
        data, pub, a = self.published_agent(seed=33)
        old = next(p for p in data.items["PLUGIN"]
                   if not any(s["pluginName"] == p["name"] for s in data.items["SELECTOR"]))
        renamed = dict(old, name=old["name"] + "-renamed", sort=old.get("sort", 0) + 1)
        mark = len(a.applies())
        pub.write("PLUGIN", renamed)
        want = a.want()
        self.assertIn(old["name"], want["PLUGIN"])  # the store still holds the old node
        del want["PLUGIN"][old["name"]]
        a.wait_converged(want)
        changes = [x for x in a.applies()[mark:] if x.group == "PLUGIN"]
        self.assertEqual([([renamed["name"]], [old["name"]])],
                         [(x.added, x.removed) for x in changes])
        # an agent starting on the same store reads both nodes and decides the same
        b = self.agent(pub, namespace=pub.root.split("/")[1])
        b.wait_converged(want)

    def test_malformed_value_is_refused_the_last_good_kept_and_a_fix_accepted(self):
        data, pub, a = self.published_agent(seed=25)
        good = kvagent.file_items(a.files, "RULE")
        mark = a.d.mark()
        bad = data.new_rule()
        path = pub.path("RULE", bad)
        pub.write_raw(path, '{"id":"%s","name":' % bad["id"])
        # log wording is the behaviour here: the refusal names the node's path
        a.d.wait_log(r"refused RULE: %s" % re.escape(path), timeout=WAIT, since=mark)
        # another good change in the same group is held back with it; other groups go on
        upd = data.changed("RULE", data.items["RULE"][0])
        pub.write("RULE", upd)
        plugin = data.changed("PLUGIN", data.items["PLUGIN"][0])
        pub.write("PLUGIN", plugin)
        harness.wait_until(lambda: kvagent.file_items(a.files, "PLUGIN")[plugin["name"]]
                           == publisher.strip_nulls(plugin), timeout=WAIT,
                           message="the PLUGIN change delivered")
        self.assertEqual(good, kvagent.file_items(a.files, "RULE"), "the last good RULE changed")
        self.assertEqual(0, len(a.accepted("RULE", mark)))
        # the node is corrected: the group is built again, with both changes
        data.items["RULE"].append(bad)
        pub.write("RULE", bad)
        a.wait_converged()
        self.assertEqual(publisher.strip_nulls(upd),
                         kvagent.file_items(a.files, "RULE")[upd["id"]])

    def test_an_item_without_its_key_is_refused(self):
        data, pub, a = self.published_agent(seed=26)
        mark = a.d.mark()
        item = data.new_meta()
        del item["id"]
        path = pub.path("META_DATA", item)
        pub.write_raw(path, publisher.gson(item))
        # log wording is the behaviour here: the refusal names the node's path
        a.d.wait_log(r"refused META_DATA: %s" % re.escape(path), timeout=WAIT, since=mark)
        pub.store.delete(path)
        self.sentinel(a, data, len(a.applies()))
        self.assertEqual(0, len(a.accepted("META_DATA", mark)))

    def test_identical_rewrites_and_refreshes_deliver_nothing(self):
        data, pub, a = self.published_agent(seed=27)
        mark_rec, mark_log = len(a.applies()), a.d.mark()
        pub.write("PLUGIN", data.items["PLUGIN"][0])  # the same bytes again
        plugin = data.items["RULE"][0]["pluginName"]
        pub.refresh("RULE", [r for r in data.items["RULE"] if r["pluginName"] == plugin])
        self.sentinel(a, data, mark_rec)
        self.assertEqual([], [v for v in a.accepted(None, mark_log) if v[0] != "APP_AUTH"])
        self.assertEqual([], [x for x in a.applies()[mark_rec:] if x.group != "APP_AUTH"])

    def test_settle_coalesces_a_burst_into_one_version(self):
        data, pub, a = self.published_agent(seed=28, settle="1s")
        mark_rec, mark_log = len(a.applies()), a.d.mark()
        burst = [data.new_rule() for _ in range(15)]
        t0 = time.monotonic()
        pub.write_many("RULE", burst)
        took = time.monotonic() - t0
        data.items["RULE"].extend(burst)
        a.wait_converged()
        if took >= 0.9:
            self.skipTest("publishing the burst took %.2fs, longer than settle" % took)
        versions = a.accepted("RULE", mark_log)
        self.assertEqual(1, len(versions), versions)
        changes = [x for x in a.applies()[mark_rec:] if x.group == "RULE"]
        self.assertEqual(1, len(changes))
        self.assertEqual(sorted(r["id"] for r in burst), sorted(changes[0].added))

    # -------------------------------------------------------------- operating
    def test_status_and_metrics_show_the_source(self):
        data, pub, a = self.published_agent(seed=31)
        before = a.conn()
        pub.write("RULE", data.changed("RULE", data.items["RULE"][0]))
        a.wait_converged()
        doc = a.wait_status(lambda d: kvagent.connection(d)["lastEvent"] is not None and
                            kvagent.connection(d)["changes"] > before["changes"],
                            "lastEvent and changes after a change")
        self.assertEqual(self.KIND, doc["source"]["type"])
        self.assertEqual(self.KIND, doc["source"]["name"])
        c = kvagent.connection(doc)
        self.assertEqual(a.label, c["url"])
        self.assertEqual("connected", c["state"])
        self.assertTrue(doc["healthy"])
        self.assertGreater(c["watches"], 0)
        self.assertGreater(c["revision"], 0)
        self.assertEqual(0, c["repairs"])
        self.check_session(c["session"])
        self.assertEqual(doc["servers"][0]["url"], c["url"])
        m = a.ep.metrics()
        lbl = {"source": self.KIND, "type": self.KIND, "connection": a.label}
        self.assertEqual(1, m.value("gwsync_source_info", source=self.KIND, type=self.KIND))
        self.assertGreater(m.value("gwsync_source_watches", **lbl), 0)
        self.assertGreater(m.value("gwsync_source_revision", **lbl), 0)
        self.assertGreater(m.value("gwsync_source_changes_total", **lbl), 0)
        self.assertEqual(0, m.value("gwsync_source_repairs_total", **lbl))
        self.assertGreater(m.value("gwsync_source_last_event_timestamp_seconds", **lbl), 0)
        states = {dict(k)["state"]: v for k, v in m.series("gwsync_source_connection_state").items()}
        self.assertEqual(1, sum(states.values()), "one state at a time: %s" % states)
        self.assertEqual(1, states.get("connected"), states)

    def test_the_revision_follows_the_store(self):
        data, pub, a = self.published_agent(seed=32)
        r0 = a.conn()["revision"]
        pub.write("RULE", data.changed("RULE", data.items["RULE"][0]))
        a.wait_converged()
        a.wait_status(lambda d: kvagent.connection(d)["revision"] > r0, "the revision to grow")

    def test_an_idle_agent_sleeps(self):
        data, pub, a = self.published_agent(seed=38)

        def cpu_ticks():
            with open("/proc/%d/stat" % a.d.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])  # utime + stime, every thread
        hz = os.sysconf("SC_CLK_TCK")
        t0, c0 = time.monotonic(), cpu_ticks()
        time.sleep(3.0)  # nothing changes: watches held, no timer due
        used = (cpu_ticks() - c0) / hz
        self.assertLess(used, 0.15, "%.2fs of CPU in %.1fs idle" % (used, time.monotonic() - t0))

    def test_sigterm_exits_within_a_second(self):
        data, pub, a = self.published_agent(seed=33)
        rc, took = a.d.stop(signal.SIGTERM, timeout=5)
        self.assertEqual(0, rc, a.d.tail())
        self.assertLess(took, 1.0)

    def test_sigterm_exits_within_a_second_while_the_server_is_unreachable(self):
        ns, pub = self.new_publisher()
        px, addr = self.proxy()
        a = self.agent(pub, namespace=ns, servers_=[addr])
        a.wait_converged({g: {} for g in publisher.KV_GROUPS})
        px.block()
        a.wait_status(lambda d: kvagent.connection(d)["state"] != "connected",
                      "the connection lost")
        rc, took = a.d.stop(signal.SIGTERM, timeout=5)
        self.assertEqual(0, rc, a.d.tail())
        self.assertLess(took, 1.0)

    def test_once_syncs_a_live_server_and_exits(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=34, namespace=ns)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns, start=False)
        r = a.d.run_once(timeout=60)
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        for g, items in a.want().items():
            self.assertEqual("", kvagent.differences(items, kvagent.file_items(a.files, g)), g)

    def test_once_with_the_server_down_fails(self):
        ns, pub = self.new_publisher()
        px, addr = self.proxy()
        px.block()
        a = self.agent(pub, namespace=ns, servers_=[addr], start=False)
        r = a.d.run_once(timeout=60)
        self.assertEqual(1, r.returncode, r.stderr[-3000:])

    def test_once_with_the_server_down_delivers_the_snapshot(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=36, namespace=ns)
        pub.sync_all(data.items)
        state = self.tmpdir()
        first = self.agent(pub, namespace=ns, state_dir=state)
        first.wait_converged()
        old = first.want()
        first.d.stop()
        px, addr = self.proxy()
        px.block()  # the server is down for the one-shot run
        a = self.agent(pub, namespace=ns, servers_=[addr], state_dir=state, start=False)
        r = a.d.run_once(timeout=60)
        self.assertEqual(0, r.returncode, r.stderr[-3000:])
        for g, items in old.items():
            self.assertEqual("", kvagent.differences(items, kvagent.file_items(a.files, g)), g)

    def test_snapshot_cold_start_serves_the_snapshot_then_catches_up(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=35, namespace=ns)
        pub.sync_all(data.items)
        state = self.tmpdir()
        first = self.agent(pub, namespace=ns, state_dir=state)
        first.wait_converged()
        old = first.want()
        first.d.stop()
        for _ in range(10):
            data.random_edit(pub)
        px, addr = self.proxy()
        px.block()  # the server is down when the agent starts
        a = self.agent(pub, namespace=ns, servers_=[addr], state_dir=state)
        a.wait_converged(old)
        doc = a.wait_status(lambda d: all(d["groups"][g] for g in publisher.KV_GROUPS),
                            "every group held")
        self.assertTrue(all(doc["groups"][g]["fromSnapshot"] for g in publisher.KV_GROUPS))
        px.unblock()  # the server comes
        a.wait_converged()
        a.wait_status(lambda d: not any(d["groups"][g]["fromSnapshot"]
                                        for g in publisher.KV_GROUPS), "snapshot replaced")

    def test_reconnects_follow_the_retry_rules(self):
        ns, pub = self.new_publisher()
        px, addr = self.proxy()
        a = self.agent(pub, namespace=ns, servers_=[addr],
                       retry={"attempts": 2, "interval": "200ms", "backoff": "3s"},
                       **self.SHORT_TRIES)
        a.wait_converged({g: {} for g in publisher.KV_GROUPS})
        px.block()
        a.wait_status(lambda d: kvagent.connection(d)["state"] == "backing_off",
                      "backing off after a round of failed tries")
        self.assertGreaterEqual(a.conn()["consecutiveFailures"], 2)
        data = publisher.RandomData(seed=36, namespace=ns)
        pub.write("PLUGIN", data.items["PLUGIN"][0])
        px.unblock()
        a.wait_converged()
        a.wait_status(lambda d: kvagent.connection(d)["state"] == "connected", "connected again")

    def test_server_restart_is_followed_without_restarting_the_agent(self):
        data, pub, a = self.published_agent(seed=37)
        mark = len(a.applies())
        self.server.restart(0)
        rules = [data.new_rule() for _ in range(3)]
        pub.write_many("RULE", rules)
        data.items["RULE"].extend(rules)
        a.wait_converged()
        self.assert_added_once(a, "RULE", [r["id"] for r in rules], mark)
        self.assertTrue(a.d.alive())

    # -------------------------------------------------------------- anti-entropy
    def test_resync_repairs_a_lost_change_and_counts_it(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=41, namespace=ns)
        pub.sync_all(data.items)
        px, addr, state, arm, lost = self.losing_proxy(pub)
        self.repair_lost_change(data, pub, px, addr, arm, lost)

    def repair_lost_change(self, data, pub, px, addr, arm, lost):
        ns = pub.root.split("/")[1]
        a = self.agent(pub, namespace=ns, servers_=[addr], resync_interval="1s")
        a.wait_converged()
        # in step: resyncs find nothing to repair (a few intervals pass)
        time.sleep(2.5)
        self.assertEqual(0, a.conn()["repairs"])
        a.d.assert_no_log(r"resync repaired")
        mark = a.d.mark()
        arm()
        rule = data.new_rule()
        pub.write("RULE", rule)
        harness.wait_until(lambda: lost() > 0, timeout=WAIT, message="a change lost on the way")
        # the store moves on past the lost change (later changes do arrive)
        plugin = data.changed("PLUGIN", data.items["PLUGIN"][0])
        pub.write("PLUGIN", plugin)
        data.items["PLUGIN"][0] = plugin
        doc = a.wait_status(lambda d: kvagent.connection(d)["repairs"] >= 1, "repairs counted")
        a.wait_converged()
        self.assertIn(pub.path("RULE", rule), "\n".join(a.d.lines(None, mark)))
        m = a.ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_source_repairs_total", source=self.KIND,
                                        type=self.KIND, connection=a.label), 1)
        self.assertTrue(doc["healthy"])

    # -------------------------------------------------------------- configuration
    def check(self, text):
        d = harness.Daemon(text)
        self.addCleanup(d.close)
        return d.run_check(timeout=30)

    def section(self):
        return harness.to_yaml({self.KIND: {kvagent.servers_key(self.KIND):
                                            self.server_addresses()}})

    def test_two_source_sections_exit_2_naming_the_line(self):
        other = "admin:\n  servers: [\"http://127.0.0.1:9095\"]\n"
        r = self.check(self.section() + other)
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertRegex(r.stderr, r"\.yaml:\d+:\d+: admin: .*%s: \(line \d+\)" % self.KIND)
        other = "zookeeper:\n  servers: [\"127.0.0.1:2181\"]\n" if self.KIND == "etcd" else \
            "etcd:\n  endpoints: [\"http://127.0.0.1:2379\"]\n"
        r = self.check(other + self.section())
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertRegex(r.stderr, r"\.yaml:\d+:\d+: %s: .*\(line \d+\)" % self.KIND)

    def test_no_source_section_exits_2(self):
        r = self.check("state_dir: /tmp/none\n")
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("source section", r.stderr)

    def test_ai_proxy_api_key_is_refused_at_check_with_the_reason(self):
        text = harness.to_yaml({self.KIND: {
            kvagent.servers_key(self.KIND): self.server_addresses(),
            "groups": ["PLUGIN", "AI_PROXY_API_KEY"]}})
        r = self.check(text)
        self.assertEqual(2, r.returncode, r.stderr)
        self.assertIn("AI_PROXY_API_KEY", r.stderr)
        self.assertIn("never published", r.stderr)

    def test_settle_and_resync_bounds_are_checked(self):
        key = kvagent.servers_key(self.KIND)
        for extra, word in (({"settle": "2s"}, "settle"),
                            ({"resync_interval": "500ms"}, "resync_interval")):
            sec = {key: self.server_addresses()}
            sec.update(extra)
            r = self.check(harness.to_yaml({self.KIND: sec}))
            self.assertEqual(2, r.returncode, r.stderr)
            self.assertRegex(r.stderr, r"\.yaml:\d+:\d+: %s\.%s: " % (self.KIND, word))

    def test_a_valid_configuration_passes_check(self):
        ns, pub = self.new_publisher()
        a = self.agent(pub, namespace=ns, start=False)
        r = a.d.run_check()
        self.assertEqual(0, r.returncode, r.stderr)
