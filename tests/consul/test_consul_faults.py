#!/usr/bin/env python3
"""The Consul source against a misbehaving Consul (emulator.py's faults): the index going
backwards, answers that come back at once (the loop is paced, never busy), held queries
cut and the server restarted, ACL tokens refused or too narrow, and bodies that are not
Consul's (not JSON, invalid UTF-8, nested a hundred thousand deep, over max_response,
trickled, flooded). Each fault leaves the last good data in place and the agent in step
once the server behaves again. One emulator per kind for the whole file."""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "kv"))
sys.path.insert(0, HERE)
import kvagent  # noqa: E402  (puts tests/integration on the path)
import kvcases  # noqa: E402
import harness  # noqa: E402
import publisher  # noqa: E402
import consulstore  # noqa: E402
emulator = consulstore.load_emulator()

WAIT = kvcases.WAIT
GOOD = "5d1f0a8e-good-token-0c2b"
ADMIN = "9e7c3b21-admin-token-77aa"


class ConsulFaults(harness.IntegrationTest):
    KIND = "consul"

    @classmethod
    def setUpClass(cls):
        cls.server = emulator.Emulator()
        cls.store = consulstore.ConsulStore(cls.server.url)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def setUp(self):
        emu = self.server
        emu.immediate, emu.trickle, emu.flood, emu.bad_body = False, None, False, None
        emu.foreign_404 = False

    tearDown = setUp
    new_publisher = kvcases.KvCases.new_publisher
    published_agent = kvcases.KvCases.published_agent

    def agent(self, pub, namespace=None, servers_=None, **kw):
        return kvcases.Agent(self, pub, servers_ or [self.server.url], namespace=namespace, **kw)

    def queries(self, since):
        """The agent's blocking queries (with an index) since monotonic time `since`."""
        return [p for _, _, p in self.server.gets(since) if "&index=" in p]

    # -------------------------------------------------------------- index rules
    def test_an_index_that_goes_backwards_is_a_full_read_and_the_watch_goes_on(self):
        data, pub, a = self.published_agent(seed=71)
        r0 = a.conn()["revision"]
        mark, mark_rec = a.d.mark(), len(a.applies())
        # a snapshot restored into a new cluster: the same data at far lower indexes, and
        # a key lost with it (no tombstone: the restore never saw its delete)
        victim = data.items["APP_AUTH"][0]
        self.server.store.reset_indexes()
        pub.delete("APP_AUTH", victim)
        data.items["APP_AUTH"].remove(victim)
        a.d.wait_log(r"index of .* went backwards", timeout=WAIT, since=mark)
        a.wait_converged()
        a.wait_status(lambda d: kvagent.connection(d)["revision"] < r0,
                      "the revision follows the new, lower index")
        # what did not change was not delivered again; the delete was
        changes = a.applies()[mark_rec:]
        self.assertEqual({"APP_AUTH"}, {x.group for x in changes}, changes)
        self.assertIn(publisher.item_key("APP_AUTH", victim),
                      [k for x in changes for k in x.removed])
        # blocking again: a change arrives, and nothing spins meanwhile
        t0 = time.monotonic()
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged()
        time.sleep(1.0)
        self.assertLessEqual(len(self.queries(t0)), 6, self.queries(t0))

    def test_answers_at_once_without_a_change_are_paced_not_looped(self):
        data, pub, a = self.published_agent(seed=72, section_extra={"pace_max": "2s"})
        mark = a.d.mark()
        self.server.immediate = True
        self.server.drop_holds()  # the query held now ends; the next are answered at once
        time.sleep(0.5)
        t0 = time.monotonic()
        time.sleep(4.0)
        n = len(self.queries(t0))
        # 250 ms, 500 ms, 1 s, then 2 s apart: about 4 in 4 s (a busy loop: thousands)
        self.assertLessEqual(n, 7, "%d blocking queries in 4 s" % n)
        self.assertGreaterEqual(n, 1)
        a.d.wait_log(r"answered at once with nothing new; pausing", timeout=WAIT, since=mark)
        # a change still arrives while paced, and the pace ends when Consul holds again
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged()
        self.server.immediate = False
        time.sleep(2.5)
        t1 = time.monotonic()
        time.sleep(2.0)
        self.assertLessEqual(len(self.queries(t1)), 1)

    # -------------------------------------------------------------- connections
    def test_queries_cut_mid_hold_are_resumed_from_the_index_reached(self):
        data, pub, a = self.published_agent(seed=73)
        mark_rec = len(a.applies())
        for _ in range(3):
            harness.wait_until(lambda: self.server.conns, timeout=WAIT,
                               message="a query held")
            self.server.drop_holds()
            time.sleep(0.2)
        rules = [data.new_rule() for _ in range(3)]
        pub.write_many("RULE", rules)
        data.items["RULE"].extend(rules)
        a.wait_converged()
        kvcases.KvCases.assert_added_once(self, a, "RULE", [r["id"] for r in rules], mark_rec)
        self.assertEqual(0, a.conn()["repairs"])
        self.assertGreater(a.conn()["errors"]["connect"], 0)

    def test_a_restart_with_the_server_down_a_while_is_followed(self):
        data, pub, a = self.published_agent(seed=74)
        self.server.restart(0, down_s=1.0)
        a.wait_converged()
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged()
        a.wait_status(lambda d: kvagent.connection(d)["state"] == "connected", "connected")

    # -------------------------------------------------------------- bad bodies
    def bad_body_case(self, kind, why, seed, **kw):
        data, pub, a = self.published_agent(seed=seed, **kw)
        good = {g: kvagent.file_items(a.files, g) for g in publisher.KV_GROUPS}
        mark = a.d.mark()
        self.server.bad_body = kind
        rule = data.new_rule()
        pub.write("RULE", rule)
        a.d.wait_log(why, timeout=WAIT, since=mark)
        time.sleep(0.3)
        self.assertEqual(good, {g: kvagent.file_items(a.files, g) for g in publisher.KV_GROUPS},
                         "the last good data changed")
        self.assertTrue(a.d.alive())
        self.server.bad_body = None
        data.items["RULE"].append(rule)
        a.wait_converged()
        return a

    def test_a_body_that_is_not_json_is_refused_and_the_last_good_kept(self):
        self.bad_body_case("nonjson", r"not a JSON array.*\[parse\]", 75)

    def test_invalid_utf8_in_a_key_is_refused(self):
        self.bad_body_case("invalid_utf8", r"Key is not a valid string.*\[parse\]", 76)

    def test_json_nested_a_hundred_thousand_deep_is_refused_without_recursion(self):
        self.bad_body_case("deep", r"nested too deeply.*\[parse\]", 77)

    def test_an_answer_over_max_response_is_refused(self):
        self.server.huge_bytes = 6 << 20
        self.bad_body_case("huge", r"larger than .*max_response.*\[too_large\]", 78,
                           section_extra={"max_response": "4MiB"})

    def test_a_flood_that_never_ends_is_cut_at_max_response(self):
        data, pub, a = self.published_agent(seed=79, section_extra={"max_response": "2MiB"})
        mark = a.d.mark()
        self.server.flood = True
        pub.write("RULE", data.new_rule())
        a.d.wait_log(r"larger than .*max_response.*\[too_large\]", timeout=WAIT, since=mark)
        self.server.flood = False
        self.server.drop_holds()
        a.wait_converged()

    def test_a_404_that_is_not_consuls_is_refused_not_taken_as_everything_deleted(self):
        # Consul's 404 for an absent prefix carries X-Consul-Index; a proxy's does not, and
        # taking it as "nothing below the root" would empty every group at the gateway
        data, pub, a = self.published_agent(seed=83)
        good = {g: kvagent.file_items(a.files, g) for g in publisher.KV_GROUPS}
        mark = a.d.mark()
        self.server.foreign_404 = True
        self.server.drop_holds()
        a.d.wait_log(r"HTTP 404 without an X-Consul-Index.*\[parse\]", timeout=WAIT, since=mark)
        self.assertEqual(good, {g: kvagent.file_items(a.files, g) for g in publisher.KV_GROUPS})
        self.server.foreign_404 = False
        rule = data.new_rule()
        pub.write("RULE", rule)
        data.items["RULE"].append(rule)
        a.wait_converged()

    def test_a_trickled_read_is_cut_by_transfer_timeout(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=80, namespace=ns)
        pub.sync_all(data.items)
        self.server.trickle = 16  # 16 bytes every 50 ms: the start-up read takes minutes
        a = self.agent(pub, namespace=ns, section_extra={"transfer_timeout": "2s"})
        a.d.wait_log(r"not complete after 2000 ms.*\[timeout\]", timeout=WAIT)
        self.server.trickle = None
        a.wait_converged()


class ConsulTokens(harness.IntegrationTest):
    """Consul with ACLs: the admin writes with its own token; the agent's token is sent as
    X-Consul-Token and never shown."""
    KIND = "consul"
    NS = "ns-acl"

    @classmethod
    def setUpClass(cls):
        cls.server = emulator.Emulator(tokens={ADMIN: [""], "narrow": ["%s/shenyu/plugin" % cls.NS]})
        cls.store = consulstore.ConsulStore(cls.server.url, token=ADMIN)
        cls.pub = publisher.Publisher(cls.store, "/%s/shenyu" % cls.NS)
        cls.data = publisher.RandomData(seed=81, namespace=cls.NS)
        cls.pub.sync_all(cls.data.items)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def agent(self, **kw):
        return kvcases.Agent(self, self.pub, [self.server.url], namespace=self.NS, **kw)

    def test_a_token_consul_does_not_know_then_one_it_does(self):
        a = self.agent(section_extra={"token": GOOD})
        a.d.wait_log(r"HTTP 403: ACL not found.*\[auth\]", timeout=WAIT)
        doc = a.status()
        self.assertIn("ACL not found", kvagent.connection(doc)["lastError"])
        self.assertGreater(kvagent.connection(doc)["errors"]["auth"], 0)
        self.assertFalse(os.path.exists(os.path.join(a.files, "RULE.json")))
        # the operator creates the token in Consul: the next try reads everything
        self.server.tokens[GOOD] = [""]
        self.addCleanup(self.server.tokens.pop, GOOD, None)
        a.wait_converged()
        self.assertNotIn(GOOD, "\n".join(a.d.lines(None)))
        self.assertNotIn(GOOD, str(a.status()))

    def test_a_token_from_a_file_is_sent_and_never_logged(self):
        self.server.tokens[GOOD] = [""]
        self.addCleanup(self.server.tokens.pop, GOOD, None)
        path = os.path.join(self.tmpdir(), "token")
        with open(path, "w") as f:
            f.write(GOOD + "\n")
        a = self.agent(section_extra={"token_file": path})
        a.wait_converged()
        self.assertNotIn(GOOD, "\n".join(a.d.lines(None)))

    def test_a_token_that_may_read_only_part_of_the_root_is_refused_not_taken_as_deletes(self):
        a = self.agent(section_extra={"token": "narrow"})
        a.d.wait_log(r"may not read every key.*Filtered-By-ACLs.*\[auth\]", timeout=WAIT)
        self.assertFalse(os.path.exists(os.path.join(a.files, "RULE.json")))
        self.assertNotIn("narrow", "\n".join(a.d.lines(None)))


class ConsulTls(harness.IntegrationTest):
    """Consul served over https: the agent verifies it with consul.tls.ca_file."""
    KIND = "consul"
    NS = "ns-tls"

    @classmethod
    def setUpClass(cls):
        import tempfile
        cls.certs_dir = tempfile.mkdtemp(prefix="gwsync-consul-tls.")
        cls.certs = harness.make_test_ca(cls.certs_dir)
        cls.server = emulator.Emulator(tls=cls.certs)
        cls.store = consulstore.ConsulStore(cls.server.url, cafile=cls.certs["ca"])
        cls.pub = publisher.Publisher(cls.store, "/%s/shenyu" % cls.NS)
        cls.data = publisher.RandomData(seed=82, namespace=cls.NS)
        cls.pub.sync_all(cls.data.items)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        import shutil
        shutil.rmtree(cls.certs_dir, ignore_errors=True)

    def agent(self, ca):
        return kvcases.Agent(self, self.pub, [self.server.url], namespace=self.NS,
                             section_extra={"tls": {"ca_file": ca}})

    def test_https_with_the_servers_ca_syncs_and_follows_changes(self):
        self.assertTrue(self.server.url.startswith("https://"))
        a = self.agent(self.certs["ca"])
        a.wait_converged()
        rule = self.data.new_rule()
        self.pub.write("RULE", rule)
        self.data.items["RULE"].append(rule)
        a.wait_converged()

    def test_a_certificate_from_another_ca_is_refused(self):
        a = self.agent(self.certs["wrong_ca"])
        a.d.wait_log(r"TLS certificate verification failed.*\[connect\]", timeout=WAIT)
        self.assertFalse(os.path.exists(os.path.join(a.files, "RULE.json")))


if __name__ == "__main__":
    kvcases.kvagent.main()
