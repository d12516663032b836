#!/usr/bin/env python3
"""gwsyncd's command line and configuration refusals, black-box (issue 2): --check on the
sample and on broken files, exit codes, --version/--help, and a clean SIGTERM stop."""
import os
import re
import signal
import subprocess

import harness

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLE = os.path.join(SRC, "etc", "gwsync.yaml")


def gwsyncd(*args, env=None):
    harness.require_daemon()
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([os.environ["GWSYNCD"]] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=60,
                          env=e, text=True, errors="replace")


class Cli(harness.IntegrationTest):

    def write(self, text, name="gwsync.yaml"):
        path = os.path.join(self.tmpdir(), name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_check_accepts_the_sample(self):
        r = gwsyncd("--check", "-c", SAMPLE, env={"GWSYNC_ADMIN_PASSWORD": ""})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("configuration OK", r.stdout)
        self.assertIn("2 subscriber(s) loaded", r.stdout)

    def test_status_without_a_configuration_says_it_takes_the_socket_or_the_address(self):
        r = gwsyncd("--status", "-c", os.path.join(self.tmpdir(), "missing.yaml"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("gwsyncd --status STATE_DIR/control.sock", r.stderr)
        self.assertIn("gwsyncd --status 127.0.0.1:9196", r.stderr)
        sock = os.path.join(self.tmpdir(), "control.sock")
        r = gwsyncd("--status", sock)  # no agent there: a runtime failure naming it
        self.assertEqual(r.returncode, 1)
        self.assertIn("no agent answered at %s" % sock, r.stderr)

    def test_status_takes_the_status_address_as_well_as_the_control_socket(self):
        # issue 31, item 14: in a build tree, without -c, the operator knows the address
        # they curl; over HTTP the summary is built from /status and /history
        emu = self.emulator(mode="shenyu", hold=30)
        listen = "127.0.0.1:%d" % harness.free_port()
        d = self.daemon(emu.config(status={"listen": listen}))
        d.wait_status(harness.holds("RULE"), "RULE held")
        d.wait_history("RULE")
        addrs = [os.path.join(d.state_dir, "control.sock"), listen, "http://%s/" % listen]
        outs = []
        for addr in addrs:
            r = gwsyncd("--status", addr)
            self.assertEqual(r.returncode, 0, "%s: %s" % (addr, r.stderr))
            # the ages move on between the three runs ("up 3s", "2s ago"): not the rest
            outs.append(re.sub(r"\b(\d+[dhms])+\b", "AGE", r.stdout))
        self.assertRegex(outs[0], r"(?m)^last changes:$(\n  .*)*\n  \d{4}-.*\) +RULE ")
        self.assertEqual(outs[1], outs[0], "--status %s differs from the socket's" % listen)
        self.assertEqual(outs[2], outs[0], "--status http://%s/ differs" % listen)
        # nobody at an address: a runtime failure naming it, as for a socket
        dead = "127.0.0.1:%d" % harness.free_port()
        for addr in (dead, "http://" + dead):
            r = gwsyncd("--status", addr)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("no agent answered at http://%s " % dead, r.stderr)

    def test_check_accepts_a_generated_config(self):
        path = self.write(harness.make_config(
            ["http://127.0.0.1:9"], username="admin", password="pw",
            subscribers=[{"name": "l", "library": "log"}]))
        r = gwsyncd("--check", "-c", path)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_misspelt_key_exits_2_naming_line_and_closest_key(self):
        path = self.write('admin:\n  servers: ["http://127.0.0.1:9095"]\n  read_timout: 90s\n')
        r = gwsyncd("--check", "-c", path)
        self.assertEqual(r.returncode, 2)
        self.assertRegex(r.stderr, re.escape(path) + r":3:3: .*read_timout.*did you mean 'read_timeout'")

    def test_each_refusal_exits_2_with_file_line_col(self):
        cases = [
            ('admin:\n  servers: []\n', r":2:\d+: .*servers"),
            ('admin:\n  servers: ["ftp://x"]\n', r":2:\d+: .*http"),
            ('admin:\n  servers: ["http://a"]\n  read_timeout: 30s\n', r":3:\d+: .*read_timeout.*60"),
            ('admin:\n  servers: ["http://a"]\n  connect_timeout: 10 parsecs\n', r":3:\d+: .*connect_timeout"),
            ('admin:\n  servers: ["http://a"]\n  groups: [PLUGIN, RULES]\n', r":3:\d+: .*RULES"),
            ('admin:\n  servers: ["http://a"]\n  groups: [RULE, RULE]\n', r":3:\d+: .*RULE"),
            ('admin:\n  servers: ["http://a"]\n  username: u\n  password: ${GWSYNC_TEST_NO_SUCH_VAR}\n',
             r":4:\d+: .*GWSYNC_TEST_NO_SUCH_VAR"),
            ('admin:\n  servers: ["http://a"]\n  username: u\n  password_file: /nonexistent/pw\n',
             r":4:\d+: .*/nonexistent/pw"),
            ('admin:\n  servers: ["http://a"]\n  retry: { attempts: many }\n', r":3:\d+: .*attempts"),
            # regression: a zero interval made a refused connection a busy loop
            ('admin:\n  servers: ["http://a"]\n  retry: { interval: 0s }\n', r":3:\d+: .*interval.*at least"),
            ('admin:\n  servers: ["http://a"]\nsubscribers:\n  - { name: a, library: log }\n'
             '  - { name: a, library: log }\n', r":5:\d+: .*duplicate.*'a'"),
        ]
        for text, pattern in cases:
            with self.subTest(text=text):
                path = self.write(text)
                r = gwsyncd("--check", "-c", path)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertRegex(r.stderr, re.escape(path) + pattern)

    def test_unloadable_subscriber_is_a_configuration_error(self):
        path = self.write('admin:\n  servers: ["http://a"]\nsubscribers:\n'
                          '  - { name: gone, library: no-such-plugin }\n')
        r = gwsyncd("--check", "-c", path)
        self.assertEqual(r.returncode, 2)
        self.assertIn("gone", r.stderr)
        self.assertIn("no-such-plugin", r.stderr)

    def test_missing_file_usage_version_help(self):
        r = gwsyncd("--check", "-c", "/nonexistent/gwsync.yaml")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/gwsync.yaml", r.stderr)
        r = gwsyncd("--no-such-flag")
        self.assertEqual(r.returncode, 2)
        self.assertIn("Usage", r.stderr)
        r = gwsyncd("--once", "--check")
        self.assertEqual(r.returncode, 2)
        r = gwsyncd("--log-level", "loud")
        self.assertEqual(r.returncode, 2)
        r = gwsyncd("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^gwsyncd \d+\.\d+\.\d+")
        r = gwsyncd("--help")
        self.assertEqual(r.returncode, 0)
        for flag in ("--check", "--once", "--log-level", "--version", "-c"):
            self.assertIn(flag, r.stdout)

    def test_dry_run_shows_the_changes_against_the_snapshot_and_changes_nothing(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        files = os.path.join(tmp, "files")
        cfg = emu.config(subscribers=[{"name": "files", "library": "file",
                                       "config": {"dir": files}}])
        d = self.daemon(cfg, start=False)
        # nothing held yet: everything would be added; nothing is created
        r = d.run_once("--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^RULE: nothing held \(no snapshot\) -> \w+ \(\d+ items\): \+\d+$")
        self.assertFalse(os.path.exists(d.state_dir), "a dry run created state_dir")
        self.assertFalse(os.path.exists(files), "a dry run created the file plugin's dir")
        # a real sync, then one rule removed and one changed at the admin
        self.assertEqual(d.run_once().returncode, 0)
        rules = emu.data("RULE")["data"]
        emu.delete("RULE", key=rules[0]["id"])
        edited = dict(rules[1], name="edited by the dry-run test")
        emu.upsert("RULE", edited)
        before = {n: os.stat(os.path.join(root, n)).st_mtime_ns
                  for root in (d.state_dir, files) for n in os.listdir(root)}
        r = d.run_once("--dry-run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"(?m)^RULE: \w+ -> \w+ \(\d+ items\): \+0 ~1 -1$")
        self.assertIn("  - %s\n" % rules[0]["id"], r.stdout)
        self.assertIn("  ~ %s\n" % rules[1]["id"], r.stdout)
        self.assertRegex(r.stdout, r"(?m)^PLUGIN: .*, no change$")
        self.assertRegex(r.stdout, r"(?m)^subscriber files: RULE would change")
        self.assertIn("dry run: 1 of", r.stdout)
        self.assertNotIn("edited by the dry-run test", r.stdout)  # keys only, never item JSON
        after = {n: os.stat(os.path.join(root, n)).st_mtime_ns
                 for root in (d.state_dir, files) for n in os.listdir(root)}
        self.assertEqual(before, after, "a dry run wrote something")
        # --dry-run goes with --once only
        r = d.run("--dry-run")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--dry-run goes with --once", r.stderr)

    def test_once_without_any_admin_exits_1(self):
        d = self.daemon(harness.make_config(["http://127.0.0.1:%d" % harness.free_port()],
                                            connect_timeout="1s"))
        r = d.run_once()
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no admin", r.stderr)

    def test_sigterm_and_sigint_stop_cleanly_with_0(self):
        emu = self.emulator(mode="shenyu", hold=30)
        for sig in (signal.SIGTERM, signal.SIGINT):
            d = self.daemon(emu.config(log_level="info"))
            d.wait_status(harness.holds("RULE"), "RULE held")
            rc, secs = d.stop(sig=sig, timeout=5)
            self.assertEqual(rc, 0)
            self.assertLess(secs, 1.0)

    def test_log_lines_have_time_level_component(self):
        emu = self.emulator(mode="shenyu", hold=30)
        d = self.daemon(emu.config(log_level="info"))
        d.wait_status(harness.holds("RULE"), "RULE held")
        d.stop()
        for line in d.lines("stderr"):
            if line.strip():
                self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|warn |info |debug) [\w.-]+: ")


if __name__ == "__main__":
    harness.main()
