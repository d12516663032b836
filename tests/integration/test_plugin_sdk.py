#!/usr/bin/env python3
"""The plugin SDK from the outside (issue 14): declared options checked by `gwsyncd --check`
like the agent's own keys, `gwsyncd --plugin-help` printing them (and docs/configuration.md
showing the same text), and `gwsync-replay` driving plugins of ABI 2 and ABI 1 with group
documents: deltas, verdicts, an injected failure, repeats, a directory, the threaded mode;
only sequences the agent could deliver (issue 21, item 11: no version twice, never back in
time). The groups the agent syncs reach a plugin through its host, from gwsyncd's
configuration and from gwsync-replay's documents or --groups (issue 21, item 8). The public
headers, inline functions included, compile as C99 and C++ with every warning an error."""
import json
import os
import shutil
import subprocess

import groupfiles
import harness

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR", "")
EXAMPLE = os.path.join(SRC, "docs", "example")


def run(argv, cwd=None):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, cwd=cwd, errors="replace")


def replay(*args, cwd=None):
    return run([os.path.join(BUILD, "gwsync-replay")] + list(args), cwd=cwd)


class PluginSdk(harness.IntegrationTest):

    def setUp(self):
        super().setUp()
        harness.require_daemon()
        if not BUILD:
            self.skipTest("needs GWSYNC_BUILDDIR")

    def write(self, text, name):
        path = os.path.join(self.tmpdir(), name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_plugin_help_is_the_documented_text(self):
        with open(os.path.join(SRC, "docs", "configuration.md")) as f:
            docs = f.read()
        for plugin in ("log", "file", "lmdb"):
            r = run([os.environ["GWSYNCD"], "--plugin-help", plugin])
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("```\n" + r.stdout + "```", docs,
                          "docs/configuration.md must show `gwsyncd --plugin-help %s` "
                          "exactly:\n%s" % (plugin, r.stdout))
        r = run([os.environ["GWSYNCD"], "--plugin-help", "no-such-plugin"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("not found", r.stderr)

    def test_check_refuses_a_misspelt_plugin_option(self):
        d = self.daemon(harness.make_config(["http://127.0.0.1:9"], subscribers=[
            {"name": "files", "library": "file",
             "config": {"dir": self.tmpdir(), "debounse": "1s"}}]), start=False)
        r = d.run_check()
        self.assertEqual(r.returncode, 2, r.stderr)
        # exactly the format of the agent's own keys: "gwsyncd: FILE:LINE:COL: ...", with no
        # log timestamp or instance prefix before it (issue 21)
        self.assertRegex(r.stderr, r"(?m)^gwsyncd: \S*gwsync\.yaml:\d+:\d+: "
                                   r"unknown key 'debounse' in subscribers\[0\]\.config "
                                   r"\(did you mean 'debounce'\?\)$")
        d.write_config(harness.make_config(["http://127.0.0.1:9"], subscribers=[
            {"name": "files", "library": "file",
             "config": {"dir": self.tmpdir(), "debounce": "soon"}}]))
        r = d.run_check()
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, r"(?m)^gwsyncd: \S*gwsync\.yaml:\d+:\d+: "
                                   r"subscribers\[0\]\.config\.debounce: expected a duration")

    def test_replay_abi2_example_with_an_injected_failure(self):
        counter = os.path.join(BUILD, "docs", "example", ".libs", "counter.so")
        r = replay("-c", "counter.yaml", "--fail", "2", counter, "data/RULE-1.json",
                   "data/RULE-2.json", cwd=EXAMPLE)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(EXAMPLE, "replay.expected")) as f:
            self.assertEqual(r.stdout, f.read())
        self.assertIn("2 changes: +3 ~1 -1", r.stderr)  # the plugin's own log line

    def test_replay_abi1_plugin_directory_repeat_threaded(self):
        out = os.path.join(self.tmpdir(), "rec.txt")
        config = self.write("out: %s\n" % out, "rec.yaml")
        docs = self.tmpdir()
        shutil.copy(os.path.join(EXAMPLE, "data", "RULE-1.json"), os.path.join(docs, "RULE.json"))
        r = replay("-c", config, "--repeat", "2", "--threaded", "-q", "recorder1", docs,
                   os.path.join(EXAMPLE, "data", "RULE-2.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 4, r.stdout)
        self.assertIn("+2 ~0 -0: accepted", lines[0])
        self.assertIn("+1 ~1 -1: accepted", lines[1])
        # back to RULE-1 (r3 out, r1 in), stamped after RULE-2 as the agent would deliver it
        self.assertIn("+1 ~1 -1, lastModifyTime raised from 1700000000000 to 1700000060001: "
                      "accepted", lines[2])
        self.assertIn("+1 ~1 -1, lastModifyTime raised from 1700000060000 to 1700000060002: "
                      "accepted", lines[3])
        with open(out) as f:
            rec = f.read().splitlines()
        applies = [l for l in rec if l.startswith("apply ")]
        self.assertEqual(len(applies), 4, rec)
        self.assertTrue(applies[0].startswith("apply RULE md5=7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c01 "
                                              "prev=- lmt=1700000000000 items=2 added=r1,r2"),
                        applies[0])
        self.assertEqual(rec[0], "init replay")
        self.assertEqual(rec[-1], "fini")

    def test_replay_reports_a_rejecting_plugin_and_bad_input(self):
        out = os.path.join(self.tmpdir(), "rec.txt")
        flag = self.write("", "fail-now")
        config = self.write("out: %s\nfail_if_exists: %s\n" % (out, flag), "rec.yaml")
        r = replay("-c", config, "recorder", os.path.join(EXAMPLE, "data", "RULE-1.json"))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("rejected: told to fail by", r.stdout)
        self.assertIn("#2 retry RULE", r.stdout)
        typo = self.write("out: %s\nfail_iff_exists: x\n" % out, "typo.yaml")
        r = replay("-c", typo, "recorder", os.path.join(EXAMPLE, "data", "RULE-1.json"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean 'fail_if_exists'", r.stderr)
        r = replay("recorder")
        self.assertEqual(r.returncode, 2)

    def test_replay_of_a_state_dir_applies_its_journal_as_the_cold_start_does(self):
        """An agent's state_dir holds GROUP.json and, after it, GROUP.journal: the versions
        accepted since the file was written (a delete among them). Replay plays the version
        the agent holds, the journal applied (issue 31, item 4: it played the file's older
        version, a key deleted since included, and said nothing)."""
        emu = self.emulator(mode="shenyu", hold=1)
        state = os.path.join(self.tmpdir(), "state")
        d = self.daemon(emu.config(state_dir=state, log_level="info"))
        groupfiles.wait_version(state, "APP_AUTH", emu.group("APP_AUTH")["md5"])
        gone = emu.data("APP_AUTH")["data"][0]["appKey"]
        v = emu.delete("APP_AUTH", gone)
        harness.wait_until(lambda: os.path.exists(os.path.join(state, "APP_AUTH.journal")) and
                           groupfiles.md5(state, "APP_AUTH") == v["md5"], timeout=20,
                           message="the delete journaled")
        d.stop()
        with open(os.path.join(state, "APP_AUTH.json")) as f:
            self.assertIn(gone, f.read())  # the file alone still holds the deleted key
        out = os.path.join(self.tmpdir(), "rec.txt")
        config = self.write("out: %s\n" % out, "rec.yaml")
        r = replay("-c", config, "--groups", ",".join(emu.groups), "recorder", state)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"-- APP_AUTH %s: \S*APP_AUTH.journal: 1 change\(s\) after "
                         r"the file applied\n" % v["md5"])
        with open(out) as f:
            played = [line for line in f if line.startswith("apply APP_AUTH ")]
        self.assertEqual(len(played), 1, played)
        self.assertIn("md5=%s " % v["md5"], played[0])
        self.assertNotIn(gone, played[0])

    def test_replay_errors_name_the_keys_of_its_own_config_file(self):
        """Its -c file is the bare config: map: a message names its keys, not gwsyncd's
        subscribers[0].config paths, and a bad boolean lists every accepted spelling."""
        data = os.path.join(EXAMPLE, "data", "RULE-1.json")
        out = os.path.join(self.tmpdir(), "rec.txt")
        bad = self.write("out: %s\nfail_init: 1\n" % out, "bad.yaml")
        r = replay("-c", bad, "recorder", data)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad.yaml:2:12: fail_init: expected true or false (also yes/no, on/off), "
                      "got '1'", r.stderr)
        self.assertNotIn("subscribers[", r.stderr)
        typo = self.write("out: %s\nfail_iff: x\n" % out, "typo.yaml")
        r = replay("-c", typo, "recorder", data)
        self.assertIn("typo.yaml:2:1: unknown key 'fail_iff' (did you mean", r.stderr)
        self.assertNotIn("subscribers[", r.stderr)
        refuse = self.write("out: %s\nfail_init: yes\n" % out, "refuse.yaml")
        r = replay("-c", refuse, "recorder", data)
        self.assertRegex(r.stderr, r"gwsync-replay: \S*refuse.yaml: \S*recorder.so: init\(\) "
                                   r"failed: told to fail in init")
        self.assertNotIn("subscribers[", r.stderr)

    def test_replay_skips_a_version_twice_and_never_goes_back_in_time(self):
        out = os.path.join(self.tmpdir(), "rec.txt")
        config = self.write("out: %s\n" % out, "rec.yaml")
        one = os.path.join(EXAMPLE, "data", "RULE-1.json")
        two = os.path.join(EXAMPLE, "data", "RULE-2.json")
        r = replay("-c", config, "-q", "recorder", one, one, two, one)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 4, r.stdout)
        self.assertTrue(lines[0].startswith("#1 RULE 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c01 <- nothing"),
                        lines[0])
        self.assertEqual(lines[1], "-- RULE 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c01: skipped: the md5 of "
                                   "the version played before it (the agent never delivers a "
                                   "version twice)")
        self.assertIn("#2 RULE 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c02 <- 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c01",
                      lines[2])
        self.assertNotIn("raised", lines[2])
        self.assertIn("#3 RULE 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c01 <- 7d1e5c0c1b1f4f6b9c1d2e3f4a5b6c02",
                      lines[3])
        self.assertIn("lastModifyTime raised from 1700000000000 to 1700000060001", lines[3])
        with open(out) as f:
            applies = [l for l in f.read().splitlines() if l.startswith("apply ")]
        self.assertEqual(len(applies), 3, applies)  # the skipped one never reached apply()
        self.assertIn(" lmt=1700000060001 ", applies[2])  # the plugin saw the raised time
        r = replay("--help")
        self.assertIn("never delivers a version", r.stdout)

    def write_doc(self, directory, group, md5, items):
        path = os.path.join(directory, group + ".json")
        with open(path, "w") as f:
            json.dump({"group": group, "md5": md5, "lastModifyTime": 1, "data": items}, f)
        return path

    SELECTORS = [{"id": "s1", "pluginName": "divide", "name": "/order",
                  "handle": json.dumps([{"upstreamUrl": "10.0.0.1:8080", "weight": 50}])}]
    DISCOVERY = [{"selectorId": "s1", "pluginName": "divide", "upstreamDataList": [
        {"url": "10.0.0.2:8080", "status": 0, "weight": 50},
        {"url": "10.0.0.3:8080", "status": 1, "weight": 50}]}]

    def upstreams_config(self):
        work = self.tmpdir()
        out, writes = os.path.join(work, "out"), os.path.join(work, "writes")
        return self.write("out: %s\nwrites: %s\n" % (out, writes), "ups.yaml"), out, writes

    def read(self, path):
        with open(path) as f:
            return f.read()

    def test_replay_tells_the_plugin_the_groups_of_its_documents_or_of_groups(self):
        docs = self.tmpdir()
        sel = self.write_doc(docs, "SELECTOR", "s1", self.SELECTORS)
        disc = self.write_doc(docs, "DISCOVER_UPSTREAM", "d1", self.DISCOVERY)
        # the documents' groups: DISCOVER_UPSTREAM synced, the plugin waits for it
        config, out, writes = self.upstreams_config()
        r = replay("-c", config, "upstreams", docs)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.read(out), "s1 10.0.0.2:8080\n")
        self.assertEqual(self.read(writes), "write 1 discovery\n")
        # SELECTOR alone: the handle's upstreams, once
        config, out, writes = self.upstreams_config()
        r = replay("-c", config, "upstreams", sel)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.read(out), "s1 10.0.0.1:8080\n")
        self.assertEqual(self.read(writes), "write 1 handle\n")
        # --groups names what a configuration would sync, documents or not
        config, out, writes = self.upstreams_config()
        r = replay("-c", config, "--groups", "PLUGIN,SELECTOR,DISCOVER_UPSTREAM", "upstreams", sel)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertFalse(os.path.exists(writes))  # still waiting for DISCOVER_UPSTREAM
        r = replay("-c", config, "--groups", "SELECTOR", "upstreams", sel, disc)
        self.assertEqual(r.returncode, 2)
        self.assertIn("group DISCOVER_UPSTREAM is not in --groups", r.stderr)
        r = replay("--groups", "SELECTOR,NOPE", "upstreams", sel)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--groups: unknown group 'NOPE'", r.stderr)

    def test_the_agent_tells_a_plugin_which_groups_it_syncs(self):
        """A plugin that takes upstreams from DISCOVER_UPSTREAM when the agent syncs it and
        from the selectors' handles otherwise writes its output once at start either way
        (tests/unit/upstreams.c), against the real agent and an admin."""
        dataset = {"PLUGIN": [{"id": "5", "name": "divide", "enabled": True}],
                   "SELECTOR": self.SELECTORS, "RULE": [],
                   "DISCOVER_UPSTREAM": self.DISCOVERY}
        every = ["PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM"]
        for groups, takes, want, source in (
                (every, None, "10.0.0.2:8080", "discovery"),
                (["PLUGIN", "SELECTOR", "RULE"], None, "10.0.0.1:8080", "handle"),
                # its own groups: (issue 31, item 5): the host answers for them, not for
                # every group the agent syncs
                (every, ["PLUGIN", "SELECTOR", "RULE"], "10.0.0.1:8080", "handle")):
            work = self.tmpdir()
            out, writes = os.path.join(work, "out"), os.path.join(work, "writes")
            emu = self.emulator(dataset=dataset, groups=groups)
            sub = {"name": "ups", "library": "upstreams", "config": {"out": out, "writes": writes}}
            if takes:
                sub["groups"] = takes
            d = self.daemon(emu.config(subscribers=[sub]), start=False)
            r = d.run_once()
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.read(out), "s1 %s\n" % want)
            self.assertEqual(self.read(writes), "write 1 %s\n" % source, groups)

    def test_the_public_headers_compile_as_c99_and_as_cxx_without_a_warning(self):
        # The headers carry inline functions (gw_change_entry, gw_change_list_entry): a
        # plugin may be C99 or C++ and build with every warning as an error.
        src = self.write("#include <gwsync/subscriber.h>\n#include <gwsync/testing.h>\n"
                         "const struct gw_item *f(const struct gw_host *h,\n"
                         "                        const struct gw_change *c);\n"
                         "const struct gw_item *f(const struct gw_host *h,\n"
                         "                        const struct gw_change *c)\n"
                         "{\n\treturn gw_change_entry(h, c, GW_LIST_UPDATED_OLD, 0);\n}\n",
                         "uses_headers.c")
        warn = ["-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
                "-I" + os.path.join(SRC, "include")]
        builds = [("cc", ["-std=c99"]), ("c++", ["-x", "c++", "-std=c++11"])]
        ran = 0
        for compiler, lang in builds:
            if not shutil.which(compiler):
                continue
            r = run([compiler] + lang + warn + [src])
            self.assertEqual(r.returncode, 0, "%s %s: %s" % (compiler, lang, r.stderr))
            ran += 1
        if not ran:
            self.skipTest("no cc or c++")


if __name__ == "__main__":
    harness.main()
