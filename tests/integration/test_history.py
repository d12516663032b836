#!/usr/bin/env python3
"""What changed (issue 24), end to end against the admin emulator and the built gwsyncd:
GET /history records every accepted version with what it changed and what each subscriber
did with it (applied, refused and why, superseded while paused), filters by group and time
and refuses bad filters with 400; AI proxy API keys appear shortened as in the logs; the
history survives a restart beside the snapshot, and a corrupt or odd history file is refused
with a log line while the agent starts with an empty history; GET /config/<GROUP> is 404
unless status.expose_config is on, and then never shows an appSecret or a proxy API key;
`gwsyncd --status` prints groups, subscribers, pause state and the last changes through the
control socket, and exits 1 when no agent answers."""
import json
import os
import subprocess
import re
import time

import harness
import synclog
from test_status import Endpoint, recorder, sub, in_step

RETRY = (2, "200ms", "1s")


def history(ep, query=""):
    st, hdrs, body = ep.get("/history" + query)
    assert st == 200, (st, body)
    assert hdrs.get("Content-Type") == "application/json", hdrs
    return json.loads(body.decode("utf-8"))


def newest(doc, group):
    entries = doc["groups"][group]
    return entries[0] if entries else None


def ai_key(selector, key, real):
    return {"selectorId": selector, "proxyApiKey": key, "realApiKey": real,
            "description": "test key", "enabled": True, "namespaceId": "public"}


class History(harness.IntegrationTest):

    def agent(self, emu, subscribers=None, status_extra=None, **kw):
        ep = Endpoint(harness.free_port())
        kw.setdefault("retry", RETRY)
        kw.setdefault("log_level", "info")
        status = {"listen": ep.listen}
        status.update(status_extra or {})
        cfg = emu.config(status=status, subscribers=subscribers, **kw)
        return self.daemon(cfg), ep

    def wait_history(self, ep, predicate, query="", timeout=20, message=None):
        holder = {}

        def check():
            doc = history(ep, query)
            holder["last"] = doc
            return doc if predicate(doc) else None
        try:
            return harness.wait_until(check, timeout=timeout, interval=0.1, message=message)
        except AssertionError as e:
            raise AssertionError("%s\nlast /history: %s" % (e, json.dumps(holder.get("last"), indent=1)))

    def test_history_records_each_version_its_change_and_each_subscribers_outcome(self):
        emu = self.emulator(mode="shenyu", hold=30)
        tmp = self.tmpdir()
        flag = os.path.join(tmp, "bad-fails")
        open(flag, "w").close()
        d, ep = self.agent(emu, subscribers=[recorder(os.path.join(tmp, "rec.txt")),
                                             recorder(os.path.join(tmp, "bad.txt"), flag, "bad")])
        ep.wait_status(lambda s: s["healthy"] and sub(s)["inStep"], message="rec in step")
        doc = history(ep)
        self.assertEqual(doc["size"], 50)
        self.assertEqual(doc["subscribers"], ["rec", "bad"])
        self.assertEqual(list(doc["groups"]), emu.groups)  # configured order
        # the start-up versions were applied by rec, even those the dispatcher delivered in
        # the moment before ingest recorded them (an outcome that came first is kept)
        doc = self.wait_history(ep, lambda h: all(
            newest(h, g)["subscribers"]["rec"]["state"] == "applied" for g in emu.groups),
            message="every start-up version applied by rec")
        first = newest(doc, "RULE")
        self.assertEqual(first["md5"], emu.group("RULE")["md5"])
        self.assertEqual(first["source"], emu.url)
        self.assertEqual(first["added"]["count"], emu.group("RULE")["count"])  # from nothing

        t0 = int(time.time() * 1000)
        v = emu.upsert("RULE", synclog.rule("hist-1"))
        doc = self.wait_history(
            ep, lambda h: newest(h, "RULE")["md5"] == v["md5"] and
            newest(h, "RULE")["subscribers"]["rec"]["state"] == "applied" and
            newest(h, "RULE")["subscribers"]["bad"]["state"] == "refused",
            message="the change applied by rec and refused by bad")
        e = newest(doc, "RULE")
        self.assertEqual(e["lastModifyTime"], v["lastModifyTime"])
        self.assertGreaterEqual(e["acceptedAt"], t0 - 1000)
        self.assertEqual(e["source"], emu.url)
        # each key with its item's name beside it (a rule's id says nothing to a person)
        self.assertEqual(e["added"], {"count": 1, "first": ["hist-1"], "names": ["rule"]})
        self.assertEqual(e["updated"], {"count": 0, "first": [], "names": []})
        self.assertEqual(e["removed"], {"count": 0, "first": [], "names": []})
        rec, bad = e["subscribers"]["rec"], e["subscribers"]["bad"]
        self.assertGreaterEqual(rec["at"], e["acceptedAt"])
        self.assertEqual(rec["refusals"], 0)
        self.assertIn("told to fail", bad["reason"])
        self.assertGreaterEqual(bad["refusals"], 1)
        self.assertIsNotNone(bad["at"])
        self.assertEqual(len(doc["groups"]["RULE"]), 2)

        # an update and a removal, with their keys
        items = emu.data("RULE")["data"]
        changed = dict(items[0], name="renamed")
        emu.replace("RULE", [changed] + items[2:])
        doc = self.wait_history(ep, lambda h: len(h["groups"]["RULE"]) == 3 and
                                newest(h, "RULE")["added"] is not None, message="the update")
        e = newest(doc, "RULE")
        self.assertEqual(e["updated"], {"count": 1, "first": [changed["id"]],
                                        "names": ["renamed"]})
        self.assertEqual(e["removed"], {"count": 1, "first": [items[1]["id"]],
                                        "names": [items[1].get("name")]})
        self.assertEqual(e["added"]["count"], 0)

        # filters
        only = history(ep, "?group=RULE")
        self.assertEqual(list(only["groups"]), ["RULE"])
        since = history(ep, "?group=RULE,PLUGIN&since=%d" % e["acceptedAt"])
        self.assertEqual([x["md5"] for x in since["groups"]["RULE"]], [e["md5"]])
        self.assertEqual(since["groups"]["PLUGIN"], [])
        self.assertEqual(len(history(ep, "?limit=1")["groups"]["RULE"]), 1)
        for query, why in (("?group=NOPE", "not a configured group"),
                           ("?since=yesterday", "since: expected milliseconds"),
                           ("?since=-5", "since: expected milliseconds"),
                           ("?limit=0", "limit: expected a number"),
                           ("?grop=RULE", "unknown parameter 'grop'")):
            st, hdrs, body = ep.get("/history" + query)
            self.assertEqual(st, 400, (query, body))
            self.assertIn(why, body.decode())
        # read-only, like /status: no POST
        st, hdrs, _ = ep.request("POST", "/history", body=b"")
        self.assertEqual(st, 405)
        self.assertEqual(hdrs.get("Allow"), "GET, HEAD")

    def test_a_version_replaced_while_paused_is_superseded(self):
        emu = self.emulator(mode="shenyu", hold=30)
        d, ep = self.agent(emu, subscribers=[recorder(os.path.join(self.tmpdir(), "rec.txt"))])
        ep.wait_status(in_step, message="in step")
        r = d.run("--pause")
        self.assertEqual(r.returncode, 0, r.stderr)
        v1 = emu.upsert("RULE", synclog.rule("paused-1"))
        self.wait_history(ep, lambda h: newest(h, "RULE")["md5"] == v1["md5"], message="v1")
        v2 = emu.upsert("RULE", synclog.rule("paused-2"))
        doc = self.wait_history(ep, lambda h: newest(h, "RULE")["md5"] == v2["md5"], message="v2")
        states = [x["subscribers"]["rec"]["state"] for x in doc["groups"]["RULE"][:2]]
        self.assertEqual(states, ["pending", "pending"])
        r = d.run("--resume")
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = self.wait_history(
            ep, lambda h: newest(h, "RULE")["subscribers"]["rec"]["state"] == "applied",
            message="v2 applied")
        e2, e1 = doc["groups"]["RULE"][:2]
        self.assertEqual((e2["md5"], e1["md5"]), (v2["md5"], v1["md5"]))
        self.assertEqual(e1["subscribers"]["rec"], {"state": "superseded", "at": None,
                                                    "refusals": 0, "reason": None})

    def test_ai_proxy_api_keys_appear_shortened_as_in_the_logs(self):
        emu = self.emulator(mode="shenyu", hold=30)
        d, ep = self.agent(emu, subscribers=[recorder(os.path.join(self.tmpdir(), "rec.txt"))])
        ep.wait_status(in_step, message="in step")
        secret, real = "sk-topsecret-0123456789abcdef", "sk-real-fedcba9876543210"
        v = emu.upsert("AI_PROXY_API_KEY", ai_key("sel-9", secret, real))
        doc = self.wait_history(
            ep, lambda h: newest(h, "AI_PROXY_API_KEY")["md5"] == v["md5"] and
            newest(h, "AI_PROXY_API_KEY")["added"] is not None, message="the key's version")
        self.assertEqual(newest(doc, "AI_PROXY_API_KEY")["added"]["first"], ["sel-9::sk-t..."])
        served = ep.get("/history")[2].decode() + ep.get("/")[2].decode()
        cli = d.run("--status").stdout
        self.assertIn("+sel-9::sk-t...", cli)
        d.stop()  # the file is written at stop too
        with open(os.path.join(d.state_dir, "history"), encoding="utf-8") as f:
            saved = f.read()
        for text in (served, cli, saved, d.text()):
            self.assertNotIn(secret, text)
            self.assertNotIn(real, text)
        self.assertIn("sel-9::sk-t...", saved)

    def test_history_survives_a_restart_and_a_bad_file_is_refused(self):
        emu = self.emulator(mode="shenyu", hold=30)
        d, ep = self.agent(emu, subscribers=[recorder(os.path.join(self.tmpdir(), "rec.txt"))])
        ep.wait_status(in_step, message="in step")
        v = emu.upsert("RULE", synclog.rule("kept-1"))
        before = self.wait_history(
            ep, lambda h: newest(h, "RULE")["md5"] == v["md5"] and
            newest(h, "RULE")["subscribers"]["rec"]["state"] == "applied", message="applied")
        d.stop()
        path = os.path.join(d.state_dir, "history")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)

        d.start()
        ep.wait_status(in_step, message="in step after the restart")
        after = history(ep)   # read back from the file: the same entries as before the stop
        self.assertEqual(after["groups"]["RULE"][:2], before["groups"]["RULE"][:2])
        d.stop()

        for bad, why in (("{not json", "not JSON"),
                         (json.dumps({"format": "something else", "version": 1, "groups": {}}),
                          "not a gwsync history"),
                         (json.dumps({"format": "gwsync-history", "version": 1,
                                      "groups": {"RULE": [{"md5": 5}]}}),
                          r'RULE\[0\]: "md5" is not a string')):
            with open(path, "w") as f:
                f.write(bad)
            d.start()
            # log wording is the behaviour here: the warning names the file and the reason
            d.wait_log(r"warn  history: ignoring %s: .*%s.*; starting with an empty history"
                       % (re.escape(path), why))
            ep.wait_status(in_step, message="in step with an empty history")
            doc = history(ep)
            self.assertEqual(len(doc["groups"]["RULE"]), 1, doc["groups"]["RULE"])  # the fetch
            self.assertEqual(newest(doc, "RULE")["md5"], v["md5"])
            d.stop()

    def test_config_is_404_unless_exposed_and_never_shows_a_secret(self):
        emu = self.emulator(mode="shenyu", hold=30)
        d, ep = self.agent(emu)
        ep.wait_status(lambda s: s["healthy"], message="healthy")
        st, _, body = ep.get("/config/APP_AUTH")
        self.assertEqual(st, 404, body)
        self.assertIn(b"status.expose_config", body)
        d.stop()

        d2, ep2 = self.agent(emu, status_extra={"expose_config": True})
        secret, real = "sk-topsecret-0123456789abcdef", "sk-real-fedcba9876543210"
        v = emu.upsert("AI_PROXY_API_KEY", ai_key("sel-9", secret, real))
        ep2.wait_status(lambda s: s["healthy"] and
                        s["groups"]["AI_PROXY_API_KEY"]["md5"] == v["md5"], message="the key")
        auth = emu.data("APP_AUTH")["data"]
        self.assertTrue(auth and all(a.get("appSecret") for a in auth))
        st, hdrs, body = ep2.get("/config/APP_AUTH")
        self.assertEqual(st, 200, body)
        self.assertEqual(hdrs.get("Content-Type"), "application/json")
        doc = json.loads(body)
        self.assertEqual(doc["group"], "APP_AUTH")
        self.assertEqual(doc["md5"], emu.group("APP_AUTH")["md5"])
        self.assertEqual(len(doc["data"]), len(auth))
        self.assertEqual([a["appKey"] for a in doc["data"]], [a["appKey"] for a in auth])
        self.assertTrue(all(a["appSecret"] == "<redacted>" for a in doc["data"]))
        self.assertIn("appSecret", doc["redactedFields"])
        self.assertGreaterEqual(doc["redacted"], len(auth))
        for a in auth:
            self.assertNotIn(a["appSecret"].encode(), body)

        st, _, body = ep2.get("/config/AI_PROXY_API_KEY")
        self.assertEqual(st, 200, body)
        keys = json.loads(body)["data"]
        mine = [k for k in keys if k["selectorId"] == "sel-9"]
        self.assertEqual(mine[0]["proxyApiKey"], "<redacted>")
        self.assertEqual(mine[0]["realApiKey"], "<redacted>")
        self.assertEqual(mine[0]["description"], "test key")
        for text in (secret, real):
            self.assertNotIn(text.encode(), body)
        for k in emu.data("AI_PROXY_API_KEY")["data"]:
            self.assertNotIn(k["proxyApiKey"].encode(), body)
            self.assertNotIn(k["realApiKey"].encode(), body)

        # a rule without secrets is as the subscribers got it, byte for byte
        st, _, body = ep2.get("/config/RULE")
        self.assertEqual(st, 200)
        self.assertEqual(json.loads(body)["data"], emu.data("RULE")["data"])
        self.assertEqual(ep2.get("/config/NOPE")[0], 404)
        self.assertEqual(ep2.get("/config/")[0], 404)
        self.assertEqual(ep2.request("POST", "/config/RULE", body=b"")[0], 405)

    def test_status_cli_shows_groups_subscribers_pause_and_last_changes(self):
        emu = self.emulator(mode="shenyu", hold=30)
        tmp = self.tmpdir()
        flag = os.path.join(tmp, "fail-now")
        d, ep = self.agent(emu, subscribers=[recorder(os.path.join(tmp, "rec.txt"), flag)])
        ep.wait_status(in_step, message="in step")
        v = emu.upsert("RULE", synclog.rule("cli-1"))
        ep.wait_status(lambda s: in_step(s) and s["groups"]["RULE"]["md5"] == v["md5"],
                       message="the change delivered")
        r = d.run("--status")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertRegex(out, r"^gwsyncd \S+, up \S+: healthy \(ok\)\n")
        self.assertIn("delivery: running\n", out)
        self.assertIn("source:  admin (http)\n  %s  polling, last success" % emu.url, out)
        for g in emu.groups:
            self.assertRegex(out, r"\n  %s +%s  lastModifyTime %d  %d items  age \S+  from %s\n"
                             % (g, emu.group(g)["md5"][:8], emu.group(g)["lastModifyTime"],
                                emu.group(g)["count"], re.escape(emu.url)))
        self.assertIn("\n  rec (recorder): in step\n", out)
        self.assertRegex(out, r"\nlast changes:\n  \S+ \S+ \(\S+ ago\)  RULE +%s  \+1 ~0 -0 \+cli-1  from %s\n      rec: applied "
                         % (v["md5"][:8], re.escape(emu.url)))

        open(flag, "w").close()
        v2 = emu.upsert("RULE", synclog.rule("cli-2"))
        ep.wait_status(lambda s: sub(s)["groups"]["RULE"]["consecutiveFailures"] >= 1,
                       message="a refusal")
        out = d.run("--status").stdout
        self.assertRegex(out, r"\n  rec \(recorder\): behind\n    RULE: refused \d+ in a row: .*told to fail")
        self.assertRegex(out, r"RULE +%s .*\n      rec: refused \S+ \S+: .*told to fail" % v2["md5"][:8])
        os.unlink(flag)
        self.assertEqual(d.run("--pause").returncode, 0)
        out = d.run("--status").stdout
        self.assertIn("delivery: PAUSED", out)
        # --status SOCKET: the control socket named directly, no configuration read
        sock = os.path.join(d._top_level("state_dir"), "control.sock")
        r = subprocess.run([d.binary, "-c", "/nonexistent/gwsync.yaml", "--status", sock],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("delivery: PAUSED", r.stdout)

        d.stop()
        r = d.run("--status")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no agent answered at", r.stderr)
        self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    harness.main()
