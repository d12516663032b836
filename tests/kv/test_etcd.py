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

    def losing_proxy(self, pub):
        px, state = proxy.etcd_event_dropper(self.server.ports[0][0])
        self.addCleanup(px.close)
        return px, px.url, state, lambda: state.update(drop_prefix=pub.dir("RULE") + "/"), \
            lambda: state["dropped"]

    def check_session(self, session):
        self.assertIn(session, self.server.endpoints)

    # -------------------------------------------------------------- etcd only
    def test_resync_repairs_a_watch_that_stalled(self):
        # the watch is set and answers but reports nothing (as a half-open connection
        # or a stuck proxy would): the store's revision moves on, the agent's does not
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=42, namespace=ns)
        pub.sync_all(data.items)
        px, state = proxy.etcd_watch_blinder(self.server.ports[0][0])
        self.addCleanup(px.close)
        state["blind"] = True  # before the agent opens its watch
        self.repair_lost_change(data, pub, px, px.url, lambda: None,
                                lambda: state["blinded"])

    def test_a_prefix_delete_removes_every_key_below_it(self):
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=52, namespace=ns)
        pub.sync_all(data.items)
        a = self.agent(pub, namespace=ns)
        a.wait_converged()
        pub.store.delete_tree(pub.dir("RULE") + "/")
        a.wait_converged({"RULE": {}})

    def test_a_group_larger_than_one_answer_is_read_in_pages(self):
        # 60 plugins with 1 MB jars: one range answer for the group would be 80 MB of
        # base64, over admin.max_response (64 MiB, the only cap there is), so a read in one
        # answer could never start; the read goes in pages at one revision instead, and a
        # page over the cap is asked again with fewer keys
        import base64
        ns, pub = self.new_publisher()
        data = publisher.RandomData(seed=54, namespace=ns)
        pub.sync_all(data.items)
        jar = base64.b64encode(os.urandom(750 * 1024)).decode("ascii")
        for i in range(60):
            plugin = dict(data.items["PLUGIN"][0], name="heavy%02d" % i, id=str(5000 + i),
                          pluginJar=jar[i:] + jar[:i])
            pub.write("PLUGIN", plugin)
            data.items["PLUGIN"].append(plugin)
        a = self.agent(pub, namespace=ns)
        a.wait_converged(timeout=120)
        self.assertEqual(len(data.items["PLUGIN"]), a.status()["groups"]["PLUGIN"]["items"])
        a.d.assert_no_log(r"too_large")

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


class EtcdAuth(harness.IntegrationTest):
    """etcd with authentication on (its own server: auth cannot be turned off for one
    test): an agent logs in with username and password (or password_file), reads with a
    read-only role, and never shows the password in its log or /status."""
    KIND = "etcd"
    ROOT_PASSWORD = "root-Secret-7f3a"
    PASSWORD = "gw-Secret-b91c5e"
    NS = "ns-auth"

    @classmethod
    def setUpClass(cls):
        cls.server = servers.Etcd().start()
        cls.server.enable_auth(cls.ROOT_PASSWORD, "gwsync", cls.PASSWORD, "/%s/" % cls.NS)
        cls.store = publisher.EtcdStore(cls.server)
        cls.pub = publisher.Publisher(cls.store, "/%s/shenyu" % cls.NS)
        cls.data = publisher.RandomData(seed=54, namespace=cls.NS)
        cls.pub.sync_all(cls.data.items)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def agent(self, **section):
        return kvcases.Agent(self, self.pub, self.server.endpoints, namespace=self.NS,
                             section_extra=section)

    def assert_secret_not_shown(self, a, secret):
        self.assertNotIn(secret, a.d.text())
        self.assertNotIn(secret, a.ep.get("/status")[2].decode("utf-8"))
        self.assertNotIn(secret, a.ep.get("/metrics")[2].decode("utf-8"))

    def test_a_login_with_a_read_only_user_syncs(self):
        a = self.agent(username="gwsync", password=self.PASSWORD)
        a.wait_converged()
        item = self.data.changed("RULE", self.data.items["RULE"][0])
        self.pub.write("RULE", item)
        a.wait_converged()
        self.assert_secret_not_shown(a, self.PASSWORD)

    def test_password_file(self):
        path = os.path.join(self.tmpdir(), "etcd-password")
        with open(path, "w") as f:
            f.write(self.PASSWORD + "\n")
        os.chmod(path, 0o600)
        a = self.agent(username="gwsync", password_file=path)
        a.wait_converged()
        self.assert_secret_not_shown(a, self.PASSWORD)

    def test_a_wrong_password_is_an_auth_error_and_not_logged(self):
        wrong = "wrong-Secret-0d2e"
        a = self.agent(username="gwsync", password=wrong)
        doc = a.wait_status(lambda d: kvagent.connection(d)["errors"]["auth"] >= 1,
                            "an auth error counted")
        self.assertNotEqual("connected", kvagent.connection(doc)["state"])
        self.assert_secret_not_shown(a, wrong)

    def test_no_credentials_on_a_server_with_auth_fails(self):
        a = self.agent()
        doc = a.wait_status(lambda d: kvagent.connection(d)["consecutiveFailures"] >= 1,
                            "a failure counted")
        self.assertNotEqual("connected", kvagent.connection(doc)["state"])


class EtcdTls(harness.IntegrationTest):
    """etcd serving https and asking for client certificates: the agent verifies the
    server with tls.ca_file, presents tls.cert_file/key_file, and refuses a server its CA
    did not sign."""
    KIND = "etcd"
    NS = "ns-tls"

    @classmethod
    def setUpClass(cls):
        servers.require_etcd()
        import tempfile
        cls.certs = tempfile.mkdtemp(prefix="gwsync-etcd-tls-")
        cls.tls = servers.make_etcd_tls(cls.certs)
        cls.server = servers.Etcd(tls=cls.tls).start()
        cls.store = publisher.EtcdStore(cls.server)
        cls.pub = publisher.Publisher(cls.store, "/%s/shenyu" % cls.NS)
        cls.data = publisher.RandomData(seed=55, namespace=cls.NS)
        cls.pub.sync_all(cls.data.items)

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        import shutil
        shutil.rmtree(cls.certs, ignore_errors=True)

    def agent(self, tls):
        return kvcases.Agent(self, self.pub, self.server.endpoints, namespace=self.NS,
                             section_extra={"tls": tls})

    def test_https_with_a_client_certificate_syncs(self):
        a = self.agent({"ca_file": self.tls["ca"], "cert_file": self.tls["client_cert"],
                        "key_file": self.tls["client_key"]})
        a.wait_converged()
        self.assertTrue(a.conn()["session"].startswith("https://"))
        item = self.data.changed("PLUGIN", self.data.items["PLUGIN"][0])
        self.pub.write("PLUGIN", item)
        a.wait_converged()

    def test_a_server_the_ca_did_not_sign_is_refused(self):
        a = self.agent({"ca_file": self.tls["wrong_ca"], "cert_file": self.tls["client_cert"],
                        "key_file": self.tls["client_key"]})
        doc = a.wait_status(lambda d: kvagent.connection(d)["consecutiveFailures"] >= 1,
                            "a failure counted")
        self.assertNotEqual("connected", kvagent.connection(doc)["state"])
        self.assertIsNone(doc["groups"]["PLUGIN"])

    def test_without_a_client_certificate_the_server_refuses(self):
        a = self.agent({"ca_file": self.tls["ca"]})
        doc = a.wait_status(lambda d: kvagent.connection(d)["consecutiveFailures"] >= 1,
                            "a failure counted")
        self.assertNotEqual("connected", kvagent.connection(doc)["state"])


if __name__ == "__main__":
    kvagent.main()
