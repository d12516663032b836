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
            # only whole lines: a line being written while we read is not one yet (a
            # reader can see part of a write; seen in CI as a JSON error on the last line)
            text = raw()
            for line in text[:text.rfind("\n") + 1].splitlines():
                if line.strip():
                    doc = json.loads(line)
                    out.append("%s: %s" % (doc.pop("component", ""), doc.pop("msg", "")))
                    out.extend(str(v) for v in doc.values())
            return "\n".join(out)
        tokens = self.exercise(emu, d, log_text)
        self.assertTrue(raw().startswith("{"), raw()[:200])
        self.assertNoSecrets(raw() + log_text() + d.text(), tokens)


class SecretsAtRest(harness.IntegrationTest):
    """APP_AUTH carries each app's appSecret, AI_PROXY_API_KEY the real API keys: no file
    the agent or a bundled plugin writes with its default settings lets other users read
    one (issue 15)."""

    def test_no_file_written_with_defaults_shows_a_secret_to_other_users(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        files, cache = os.path.join(tmp, "files"), os.path.join(tmp, "cache")
        state = os.path.join(tmp, "state")
        subs = [{"name": "files", "library": "file", "config": {"dir": files}},
                {"name": "cache", "library": "lmdb", "config": {"path": cache}},
                {"name": "log", "library": "log"}]
        d = self.daemon(emu.config(log_level="info", state_dir=state, subscribers=subs),
                        env=lmdb_plugin_env())
        synclog.wait_synced(d, emu)
        harness.wait_until(lambda: os.path.exists(os.path.join(files, "AI_PROXY_API_KEY.json")),
                           message="the file subscriber's output")
        d.stop()
        # the log plugin names every item by its key: an AI proxy API key's credential part
        # is shortened there (a regression: it was logged whole)
        proxy_keys = [k["proxyApiKey"] for k in emu.data("AI_PROXY_API_KEY")["data"]]
        self.assertTrue(proxy_keys)
        self.assertIn("AI_PROXY_API_KEY added key=", d.text())
        for k in proxy_keys:
            self.assertNotIn(k, d.text())
        secrets = [a["appSecret"] for a in emu.data("APP_AUTH")["data"] if a.get("appSecret")]
        secrets += [k["realApiKey"] for k in emu.data("AI_PROXY_API_KEY")["data"]
                    if k.get("realApiKey")]
        self.assertGreaterEqual(len(secrets), 2)
        checked = 0
        for root in (state, files, cache):
            for dirpath, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(dirpath, name)
                    mode = os.stat(path).st_mode & 0o777
                    with open(path, "rb") as f:
                        data = f.read()
                    holds = [s for s in secrets if s.encode() in data]
                    if holds:
                        checked += 1
                        self.assertEqual(mode & 0o007, 0, "%s (mode %04o) shows %s to every "
                                         "local user" % (path, mode, holds[0][:6] + "..."))
        # the snapshot, both group files and the LMDB environment hold secrets
        self.assertGreaterEqual(checked, 5)
        # and nothing was world-readable-by-accident: the snapshot is owner-only
        for g in ("APP_AUTH", "AI_PROXY_API_KEY"):
            self.assertEqual(os.stat(os.path.join(state, g + ".json")).st_mode & 0o077, 0)


def lmdb_plugin_env():
    """GWSYNC_PLUGIN_PATH with the lmdb plugin's build directory added."""
    path = os.environ.get("GWSYNC_PLUGIN_PATH", "")
    lmdb = os.path.join(os.environ.get("GWSYNC_BUILDDIR", ""), "plugins", "lmdb", ".libs")
    return {"GWSYNC_PLUGIN_PATH": path + ":" + lmdb if path else lmdb}


if __name__ == "__main__":
    harness.main()
