#!/usr/bin/env python3
"""TLS beyond the basics of test_admin_tls.py (trusted CA, wrong CA, insecure_skip_verify):
mutual TLS with admin.tls.cert_file/key_file through a TLS front that demands a client
certificate; an untrusted admin at start-up leaves the agent on its snapshot, never on the
untrusted data; an https:// URL that reaches a plain-HTTP admin is a clear TLS error. All
certificates are made with openssl inside the test."""
import os
import shutil
import socket
import ssl
import subprocess
import threading
import unittest

import groupfiles
import harness
import synclog


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=60)


def make_client_cert(directory):
    """A client CA and a client certificate it signed: {"ca", "cert", "key"}."""
    if shutil.which("openssl") is None:
        raise unittest.SkipTest("openssl is not installed")
    p = {k: os.path.join(directory, k + ".pem") for k in ("ca", "ca_key", "cert", "key", "csr")}
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p["ca_key"], "-out",
            p["ca"], "-days", "2", "-subj", "/CN=gwsync-test client CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p["key"], "-out", p["csr"],
            "-subj", "/CN=gwsync-agent")
    ext = os.path.join(directory, "client.ext")
    with open(ext, "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", p["csr"], "-CA", p["ca"], "-CAkey", p["ca_key"],
            "-CAcreateserial", "-out", p["cert"], "-days", "2", "-extfile", ext)
    return {k: p[k] for k in ("ca", "cert", "key")}


class MutualTlsFront:
    """A TLS front on a free loopback port that requires a client certificate signed by
    client_ca and passes the bytes on to a plain-HTTP backend port. self.handshakes counts
    the completed handshakes, self.refused the failed ones."""

    def __init__(self, server_cert, server_key, client_ca, backend_port):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(server_cert, server_key)
        self.ctx.load_verify_locations(client_ca)
        self.ctx.verify_mode = ssl.CERT_REQUIRED
        self.backend = backend_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handshakes = 0
        self.refused = 0
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def _accept(self):
        while not self.closing:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.settimeout(10)
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            self.refused += 1
            conn.close()
            return
        self.handshakes += 1
        tls.settimeout(None)
        back = socket.create_connection(("127.0.0.1", self.backend))
        threading.Thread(target=self._pump, args=(back, tls), daemon=True).start()
        self._pump(tls, back)

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.close()
            except OSError:
                pass

    def close(self):
        self.closing = True
        self.sock.close()


class Tls(harness.IntegrationTest):

    @classmethod
    def setUpClass(cls):
        cls.dir = harness.tempfile.mkdtemp(prefix="gwsync-tls-")
        cls.pki = harness.make_test_ca(os.path.join(cls.dir, "server"))
        os.makedirs(os.path.join(cls.dir, "client"))
        cls.client = make_client_cert(os.path.join(cls.dir, "client"))

    @classmethod
    def tearDownClass(cls):
        harness._cleanup_dir(cls.dir)

    def test_mutual_tls_with_a_client_certificate(self):
        emu = self.emulator(mode="shenyu", hold=2)
        front = MutualTlsFront(self.pki["cert"], self.pki["key"], self.client["ca"], emu.port)
        self.addCleanup(front.close)

        def config(tls):
            return harness.make_config([front.url], groups=emu.groups, username=emu.username,
                                       password=emu.password, log_level="info", tls=tls,
                                       retry=(2, "300ms", "5s"))
        # Without a client certificate the front refuses the handshake: a clear error.
        d = self.daemon(config({"ca_file": self.pki["ca"]}))
        # (libcurl's words vary with timing: the TLS alert "certificate required", or the
        # connection already closed by the front.)
        doc = d.wait_status(harness.conn_failing(front.url, 1, "connect"), "a refused handshake")
        self.assertIn("POST /platform/login: ", harness.connection(doc, front.url)["lastError"])
        self.assertTrue(harness.nothing_held(d.status()))
        self.assertEqual(emu.requests(), [])
        self.assertGreaterEqual(front.refused, 1)
        d.close()

        # With cert_file and key_file it syncs, and changes flow.
        d = self.daemon(config({"ca_file": self.pki["ca"], "cert_file": self.client["cert"],
                                "key_file": self.client["key"]}))
        synclog.wait_synced(d, emu, url=front.url)
        v = emu.upsert("RULE", synclog.rule("over-mutual-tls"))
        synclog.holds(d, "RULE", v, front.url)
        self.assertGreaterEqual(front.handshakes, 1)

    def test_an_untrusted_admin_at_start_leaves_the_agent_on_its_snapshot(self):
        tmp = self.tmpdir()
        state, files = os.path.join(tmp, "state"), os.path.join(tmp, "files")
        emu = self.emulator(mode="shenyu", hold=2, tls=self.pki)
        r = harness.Daemon(emu.config(state_dir=state, log_level="info"), tmp=tmp).run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        held = {g: emu.group(g)["md5"] for g in emu.groups}
        # The admin's data changes, but the agent no longer trusts its certificate.
        emu.upsert("RULE", synclog.rule("unseen"))
        d = self.daemon(emu.config(state_dir=state, log_level="info",
                                   tls={"ca_file": self.pki["wrong_ca"]},
                                   retry=(2, "300ms", "5s"),
                                   subscribers=[groupfiles.file_subscriber(files)]))
        d.wait_status(harness.holds_all(held, from_snapshot=True), "the snapshot served")
        for g, md5 in held.items():
            groupfiles.wait_version(files, g, md5)
        doc = d.wait_status(harness.conn_failing(emu.url, 1, "connect"), "a refused certificate")
        self.assertIn("TLS certificate verification failed",
                      harness.connection(doc, emu.url)["lastError"])
        self.assertTrue(all(harness.held(doc, g)["source"] == "snapshot" for g in held), doc)
        self.assertTrue(harness.snapshot_only(d.status()))
        self.assertEqual(groupfiles.md5(files, "RULE"), held["RULE"])

    def test_https_url_to_a_plain_http_admin_is_a_clear_tls_error(self):
        emu = self.emulator(mode="shenyu", hold=2)
        url = "https://127.0.0.1:%d" % emu.port
        d = self.daemon(harness.make_config([url], groups=emu.groups, username=emu.username,
                                            password=emu.password, log_level="info",
                                            tls={"ca_file": self.pki["ca"]},
                                            retry=(2, "300ms", "5s")))
        doc = d.wait_status(harness.conn_failing(url, 1, "connect"), "a TLS error")
        self.assertIn("POST /platform/login: TLS error: ", harness.connection(doc, url)["lastError"])
        self.assertTrue(d.alive())
        self.assertTrue(harness.nothing_held(d.status()))


if __name__ == "__main__":
    harness.main()
