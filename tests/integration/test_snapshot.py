#!/usr/bin/env python3
"""The local snapshot and the cold start (issue 5): with every admin down at start the
agent serves its last good data from state_dir, says it is STALE and keeps trying; the
first admin that answers replaces that provisional data with ordinary deltas, even with an
older lastModifyTime; a corrupt snapshot file is reported and skipped; `--once` without an
admin uses the snapshot (and says so) or fails."""
import json
import os
import re

import groupfiles
import harness
import synclog

RETRY = (3, "200ms", "500ms")


def config(emu, state_dir, files, **kw):
    kw.setdefault("log_level", "info")
    kw.setdefault("retry", RETRY)
    return emu.config(state_dir=state_dir, subscribers=[groupfiles.file_subscriber(files)], **kw)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def dump(doc, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


def parses(path):
    """The file holds JSON (a corrupt snapshot written by a test does not)."""
    try:
        load(path)
        return True
    except ValueError:
        return False


def stale_line(n, of, state_dir):
    return (r"main: no admin answered at start; serving %d of %d group\(s\) from the snapshot "
            r"in %s \(STALE until an admin answers\)" % (n, of, re.escape(state_dir)))


class ColdStart(harness.IntegrationTest):

    def take_snapshot(self, emu, state_dir):
        """Sync once from emu so state_dir holds its data; returns {group: data reply}."""
        d = self.daemon(config(emu, state_dir, os.path.join(self.tmpdir(), "files")),
                        start=False)
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        held = {g: emu.data(g) for g in emu.groups}
        for g, v in held.items():
            self.assertEqual(groupfiles.check_whole(os.path.join(state_dir, g + ".json"))["md5"],
                             v["md5"])
        return held

    def test_admin_down_serves_the_snapshot_then_an_older_admin_replaces_it(self):
        tmp = self.tmpdir()
        state, files = os.path.join(tmp, "state"), os.path.join(tmp, "files")
        emu = self.emulator(mode="shenyu", hold=2)
        held = self.take_snapshot(emu, state)
        emu.stop()

        # Every admin down: the snapshot reaches the file plugin, marked stale.
        d = self.daemon(config(emu, state, files))
        d.wait_status(harness.holds_all({g: v["md5"] for g, v in held.items()},
                                        source="snapshot", from_snapshot=True),
                      "every group from the snapshot")
        # log wording is the behaviour here: the STALE warning an operator must see
        d.wait_log(stale_line(len(emu.groups), len(emu.groups), state))
        for g, v in held.items():
            doc = groupfiles.wait_version(files, g, v["md5"])
            self.assertEqual(doc["data"], v["data"])
        d.wait_history("RULE", held["RULE"]["md5"],
                       harness.applied_by("files", (len(held["RULE"]["data"]), 0, 0)))
        # ... and it keeps trying the admin.
        d.wait_status(harness.conn_failing(emu.url, 2, "connect"), "two failed polls")
        self.assertTrue(d.alive())
        self.assertTrue(harness.snapshot_only(d.status()))

        # The admin comes back with other data stamped a day OLDER than the snapshot: the
        # admin is the source of truth, so it still replaces the snapshot, as a delta.
        rules = held["RULE"]["data"]
        renamed = dict(rules[0], name="renamed while the agent was away")
        new_rules = [renamed] + rules[1:-1] + [synclog.rule("added-while-away")]
        older = min(v["lastModifyTime"] for v in held.values()) - 86400000
        data = {g: {"lastModifyTime": older, "data": v["data"]} for g, v in held.items()}
        data["RULE"]["data"] = new_rules
        back = self.emulator(start=False, mode="shenyu", hold=2, dataset=data)
        back.port = emu.port
        back.start()
        v = back.data("RULE")
        self.assertEqual(v["lastModifyTime"], older)
        st = synclog.holds(d, "RULE", v, back.url, items=len(new_rules))
        self.assertEqual(harness.held(st, "RULE")["lastModifyTime"], older)
        doc = groupfiles.wait_version(files, "RULE", v["md5"])
        self.assertEqual(doc["data"], new_rules)
        d.wait_history("RULE", v["md5"], harness.applied_by("files", (1, 1, 1)))
        groupfiles.wait_admin_data(files, back)
        # The snapshot follows the admin's data.
        groupfiles.wait_version(state, "RULE", v["md5"])
        self.assertTrue(d.alive())

    def test_an_admin_confirming_the_snapshot_stops_a_lagging_admin_rolling_back(self):
        # Regression: a snapshot version the admin confirms (same md5) used to stay
        # provisional, so any admin version, even an older one from a lagging admin,
        # replaced it later. The admin's copy now replaces it at once.
        tmp = self.tmpdir()
        state, files = os.path.join(tmp, "state"), os.path.join(tmp, "files")
        good = self.emulator(mode="shenyu", hold=2)
        held = self.take_snapshot(good, state)
        good.stop()
        lagging = self.emulator(start=False, mode="shenyu", hold=2)
        lagging.port = harness.free_port()
        d = self.daemon(harness.Cluster.config_for(
            [good, lagging], state_dir=state, log_level="debug", retry=RETRY,
            subscribers=[groupfiles.file_subscriber(files)]))
        d.wait_status(harness.holds_all({g: v["md5"] for g, v in held.items()},
                                        from_snapshot=True), "every group from the snapshot")
        groupfiles.wait_version(files, "RULE", held["RULE"]["md5"])

        # The good admin comes back with exactly the snapshot's data (same seed): each
        # group is taken from it, and it then holds the poll.
        mark = d.mark()
        good.start()
        for g in good.groups:
            self.assertEqual(good.group(g)["md5"], held[g]["md5"])
        d.wait_status(harness.holds_all({g: v["md5"] for g, v in held.items()}, good.url,
                                        from_snapshot=False), "the admin's confirmation")
        harness.wait_until(lambda: good.state()["held"] >= 1, timeout=10,
                           message="a held poll on the good admin")

        # A second admin that lags behind serves an older RULE: refused.
        lagging.start()
        lagging.lag(groups=["RULE"])
        old = lagging.state()["groups"]["RULE"]["served"]
        self.assertNotEqual(old["md5"], held["RULE"]["md5"])
        # it fetched the older RULE from the lagging admin, and kept what it held
        st = d.wait_status(lambda doc: harness.connection(doc, lagging.url)["fetches"] >= 1,
                           "a fetch from the lagging admin")
        self.assertEqual(harness.held(st, "RULE")["md5"], held["RULE"]["md5"])
        self.assertEqual(harness.connection(st, lagging.url)["changes"], 0)
        self.assertEqual(synclog.accepted_lines(d, mark, "RULE"),
                         [("RULE", held["RULE"]["md5"], good.group("RULE")["lastModifyTime"],
                           len(held["RULE"]["data"]), good.url)])
        self.assertEqual(groupfiles.md5(files, "RULE"), held["RULE"]["md5"])

    def test_corrupt_snapshot_files_are_reported_and_skipped(self):
        tmp = self.tmpdir()
        state, files = os.path.join(tmp, "state"), os.path.join(tmp, "files")
        emu = self.emulator(mode="shenyu", hold=2)
        held = self.take_snapshot(emu, state)
        emu.stop()

        def path(g):
            return os.path.join(state, g + ".json")
        with open(path("RULE"), "w") as f:
            f.write("{not json")
        with open(path("PLUGIN"), "rb+") as f:      # cut in the middle, as a torn write
            f.truncate(os.path.getsize(path("PLUGIN")) // 2)
        doc = load(path("SELECTOR"))
        doc["group"] = "RULE"                       # another group's document
        dump(doc, path("SELECTOR"))
        os.remove(path("APP_AUTH"))                 # not a file at all
        os.mkdir(path("APP_AUTH"))
        doc = load(path("META_DATA"))
        doc["data"][0]["enabled"] = "yes"           # an item of the wrong type
        dump(doc, path("META_DATA"))
        bad = {"RULE": r"invalid JSON", "PLUGIN": r"invalid JSON",
               "SELECTOR": r"the document says it is group RULE",
               "APP_AUTH": r"not a regular file",
               "META_DATA": r"field 'enabled': expected boolean, got string"}

        d = self.daemon(config(emu, state, files))
        for g, why in bad.items():
            # log wording is the behaviour here: the warning names the file and the reason
            d.wait_log(r"warn  snapshot: ignoring snapshot %s: .*%s.* \(corrupt or unreadable\)"
                       % (re.escape(path(g)), why))
        good = [g for g in emu.groups if g not in bad]
        st = d.wait_status(harness.holds_all({g: held[g]["md5"] for g in good},
                                             from_snapshot=True), "the good snapshots")
        self.assertEqual([g for g in bad if harness.held(st, g) is not None], [])
        for g in good:
            groupfiles.wait_version(files, g, held[g]["md5"])
        d.wait_status(harness.conn_failing(emu.url, 1), "a failed poll")
        self.assertTrue(d.alive())
        for g in bad:
            self.assertIsNone(groupfiles.read(files, g), g)

        # The admin comes back: every group is served from it again, snapshot included.
        emu.start()
        groupfiles.wait_admin_data(files, emu)
        for g in ("RULE", "PLUGIN", "SELECTOR", "META_DATA"):
            # the corrupt file stays until the writer replaces it (once the burst of
            # versions is quiet): until then it does not parse, which means "not yet"
            harness.wait_until(lambda: parses(path(g)), timeout=20,
                               message="%s replaced by the snapshot writer" % path(g))
            groupfiles.wait_version(state, g, emu.group(g)["md5"])
        self.assertTrue(os.path.isdir(path("APP_AUTH")))
        # no /status field reports this: a snapshot that cannot be written
        d.wait_log(r"error snapshot: snapshot of APP_AUTH: .*; the agent keeps serving "
                   r"subscribers")


class Once(harness.IntegrationTest):

    def test_once_without_an_admin_uses_the_snapshot_and_says_so(self):
        tmp = self.tmpdir()
        state = os.path.join(tmp, "state")
        emu = self.emulator(mode="shenyu", hold=2)
        d = self.daemon(config(emu, state, os.path.join(tmp, "files1")), start=False)
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        held = {g: emu.group(g) for g in emu.groups}
        emu.stop()

        files = os.path.join(tmp, "files2")
        d.write_config(config(emu, state, files))
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"--once: no admin server answered: .*%s" % re.escape(emu.url))
        self.assertRegex(r.stderr, r"--once: no admin answered; serving %d of %d group\(s\) "
                         r"from the snapshot in %s \(STALE" % (len(held), len(held),
                                                              re.escape(state)))
        for g, v in held.items():
            self.assertEqual(groupfiles.check_whole(os.path.join(files, g + ".json"))["md5"],
                             v["md5"])

    def test_once_without_an_admin_or_a_snapshot_fails(self):
        tmp = self.tmpdir()
        dead = "http://127.0.0.1:%d" % harness.free_port()
        files = os.path.join(tmp, "files")
        cfg = harness.make_config([dead], state_dir=os.path.join(tmp, "state"), log_level="info",
                                  subscribers=[groupfiles.file_subscriber(files)])
        d = self.daemon(cfg, start=False)
        r = d.run_once()
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"--once: no admin server answered: .*%s" % re.escape(dead))
        self.assertRegex(r.stderr, r"--once: could not sync and there is no snapshot in")
        self.assertFalse(os.path.exists(files) and os.listdir(files))


if __name__ == "__main__":
    harness.main()
