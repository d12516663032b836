#!/usr/bin/env python3
"""Subscriber plugins end to end (issue 4): a change made in the admin emulator reaches the
`file` plugin's output and the `log` plugin's lines; --check loads (and refuses) plugins;
--once delivers everything once and fails if a subscriber rejects a change."""
import json
import os

import harness
import synclog

EMPTY_MD5 = "d751713988987e9331980363e24189ce"


def read_group_file(directory, group):
    """The parsed GROUP.json, or None while it does not exist yet."""
    try:
        with open(os.path.join(directory, group + ".json"), "rb") as f:
            return json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None


def delivered(d, group, md5, counts, names=("files",)):
    """Wait until the change history says every subscriber of `names` applied version
    `md5` of `group`, a change of counts = (added, updated, removed) items."""
    return d.wait_history(group, md5, harness.all_of(*[harness.applied_by(n, counts)
                                                      for n in names]))


class Subscribers(harness.IntegrationTest):

    def config(self, emu, files, extra_subscribers=(), **kw):
        subs = [{"name": "gateway-log", "library": "log"},
                {"name": "files", "library": "file",
                 "config": {"dir": files, "mode": "0640",
                            "reload_command": "echo \"$GWSYNC_GROUP\" >> %s"
                            % os.path.join(files, "..", "reloads.txt"),
                            "debounce": "100ms"}}]
        return emu.config(log_level="info", subscribers=subs + list(extra_subscribers), **kw)

    def wait_file(self, files, group, md5, timeout=15.0):
        return harness.wait_until(
            lambda: (lambda doc: doc if doc and doc["md5"] == md5 else None)(
                read_group_file(files, group)),
            timeout=timeout, message="%s.json at version %s" % (group, md5))

    def test_a_change_in_the_admin_reaches_the_file_and_log_plugins(self):
        emu = self.emulator(mode="shenyu", hold=30)
        files = os.path.join(self.tmpdir(), "files")
        d = self.daemon(self.config(emu, files))

        # Start-up: every group's file, exactly the admin's data in the admin's order.
        for g in emu.groups:
            v = emu.data(g)
            doc = self.wait_file(files, g, v["md5"])
            self.assertEqual(doc["group"], g)
            self.assertEqual(doc["lastModifyTime"], v["lastModifyTime"])
            self.assertEqual(doc["data"], v["data"])
        self.assertEqual(os.stat(os.path.join(files, "RULE.json")).st_mode & 0o777, 0o640)

        # A new rule with non-ASCII text, made in the admin while a poll is held.
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held listener")
        mark = d.mark()
        item = synclog.rule("it-rule-1", name="/ürün/注文 ✓")
        v = emu.upsert("RULE", item)
        doc = self.wait_file(files, "RULE", v["md5"])
        self.assertEqual([i for i in doc["data"] if i["id"] == "it-rule-1"], [item])
        self.assertEqual(doc["data"], emu.data("RULE")["data"])
        delivered(d, "RULE", v["md5"], (1, 0, 0), ("files", "gateway-log"))
        # log wording is the behaviour here: the log plugin's lines
        d.wait_log(r"gateway-log: RULE added key=it-rule-1 name=/ürün/注文 ✓$", since=mark)
        d.wait_log(r"gateway-log: RULE version %s .*\+1 ~0 -0" % v["md5"], since=mark)

        # Updated, then removed: each one change with the right delta.
        mark = d.mark()
        item["handle"] = '{"retry":5}'
        v = emu.upsert("RULE", item)
        self.wait_file(files, "RULE", v["md5"])
        delivered(d, "RULE", v["md5"], (0, 1, 0))
        # log wording is the behaviour here: the log plugin's lines
        d.wait_log(r"gateway-log: RULE updated key=it-rule-1 ", since=mark)
        mark = d.mark()
        v = emu.delete("RULE", "it-rule-1")
        doc = self.wait_file(files, "RULE", v["md5"])
        self.assertFalse([i for i in doc["data"] if i["id"] == "it-rule-1"])
        delivered(d, "RULE", v["md5"], (0, 0, 1))
        # log wording is the behaviour here: the log plugin's lines
        d.wait_log(r"gateway-log: RULE removed key=it-rule-1 ", since=mark)

        # An emptied group is delivered: everything removed, an empty list on disk.
        before = len(emu.data("APP_AUTH")["data"])
        v = emu.replace("APP_AUTH", [])
        self.assertEqual(v["md5"], EMPTY_MD5)
        doc = self.wait_file(files, "APP_AUTH", EMPTY_MD5)
        self.assertEqual(doc["data"], [])
        delivered(d, "APP_AUTH", EMPTY_MD5, (0, 0, before))

        # The debounced reload ran after the changes and named the groups.
        reloads = os.path.join(files, "..", "reloads.txt")
        def reloaded():
            try:
                with open(reloads, encoding="utf-8") as f:
                    return "APP_AUTH" in f.read()
            except FileNotFoundError:
                return False
        harness.wait_until(reloaded, message="reload_command for APP_AUTH")
        rc, _ = d.stop()
        self.assertEqual(rc, 0)

    def test_a_subscriber_with_groups_is_delivered_and_counted_only_those(self):
        """subscribers[].groups (issue 31, item 5): an APP_AUTH-only subscriber is handed
        APP_AUTH alone; /status and /history count it for that group alone, its host
        answers for its groups; a subscriber without `groups:` takes every synced one.
        A group the agent does not sync is refused at --check, naming both."""
        emu = self.emulator(mode="shenyu", hold=30)
        tmp = self.tmpdir()
        acl, every = os.path.join(tmp, "acl.txt"), os.path.join(tmp, "every.txt")
        subs = [{"name": "acl", "library": "recorder", "config": {"out": acl},
                 "groups": ["APP_AUTH"]},
                {"name": "every", "library": "recorder", "config": {"out": every}}]
        d = self.daemon(emu.config(log_level="info", subscribers=subs))
        d.wait_status(lambda st: all(s["inStep"] for s in st["subscribers"]) and st["healthy"],
                      message="in step")
        v = emu.upsert("RULE", synclog.rule("only-for-every"))
        a = emu.delete("APP_AUTH", emu.data("APP_AUTH")["data"][0]["appKey"])
        d.wait_history("APP_AUTH", a["md5"], harness.applied_by("acl", (0, 0, 1)))
        d.wait_history("RULE", v["md5"], harness.applied_by("every", (1, 0, 0)))
        with open(acl) as f:
            groups = {line.split()[1] for line in f if line.startswith("apply ")}
        self.assertEqual(groups, {"APP_AUTH"})
        with open(every) as f:
            groups = {line.split()[1] for line in f if line.startswith("apply ")}
        self.assertEqual(groups, set(emu.groups))
        doc = d.status_doc()
        st = {s["name"]: s for s in doc["status"]["subscribers"]}
        self.assertEqual(list(st["acl"]["groups"]), ["APP_AUTH"])
        self.assertEqual(st["acl"]["applies"], 2)  # the start-up version and the delete
        self.assertTrue(st["acl"]["inStep"])
        self.assertEqual(sorted(st["every"]["groups"]), sorted(emu.groups))
        rule = [e for e in doc["history"]["groups"]["RULE"] if e["md5"] == v["md5"]][0]
        self.assertEqual(sorted(rule["subscribers"]), ["every"])
        app = [e for e in doc["history"]["groups"]["APP_AUTH"] if e["md5"] == a["md5"]][0]
        self.assertEqual(sorted(app["subscribers"]), ["acl", "every"])
        d.stop()

        bad = emu.config(subscribers=[{"name": "acl", "library": "log",
                                       "groups": ["APP_AUTH", "DISCOVER_UPSTREAM"]}],
                         groups=["RULE", "APP_AUTH"])
        path = os.path.join(tmp, "bad.yaml")
        with open(path, "w") as f:
            f.write(bad)
        r = harness.Daemon(bad, tmp=tmp).run_check()
        self.assertEqual(r.returncode, 2)
        self.assertIn("subscriber 'acl' takes group DISCOVER_UPSTREAM, which this agent does "
                      "not sync (admin.groups: RULE, APP_AUTH)", r.stderr)

    def test_check_loads_every_subscriber(self):
        emu = self.emulator(mode="shenyu", hold=2)
        files = os.path.join(self.tmpdir(), "files")
        d = self.daemon(self.config(emu, files), start=False)
        r = d.run_check()
        self.assertEqual(r.returncode, 0, r.stderr)

        for library, reason in (("no-such-plugin", r"not found"),
                                ("badabi", r"ABI 43.*speaks ABI 2"),
                                ("nosymbol", r"gwsync_subscriber")):
            d.write_config(self.config(emu, files, extra_subscribers=[
                {"name": "broken-one", "library": library}]))
            r = d.run_check()
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertRegex(r.stderr, r"subscriber 'broken-one'")
            self.assertRegex(r.stderr, reason)

    def test_once_delivers_and_reports_a_rejecting_subscriber(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        files = os.path.join(tmp, "files")
        d = self.daemon(self.config(emu, files), start=False)
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        for g in emu.groups:
            doc = read_group_file(files, g)
            self.assertIsNotNone(doc, g)
            self.assertEqual(doc["md5"], emu.group(g)["md5"])

        flag = os.path.join(tmp, "fail")
        open(flag, "w").close()
        d.write_config(self.config(emu, files, extra_subscribers=[
            {"name": "refuser", "library": "recorder",
             "config": {"out": os.path.join(tmp, "rec.txt"), "fail_if_exists": flag}}]))
        r = d.run_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"subscriber 'refuser' rejected RULE")


if __name__ == "__main__":
    harness.main()
