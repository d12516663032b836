#!/usr/bin/env python3
"""Secrets (issue 5): the admin password, given as ${VAR} or in password_file, and every
token the admin issued (taken from the emulator's request log) appear in no log line, at
debug level, in text or JSON format, to stderr or to a log file, through logins, token
renewals and a refused token."""
import json
import os
import re

import harness
import synclog
from synclog import accepted

PASSWORD = "Pa55:wörd-$ecret\"x"
ENV = "GWSYNC_TEST_ADMIN_PASSWORD"


class Secrets(harness.IntegrationTest):

    def exercise(self, emu, d, log_text):
        """Logins, renewals, a 401 and a change; returns every token the admin issued."""
        def started():
            self.assertTrue(d.alive(), d.tail())
            return "accepted RULE" in log_text()
        harness.wait_until(started, timeout=15, message="the start-up fetch")
        # token_ttl 1500 ms: renewed every 1350 ms; a few renewals.
        harness.wait_until(lambda: len(emu.requests("login")) >= 4, timeout=15,
                           message="token renewals")
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        emu.expire_tokens()
        v = emu.upsert("RULE", synclog.rule("secret-test"))
        harness.wait_until(lambda: re.search(accepted("RULE", v["md5"]), log_text(), re.M),
                           timeout=15, message="the change after a refused token")
        self.assertGreaterEqual(emu.state()["counters"].get("token_errors", 0), 1)
        tokens = {r["headers"]["X-Access-Token"] for r in emu.requests()
                  if r["headers"].get("X-Access-Token")}
        self.assertGreaterEqual(len(tokens), 3)
        d.stop()
        return tokens

    def assertNoSecrets(self, text, tokens):
        self.assertGreater(len(text), 1000)
        self.assertIn("debug", text)
        for secret in [PASSWORD] + sorted(tokens):
            self.assertNotIn(secret, text)
        # Nor a recognisable piece of a token (its payload and signature parts).
        for t in tokens:
            for part in t.split("."):
                if len(part) >= 16 and not all(part in u for u in tokens):
                    self.assertNotIn(part, text)

    def test_password_from_the_environment(self):
        emu = self.emulator(mode="shenyu", hold=1, password=PASSWORD, token_ttl=1500)
        cfg = emu.config(password="${%s}" % ENV, log_level="debug")
        self.assertNotIn(PASSWORD, cfg)
        d = self.daemon(cfg, env={ENV: PASSWORD})
        tokens = self.exercise(emu, d, lambda: d.text())
        self.assertNoSecrets(d.text(), tokens)
        r = d.run_check(env={ENV: PASSWORD})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(PASSWORD, r.stdout + r.stderr)

    def test_plugin_commands_do_not_inherit_the_password_variable(self):
        # Regression: the file plugin's commands inherited the environment, and with it
        # ${GWSYNC_...PASSWORD}; the agent now drops variables holding the password.
        emu = self.emulator(mode="shenyu", hold=1, password=PASSWORD)
        tmp = self.tmpdir()
        dump = os.path.join(tmp, "reload-env")
        sub = {"name": "files", "library": "file",
               "config": {"dir": os.path.join(tmp, "files"), "debounce": "10ms",
                          "reload_command": "env > %s.tmp && mv %s.tmp %s" % (dump, dump, dump)}}
        d = self.daemon(emu.config(password="${%s}" % ENV, log_level="info",
                                   subscribers=[sub]),
                        env={ENV: PASSWORD, "GWSYNC_TEST_HARMLESS": "kept"})
        harness.wait_until(lambda: os.path.exists(dump), timeout=20, message="a reload")
        with open(dump, encoding="utf-8", errors="replace") as f:
            env = f.read()
        self.assertIn("GWSYNC_TEST_HARMLESS=kept", env)
        self.assertIn("GWSYNC_GROUP=", env)
        self.assertNotIn(ENV, env)
        self.assertNotIn(PASSWORD, env)
        d.stop()

    def test_password_file_with_a_json_log_file(self):
        emu = self.emulator(mode="shenyu", hold=1, password=PASSWORD, token_ttl=1500)
        tmp = self.tmpdir()
        pw_file = os.path.join(tmp, "admin-password")
        with open(pw_file, "w", encoding="utf-8") as f:
            f.write(PASSWORD + "\n")     # one trailing newline is not part of it
        log_file = os.path.join(tmp, "gwsync.log")
        d = self.daemon(emu.config(password=None, password_file=pw_file, log={"file": log_file,
                                                                 "format": "json"},
                                   log_level="debug"))

        def raw():
            try:
                with open(log_file, encoding="utf-8", errors="replace") as f:
                    return f.read()
            except FileNotFoundError:
                return ""

        def log_text():
            # Every line decoded ("component: msg", then any other field): JSON escaping
            # must not hide a leak.
            out = []
            for line in raw().splitlines():
                if line.strip():
                    doc = json.loads(line)
                    out.append("%s: %s" % (doc.pop("component", ""), doc.pop("msg", "")))
                    out.extend(str(v) for v in doc.values())
            return "\n".join(out)
        tokens = self.exercise(emu, d, log_text)
        self.assertTrue(raw().startswith("{"), raw()[:200])
        self.assertNoSecrets(raw() + log_text() + d.text(), tokens)


if __name__ == "__main__":
    harness.main()
