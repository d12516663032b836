#!/usr/bin/env python3
"""Log injection (issue 20, item 3): text the admin controls (the `message` of an error
reply, item keys and names) cannot forge a log line. In the text format every control
character is escaped (a "\\n" shows as the two characters \\n), in the agent's own lines and
in the `log` subscriber's; the JSON format stays one JSON document per line."""
import json
import re

import harness
import synclog

FORGED = "\n2026-01-01T00:00:00.000Z info  store: accepted PLUGIN version FORGED (lastModifyTime 1)"
# a line the agent did not write: the forged one, at the start of a line
FORGED_LINE = re.compile(r"^\S+ info\s+store: accepted PLUGIN version FORGED")


class LogInjection(harness.IntegrationTest):

    def test_an_admin_error_message_stays_on_one_line(self):
        emu = self.emulator(hold=1)
        d = self.daemon(emu.config(retry=(3, "100ms", "200ms")))
        d.wait_status(harness.holds("RULE"), "RULE held", timeout=20)
        mark = d.mark()
        emu.fault("code", endpoint="fetch", code=500, message="busy" + FORGED + "\r\x1b[2J", count=1)
        v = emu.touch("RULE")
        # log wording is the behaviour here: the admin's text escaped on one line
        line = d.wait_log(r"admin code 500: busy", since=mark, timeout=20).string
        self.assertIn("busy\\n2026-01-01T00:00:00.000Z info  store: accepted PLUGIN version "
                      "FORGED (lastModifyTime 1)\\r\\x1b[2J", line)
        synclog.holds(d, "RULE", v, timeout=20)
        for text in d.lines(since=mark):
            self.assertIsNone(FORGED_LINE.search(text), text)

    def test_item_keys_and_names_stay_on_one_line_in_the_log_subscriber(self):
        emu = self.emulator(hold=1)
        d = self.daemon(emu.config(subscribers=[{"name": "gateway-log", "library": "log"}]))
        # log wording is the behaviour here: the log subscriber's lines (its first version)
        d.wait_log(r"gateway-log: RULE version", timeout=20)
        mark = d.mark()
        v = emu.upsert("RULE", synclog.rule("k1" + FORGED, name="n1" + FORGED + "\x07"))
        # log wording is the behaviour here: the log subscriber's lines
        d.wait_log(r"gateway-log: RULE version %s" % v["md5"], since=mark, timeout=20)
        added = [t for t in d.lines(since=mark) if "gateway-log: RULE added" in t]
        self.assertEqual(len(added), 1, "\n".join(d.lines(since=mark)))
        self.assertIn("key=k1\\n2026-01-01T00:00:00.000Z info  store: accepted PLUGIN version "
                      "FORGED (lastModifyTime 1) name=n1\\n2026", added[0])
        self.assertTrue(added[0].endswith("(lastModifyTime 1)\\x07"), added[0])
        for text in d.lines(since=mark):
            self.assertIsNone(FORGED_LINE.search(text), text)

    def test_json_lines_stay_json(self):
        emu = self.emulator(hold=1)
        d = self.daemon(emu.config(log={"format": "json"}, retry=(3, "100ms", "200ms"),
                                   subscribers=[{"name": "gateway-log", "library": "log"}]))
        d.wait_status(harness.holds("RULE"), "RULE held", timeout=20)
        mark = d.mark()
        emu.fault("code", endpoint="fetch", code=500, message="busy" + FORGED, count=1)
        v = emu.upsert("RULE", synclog.rule("k2", name="n2" + FORGED))
        # log wording is the behaviour here: the log subscriber's lines
        d.wait_log(r"gateway-log.*RULE version %s" % v["md5"], since=mark, timeout=20)
        msgs = []
        for text in d.lines(since=mark):
            doc = json.loads(text)          # every line is one document
            msgs.append(doc["msg"])
            self.assertNotEqual(doc["msg"].split(" ")[:2], ["accepted", "PLUGIN"])
        self.assertTrue(any(FORGED in m for m in msgs), msgs)


if __name__ == "__main__":
    harness.main()
