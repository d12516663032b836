#!/usr/bin/env python3
"""The admin client over https (issue 3's TLS options, issue 5's cases): a server
certificate signed by admin.tls.ca_file is trusted; one signed by another CA is refused
with a message naming the server and the check that failed; insecure_skip_verify skips
the check (tests only)."""
import harness
import synclog


class AdminTls(harness.IntegrationTest):

    def setUp(self):
        self.pki = harness.make_test_ca(self.tmpdir())

    def test_trusted_ca(self):
        emu = self.emulator(mode="shenyu", hold=2, tls=self.pki)
        self.assertTrue(emu.url.startswith("https://"))
        d = self.daemon(emu.config(log_level="info"))
        synclog.wait_synced(d, emu, url=emu.url)
        v = emu.upsert("RULE", synclog.rule("over-tls"))
        synclog.holds(d, "RULE", v, emu.url)

    def test_wrong_ca_is_refused_clearly(self):
        emu = self.emulator(mode="shenyu", hold=2, tls=self.pki)
        d = self.daemon(emu.config(log_level="info", tls={"ca_file": self.pki["wrong_ca"]},
                                   retry=(2, "300ms", "5s")))
        d.wait_status(harness.conn_failing(emu.url, 1, "connect"), "a refused certificate")
        for who in ("startup", "poller"):
            # log wording is the behaviour here: it names the server and the check
            d.wait_log(r"%s: server %s: POST /platform/login: TLS certificate verification "
                       r"failed: .*admin\.tls\.ca_file.*\[connect\]" % (who, emu.url))
        self.assertTrue(harness.nothing_held(d.status()))
        self.assertEqual(emu.requests(), [])  # nothing got past the handshake

    def test_insecure_skip_verify(self):
        emu = self.emulator(mode="shenyu", hold=2, tls=self.pki)
        d = self.daemon(emu.config(log_level="info", tls={"insecure_skip_verify": True}))
        synclog.wait_synced(d, emu, url=emu.url)


if __name__ == "__main__":
    harness.main()
