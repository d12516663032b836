#!/usr/bin/env python3
"""Bad input from an admin (issue 5), case by case: each one gets a clear log line naming
the server, the group where there is one, and the reason; the last good data stays (the
file plugin's output and the snapshot are unchanged while the admin misbehaves); the agent
keeps running and trying; and it recovers by ordinary polling once the admin is sane.
Unknown extra fields are not bad input: they are kept in the raw JSON.

Each test method starts one emulator and one agent and runs a family of cases on them in
turn; every case ends with the agent in step again, so the next starts clean."""
import os
import re

import groupfiles
import harness
import synclog

RETRY = (3, "200ms", "500ms")
MAX_RESPONSE = 256 * 1024


# A failed fetch names the groups it asked for; in these cases only RULE has changed.
FETCH = "fetch of RULE: "

class BadInput(harness.IntegrationTest):

    changes = 0

    def start(self):
        emu = self.emulator(mode="shenyu", hold=1)
        tmp = self.tmpdir()
        self.files = os.path.join(tmp, "files")
        self.state = os.path.join(tmp, "state")
        # A 1 s hold lets read_timeout be 2 s, so "slower than read_timeout" takes seconds.
        d = self.daemon(emu.config(log_level="info", hold="1s", read_timeout="2s", retry=RETRY,
                                   max_response="256KiB", state_dir=self.state,
                                   subscribers=[groupfiles.file_subscriber(self.files)]))
        groupfiles.wait_admin_data(self.files, emu)
        return emu, d

    def case(self, emu, d, kind, endpoint, reason, tag, **params):
        """One bad reply, repeated until cleared, while RULE has a change waiting."""
        with self.subTest(kind=kind, endpoint=endpoint, **params):
            before = groupfiles.read(self.files, "RULE")
            groupfiles.wait_version(self.state, "RULE", before["md5"])
            try:
                fault = emu.fault(kind, endpoint=endpoint, **params)
                if endpoint == "listener":
                    # The listener call that takes the fault must come after this one: a
                    # poll held from before would carry the change through untouched.
                    harness.wait_until(
                        lambda: any(f["id"] == fault["id"] and f["hits"] > 0
                                    for f in emu.control("faults")["faults"]),
                        timeout=10, message="a listener call taking the %s fault" % kind)
                mark = d.mark()
                self.changes += 1  # a new item each time: the same upsert twice changes nothing
                v = emu.upsert("RULE", synclog.rule("change-%d-%s" % (self.changes, kind)))
                line = (r"poller: server %s: %s \[(?P<tag>\w+)\]; (try \d of 3 failed|all 3 tries)"
                        % (re.escape(emu.url), reason))
                # Twice: the agent keeps trying.
                # log wording is the behaviour here: the message names the group, key, field
                m = d.wait_log(line, since=mark, count=2, timeout=15)
                self.assertEqual(m.group("tag"), tag, m.string)
                self.assertEqual(harness.held(d.status(), "RULE")["md5"], before["md5"])
                self.assertEqual(groupfiles.read(self.files, "RULE"), before)
                self.assertEqual(groupfiles.md5(self.state, "RULE"), before["md5"])
                self.assertTrue(d.alive())
            finally:
                emu.clear_faults()
            synclog.holds(d, "RULE", v, emu.url)
            doc = groupfiles.wait_version(self.files, "RULE", v["md5"])
            self.assertEqual(doc["data"], emu.data("RULE")["data"])
            groupfiles.wait_version(self.state, "RULE", v["md5"])

    def test_unparsable_replies(self):
        emu, d = self.start()
        self.case(emu, d, "malformed", "fetch", FETCH + r"invalid JSON at line 1 column \d+: .*",
                  "parse")
        self.case(emu, d, "malformed", "listener", r"listener: invalid JSON at line 1 .*",
                  "parse")
        self.case(emu, d, "truncated", "fetch",
                  FETCH + r"invalid JSON at line 1 column \d+: premature end of input.*", "parse",
                  fraction=0.6)
        self.case(emu, d, "truncated", "fetch",
                  FETCH + r"GET /configs/fetch: transfer closed with \d+ bytes remaining to read",
                  "connect", mode="connection")
        self.case(emu, d, "invalid_utf8", "fetch",
                  FETCH + r"invalid JSON at line 1 column \d+: unable to decode byte 0xc3.*",
                  "parse")
        self.case(emu, d, "invalid_utf8", "listener",
                  r"listener: invalid JSON at line 1 column \d+: unable to decode byte 0xc3.*",
                  "parse")

    def test_error_codes_and_statuses(self):
        emu, d = self.start()
        self.case(emu, d, "code", "fetch",
                  FETCH + r"admin code 500: The system is busy, please try again later", "code")
        self.case(emu, d, "code", "listener", r"listener: admin code 404: namespace is not exist",
                  "code", code=404, message="namespace is not exist")
        for status, endpoint in ((500, "fetch"), (502, "listener"), (503, "fetch")):
            what = FETCH[:-2] if endpoint == "fetch" else endpoint
            self.case(emu, d, "http", endpoint, r"%s: HTTP %d: <html>.*" % (what, status),
                      "http", status=status)

    def test_broken_connections_slow_and_oversized_replies(self):
        emu, d = self.start()
        self.case(emu, d, "drop", "fetch",
                  FETCH + r"GET /configs/fetch: .*(reset by peer|Empty reply from server).*",
                  "connect", how="reset")
        self.case(emu, d, "drop", "listener",
                  r"POST /configs/listener: .*(reset by peer|Empty reply from server).*",
                  "connect", how="close")
        # Slower than read_timeout (2 s): the listener waits out its 1 s hold, plus 3 s.
        self.case(emu, d, "delay", "listener",
                  r"POST /configs/listener: timed out \(.*\)", "timeout", seconds=3)
        self.case(emu, d, "oversize", "fetch",
                  FETCH + r"GET /configs/fetch: reply larger than admin.max_response \(%d bytes\)"
                  % MAX_RESPONSE, "too_large", bytes=4 * MAX_RESPONSE)
        self.case(emu, d, "oversize", "listener",
                  r"POST /configs/listener: reply larger than admin.max_response \(%d bytes\)"
                  % MAX_RESPONSE, "too_large", bytes=4 * MAX_RESPONSE, chunked=True)

    def test_wrong_types_and_missing_parts(self):
        emu, d = self.start()
        self.case(emu, d, "wrong_type", "fetch",
                  FETCH + r"'data' must be an object keyed by group, got array", "fetch")
        self.case(emu, d, "wrong_type", "listener",
                  r"listener: 'data' must be a list of group names", "parse")
        self.case(emu, d, "wrong_type", "fetch", FETCH + r"reply has no integer 'code'", "parse",
                  target="code")
        self.case(emu, d, "wrong_type", "fetch",
                  FETCH + r"group RULE: expected an object, got string", "fetch",
                  target="group", group="RULE")
        self.case(emu, d, "wrong_type", "fetch",
                  FETCH + r"group RULE: 'data' must be an array, got object", "fetch",
                  target="items", group="RULE")
        self.case(emu, d, "wrong_type", "fetch",
                  FETCH + r"group RULE: 'lastModifyTime' must be an integer, got string", "fetch",
                  target="lastModifyTime", group="RULE")
        self.case(emu, d, "missing_group", "fetch", FETCH + r"group RULE: missing from the reply",
                  "fetch", group="RULE")

    def test_bad_items(self):
        emu, d = self.start()
        key = emu.data("RULE")["data"][1]["id"]
        self.case(emu, d, "bad_item", "fetch",
                  FETCH + r"group RULE item 1 \(key '%s'\): field 'conditionDataList': "
                  r"expected array, got string" % key, "fetch",
                  group="RULE", index=1, field="conditionDataList", value="[]")
        self.case(emu, d, "bad_item", "fetch",
                  FETCH + r"group RULE item 1 \(key '%s'\): field 'sort': expected integer, "
                  r"got string" % key, "fetch", group="RULE", index=1, field="sort", value="1")
        # The rule chosen: a group version with two items of one key is malformed.
        self.case(emu, d, "duplicate_key", "fetch",
                  FETCH + r"group RULE: duplicate key '%s' \(item \d+ repeats an earlier item\)"
                  % key, "fetch", group="RULE", index=1)

    def test_unknown_extra_fields_are_kept_in_the_raw_json(self):
        emu, d = self.start()
        item = synclog.rule("from-a-newer-admin", name="future")
        item["shardingKey"] = {"strategy": "hash", "weights": [1, 2.5, None]}
        item["handle"] = '{"timeout":3000,"x-new":"\\u00e9"}'
        item["labels"] = ["blue", "\u7070"]
        v = emu.upsert("RULE", item)
        synclog.holds(d, "RULE", v, emu.url)
        for where in (self.files, self.state):
            doc = groupfiles.wait_version(where, "RULE", v["md5"])
            self.assertEqual([i for i in doc["data"] if i["id"] == item["id"]], [item])
            groupfiles.check_whole(os.path.join(where, "RULE.json"))
            # the agent's state_dir holds a version after the file's in GROUP.journal, the
            # changed items as raw as in the file
            text = ""
            for name in ("RULE.json", "RULE.journal"):
                if os.path.exists(os.path.join(where, name)):
                    with open(os.path.join(where, name), encoding="utf-8") as f:
                        text += f.read()
            self.assertIn('"shardingKey":{"strategy":"hash","weights":[1,2.5,null]}', text)


if __name__ == "__main__":
    harness.main()
