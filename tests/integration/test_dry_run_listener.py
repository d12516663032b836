#!/usr/bin/env python3
"""The shipped samples against the bundled emulator, and a dry run that asks what a real run
needs (issue 21, item 1). The sample once listed the five classic groups while the emulator,
started as documented, is a ShenYu 2.7 admin with eight: --check and --once --dry-run passed,
the agent said ready, then the admin refused every poll (`group param invalid:null`).

`--once --dry-run` now also makes the listener call a running agent makes, reporting every
group as not held so the admin answers at once (no hold), with X-Real-PORT 0 (it registers
no gateway instance); a refusal fails the dry run (exit 1) with the admin's reason. Both
generations are tried: ShenYu 2.7 (eight groups, login) and the older ones (2.4/2.5 and
Soul: five groups)."""
import os
import re
import signal
import subprocess
import time

import harness

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
FIVE = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"]
EIGHT = FIVE + ["PROXY_SELECTOR", "DISCOVER_UPSTREAM", "AI_PROXY_API_KEY"]


def sample(name):
    with open(os.path.join(SRC, "etc", name), encoding="utf-8") as f:
        return f.read()


class DryRunListener(harness.IntegrationTest):

    def dry_run(self, config, timeout=60):
        d = self.daemon(config, start=False)
        return d, d.run_once("--dry-run", timeout=timeout)

    def assert_answered_at_once(self, emu, n_groups):
        calls = emu.requests("listener")
        self.assertEqual(len(calls), 1, calls)
        call = calls[0]
        self.assertEqual(call.get("code"), 200, call)
        self.assertEqual(len(call["answer"]), n_groups, call)  # every group named: no hold
        self.assertLess(call["held_ms"], 1000, call)
        self.assertEqual(call["headers"].get("X-Real-PORT"), "0", call)  # registers nothing
        self.assertNotIn("bootstrapInstanceInfo", call["headers"], call)

    # ------------------------------------------------------------------ the samples
    def test_the_development_sample_works_against_the_emulator_as_documented(self):
        # `python3 tests/admin/emulator.py`: the default mode, ShenYu 2.7, admin / 123456;
        # a hold as long as the documented 60 s would make any held call visible
        emu = self.emulator(hold=60)
        tmp = self.tmpdir()
        text = sample("gwsync.yaml")
        self.assertIn('servers: [ "http://127.0.0.1:9095" ]', text)
        text = text.replace("http://127.0.0.1:9095", emu.url)
        text = re.sub(r"(?m)^state_dir: .*$", "state_dir: %s/state" % tmp, text)
        text = text.replace("dir: /tmp/gwsync-demo/gateway", "dir: %s/gateway" % tmp)
        d, r = self.dry_run(text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("listener %s: accepted the 8 configured group(s), answered at once "
                      "(8 named)" % emu.url, r.stdout)
        self.assertIn("dry run: 8 of 8 groups would change", r.stdout)
        self.assert_answered_at_once(emu, 8)
        self.assertFalse(os.path.exists(os.path.join(tmp, "state")), "a dry run wrote state_dir")

    def test_the_production_sample_with_the_documented_login_works_against_the_emulator(self):
        emu = self.emulator(hold=60)
        tmp = self.tmpdir()
        pw = os.path.join(tmp, "admin-password")
        with open(pw, "w") as f:
            f.write("123456\n")
        # the edits its comments ask for: the admin, the login from a password file
        text = sample("gwsync.production.yaml")
        text = text.replace("http://127.0.0.1:9095", emu.url)
        text = text.replace("# username: admin", "username: admin")
        text = text.replace("# password_file: /etc/gwsync/admin-password", "password_file: " + pw)
        text = text.replace("/var/lib/gwsync", tmp + "/state")
        _, r = self.dry_run(text)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("accepted the 8 configured group(s)", r.stdout)
        self.assert_answered_at_once(emu, 8)

    # ------------------------------------------------------------------ refusals caught
    def test_a_group_list_a_shenyu_27_admin_refuses_fails_the_dry_run(self):
        emu = self.emulator(hold=60)
        d, r = self.dry_run(emu.config(groups=FIVE))
        self.assertEqual(r.returncode, 1, r.stderr)
        # the fetch of five groups is fine: the report is still printed ...
        self.assertIn("dry run: 5 of 5 groups would change", r.stdout)
        # ... but the listener call says what every poll of the daemon would meet
        self.assertRegex(r.stdout, r"(?m)^listener %s: REFUSED \[code\]: .*group param "
                                   r"invalid:null" % re.escape(emu.url))
        self.assertRegex(r.stderr, r"error main: --dry-run: 1 of 1 admin server\(s\) refused "
                                   r"the listener call a running agent makes: .*group param "
                                   r"invalid:null \(does admin\.groups list every group")
        self.assertEqual(emu.state()["counters"].get("listener.invalid"), 1)
        self.assertFalse(os.path.exists(d.state_dir))

    def test_a_refusing_server_fails_it_and_an_unreachable_one_is_only_reported(self):
        # a 2.5 admin and a 2.7 one behind the same configuration (an upgrade half done):
        # the start-up fetch of the five groups reaches the first, the second refuses polls
        good, bad = self.emulator(mode="shenyu-legacy", hold=60), self.emulator(hold=60)
        down = "http://127.0.0.1:%d" % harness.free_port()
        cfg = harness.make_config([good.url, down], groups=FIVE, username="admin",
                                  password="123456", connect_timeout="2s")
        _, r = self.dry_run(cfg)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^listener %s: not reachable now \(.*\): not checked$"
                         % re.escape(down))
        cfg = harness.make_config([good.url, bad.url], groups=FIVE, username="admin",
                                  password="123456")
        _, r = self.dry_run(cfg)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("listener %s: accepted" % good.url, r.stdout)
        self.assertIn("listener %s: REFUSED" % bad.url, r.stdout)
        self.assertIn("1 of 2 admin server(s) refused", r.stderr)

    # ------------------------------------------------------------------ older admins
    def test_older_admins_accept_the_five_groups(self):
        for mode in ("shenyu-legacy", "soul"):
            emu = self.emulator(mode=mode, hold=60)
            _, r = self.dry_run(emu.config(groups=FIVE))
            self.assertEqual(r.returncode, 0, (mode, r.stderr))
            self.assertIn("listener %s: accepted the 5 configured group(s), answered at once "
                          "(5 named)" % emu.url, r.stdout)
            self.assert_answered_at_once(emu, 5)

    def test_an_older_admin_refuses_the_eight_at_the_fetch(self):
        emu = self.emulator(mode="shenyu-legacy", hold=60)
        _, r = self.dry_run(emu.config(groups=EIGHT, retry=(1, "100ms", "100ms")))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no admin server answered", r.stderr)
        self.assertEqual(emu.requests("listener"), [])

    # ------------------------------------------------------------------ stop
    def test_sigterm_ends_a_dry_run_waiting_on_the_listener_call(self):
        emu = self.emulator(hold=60)
        emu.fault("delay", endpoint="listener", seconds=30)
        d = self.daemon(emu.config(), start=False)
        p = subprocess.Popen([d.binary, "-c", d.config_path, "--once", "--dry-run"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=d.env, text=True)
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.wait()))
        harness.wait_until(lambda: emu.state()["held"] or emu.requests("listener"),
                           timeout=30, message="the dry run's listener call")
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 0, err)
        self.assertLess(time.monotonic() - t0, 10, "the delayed call was not interrupted")


if __name__ == "__main__":
    harness.main()
