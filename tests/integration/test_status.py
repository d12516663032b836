#!/usr/bin/env python3
"""Operating the agent (issue 6), end to end against the admin emulator and the built
gwsyncd: /healthz flips from 503 to 200 when data first arrives; /status follows a server
failing and recovering and a subscriber failing and recovering; /metrics is valid Prometheus
text whose counters move; the pause switch (HTTP and `gwsyncd --pause/--resume`) stores
without delivering, survives a restart, and resumes with one change to the newest version;
`--once` while paused delivers nothing; the endpoint binds only where configured and
refuses anything but its routes; systemd notification (READY=1, WATCHDOG=1, STOPPING=1);
JSON logs and SIGHUP reopening the log file; the systemd unit is valid."""
import glob
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error

import harness
import synclog

RETRY = (2, "200ms", "1s")  # fail fast, recover fast
TOKEN = "status-token-0123456789abcdef"  # status.token: allows POST on the endpoint


# ---------------------------------------------------------------------- helpers
class Endpoint:
    """The status endpoint of one agent."""

    def __init__(self, port, host="127.0.0.1"):
        self.port = port
        self.base = "http://%s:%d" % (host, port)

    @property
    def listen(self):
        return "127.0.0.1:%d" % self.port

    def request(self, method, path, headers=None, body=None):
        return harness.http_request(method, self.base + path, body=body, headers=headers,
                                    timeout=5)

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, headers=None, token=TOKEN):
        headers = dict(headers or {})
        if token is not None:
            headers.setdefault("Authorization", "Bearer " + token)
        return self.request("POST", path, headers=headers, body=b"")

    def try_get(self, path):
        """(status, headers, body) or None while nothing answers."""
        try:
            return self.get(path)
        except (urllib.error.URLError, ConnectionError, OSError):
            return None

    def status(self):
        st, hdrs, body = self.get("/status")
        assert st == 200, (st, body)
        assert hdrs.get("Content-Type") == "application/json", hdrs
        return json.loads(body.decode("utf-8"))

    def metrics(self):
        st, hdrs, body = self.get("/metrics")
        assert st == 200, (st, body)
        assert hdrs.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8", hdrs
        return parse_prometheus(body.decode("utf-8"))

    def wait_status(self, predicate, timeout=30.0, message=None):
        """Poll /status until predicate(doc) is truthy; returns the document."""
        holder = {}

        def check():
            r = self.try_get("/status")
            if not r or r[0] != 200:
                return None
            doc = json.loads(r[2].decode("utf-8"))
            holder["last"] = doc
            return doc if predicate(doc) else None

        try:
            return harness.wait_until(check, timeout=timeout, interval=0.05, message=message)
        except AssertionError as e:
            raise AssertionError("%s\nlast /status: %s" % (e, json.dumps(holder.get("last"), indent=1)))


_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})? (\S+)$" % _NAME)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


class Metrics(dict):
    """{(name, ((label, value), ...)): float} plus .types {family: type}."""

    def value(self, name, **labels):
        return self.get((name, tuple(sorted(labels.items()))), math.nan)

    def series(self, name):
        return {k[1]: v for k, v in self.items() if k[0] == name}


def parse_prometheus(text):
    """Strict parser of the text exposition format 0.0.4, as a scraper reads it: HELP and
    TYPE before each family's samples, valid names and escaped labels, float values, no
    duplicate series, counters named *_total, histogram buckets cumulative and ending with
    le="+Inf" equal to _count."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    out = Metrics()
    out.types = {}
    family = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d: %r" % (n, line)
        if line.startswith("# HELP "):
            name, _, doc = line[7:].partition(" ")
            assert re.fullmatch(_NAME, name) and doc, where
            assert name not in out.types, "family repeated: " + where
            family = name
            out.types[name] = None
            continue
        if line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            assert name == family and out.types[name] is None, "TYPE not after HELP: " + where
            assert typ in ("counter", "gauge", "histogram", "summary", "untyped"), where
            out.types[name] = typ
            continue
        assert not line.startswith("#") and line, where
        m = _SAMPLE.match(line)
        assert m, "bad sample: " + where
        name, labels_text, value = m.groups()
        typ = out.types.get(family)
        assert typ, "sample before its TYPE: " + where
        ok_names = {family} if typ != "histogram" else \
            {family + "_bucket", family + "_sum", family + "_count"}
        assert name in ok_names, "sample outside its family %s: %s" % (family, where)
        if typ == "counter":
            assert name.endswith("_total"), where
        labels = []
        rest = labels_text or ""
        while rest:
            lm = _LABEL.match(rest)
            assert lm, "bad labels: " + where
            raw = lm.group(2)
            labels.append((lm.group(1), re.sub(r'\\(.)', lambda x: "\n" if x.group(1) == "n"
                                               else x.group(1), raw)))
            rest = rest[lm.end():]
        key = (name, tuple(sorted(labels)))
        assert key not in out, "duplicate series: " + where
        out[key] = float(value)  # raises on a non-number
    for fam, typ in out.types.items():
        assert typ, "family without TYPE: " + fam
        if typ == "histogram":
            groups = {}
            for (name, labels), v in out.items():
                if name == fam + "_bucket":
                    other = tuple(l for l in labels if l[0] != "le")
                    le = dict(labels)["le"]
                    groups.setdefault(other, []).append((math.inf if le == "+Inf" else float(le), v))
            for other, buckets in groups.items():
                buckets.sort()
                counts = [c for _, c in buckets]
                assert counts == sorted(counts), "buckets not cumulative: %s" % fam
                assert buckets[-1][0] == math.inf, "no +Inf bucket: %s" % fam
                assert buckets[-1][1] == out[(fam + "_count", other)], "+Inf != _count: %s" % fam
    return out


def recorder(out, fail_flag=None, name="rec"):
    cfg = {"out": out}
    if fail_flag:
        cfg["fail_if_exists"] = fail_flag
    return {"name": name, "library": "recorder", "config": cfg}


def applies(path, group=None):
    """The recorder's "apply" lines (optionally of one group), oldest first."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.startswith("apply ")]
    except FileNotFoundError:
        return []
    return [l for l in lines if group is None or l.startswith("apply %s " % group)]


def sub(doc, name="rec"):
    return next(s for s in doc["subscribers"] if s["name"] == name)


def in_step(doc, name="rec"):
    return doc["healthy"] and all(g is not None for g in doc["groups"].values()) and \
        sub(doc, name)["inStep"]


def listening_ports(pid):
    """TCP ports in LISTEN state held by process `pid` (via /proc)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]$", target)
        if m:
            inodes.add(m.group(1))
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    cols = row.split()
                    if cols[3] == "0A" and cols[9] in inodes:
                        ports.append(int(cols[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            pass
    return ports


# ---------------------------------------------------------------------- tests
class Status(harness.IntegrationTest):

    def agent(self, emu, subscribers=None, status=True, **kw):
        """A daemon with the status endpoint on a free port: (daemon, endpoint)."""
        ep = Endpoint(harness.free_port())
        kw.setdefault("retry", RETRY)
        kw.setdefault("log_level", "info")
        cfg = emu.config(status={"listen": ep.listen, "token": TOKEN} if status else None,
                         subscribers=subscribers, **kw)
        return self.daemon(cfg), ep

    def test_healthz_is_503_until_data_first_arrives_then_200(self):
        emu = self.emulator(start=False, mode="shenyu", hold=2)
        emu.port = harness.free_port()  # the admin is down at start: nothing listens there
        d, ep = self.agent(emu, connect_timeout="1s")

        r = harness.wait_until(lambda: ep.try_get("/healthz"), message="the endpoint")
        self.assertEqual(r[0], 503, r)
        self.assertEqual(r[1].get("Content-Type"), "text/plain; charset=utf-8")
        body = r[2].decode()
        self.assertTrue(body.endswith("\n") and body.count("\n") == 1, body)
        self.assertIn("no data yet for", body)
        doc = ep.status()
        self.assertFalse(doc["healthy"])
        self.assertIn("no data yet", doc["health"])
        self.assertTrue(all(g is None for g in doc["groups"].values()), doc["groups"])
        self.assertEqual(sorted(doc["groups"]), sorted(emu.groups))
        self.assertEqual(ep.metrics().value("gwsync_healthy"), 0)
        self.assertEqual(ep.metrics().value("gwsync_group_held", group="RULE"), 0)

        emu.start()
        harness.wait_until(lambda: (lambda r: r and r[0] == 200 and r)(ep.try_get("/healthz")),
                           timeout=20, message="/healthz 200")
        st, _, body = ep.get("/healthz")
        self.assertEqual((st, body), (200, b"ok\n"))
        doc = ep.status()
        self.assertTrue(doc["healthy"])
        rule = doc["groups"]["RULE"]
        v = emu.group("RULE")
        self.assertEqual(rule["md5"], v["md5"])
        self.assertEqual(rule["lastModifyTime"], v["lastModifyTime"])
        self.assertEqual(rule["items"], v["count"])
        self.assertEqual(rule["source"], emu.url)
        self.assertFalse(rule["fromSnapshot"])
        m = ep.metrics()
        self.assertEqual(m.value("gwsync_healthy"), 1)
        self.assertEqual(m.value("gwsync_group_items", group="RULE"), v["count"])

    def test_the_start_up_fetch_that_delivered_is_the_servers_first_success(self):
        # the poll is held 60 s: only the start-up fetch can have succeeded yet (issue 31,
        # item 12: "no success yet" for up to a minute after it delivered every group)
        emu = self.emulator(mode="shenyu", hold=60)
        d, ep = self.agent(emu)
        doc = ep.wait_status(lambda s: s["healthy"], message="healthy")
        s0 = doc["servers"][0]
        self.assertEqual(s0["polls"], 0, "a poll was answered: the test proves nothing")
        self.assertIsNotNone(s0["lastSuccess"], s0)
        self.assertEqual(s0["consecutiveFailures"], 0)
        out = d.run("--status").stdout
        self.assertIn("polling, last success", out)
        self.assertNotIn("no success yet", out)

    def test_status_follows_a_server_failing_and_recovering(self):
        emu = self.emulator(mode="shenyu", hold=1)
        d, ep = self.agent(emu)
        doc = ep.wait_status(lambda s: s["healthy"] and s["servers"][0]["lastSuccess"]
                             and s["servers"][0]["polls"] >= 1, message="a successful poll")
        s0 = doc["servers"][0]
        self.assertEqual(s0["url"], emu.url)
        self.assertEqual(s0["state"], "polling")
        self.assertEqual(s0["consecutiveFailures"], 0)
        self.assertIsNone(s0["lastError"])
        self.assertGreaterEqual(s0["polls"], 1)

        emu.kill()
        doc = ep.wait_status(lambda s: s["servers"][0]["consecutiveFailures"] >= 2,
                             message="failures counted")
        s0 = doc["servers"][0]
        self.assertIn(s0["state"], ("retrying", "backing_off", "polling"))
        self.assertIn(emu.url, s0["lastError"])
        self.assertIsNotNone(s0["lastErrorAt"])
        self.assertGreaterEqual(s0["errors"]["connect"], 1)
        ep.wait_status(lambda s: s["servers"][0]["state"] == "backing_off",
                       message="a whole round failed")
        m = ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_errors_total", server=emu.url, reason="connect"), 1)
        self.assertGreaterEqual(m.value("gwsync_server_consecutive_failures", server=emu.url), 1)
        # the agent still holds its data: healthy, serving the last good configuration
        self.assertEqual(ep.get("/healthz")[0], 200)
        failed_at = time.time()

        emu.restart()
        doc = ep.wait_status(lambda s: s["servers"][0]["consecutiveFailures"] == 0 and
                             s["servers"][0]["state"] == "polling", timeout=20,
                             message="the server polled again")
        s0 = doc["servers"][0]
        self.assertIsNotNone(s0["lastError"])  # history stays visible
        ep.wait_status(lambda s: s["servers"][0]["secondsSinceSuccess"] is not None and
                       s["servers"][0]["secondsSinceSuccess"] < time.time() - failed_at + 0.5,
                       message="a success after the restart")
        m = ep.metrics()
        self.assertEqual(m.value("gwsync_server_state", server=emu.url, state="polling"), 1)
        self.assertEqual(m.value("gwsync_server_consecutive_failures", server=emu.url), 0)

    def test_status_and_metrics_show_a_failing_subscriber(self):
        emu = self.emulator(mode="shenyu", hold=30)
        tmp = self.tmpdir()
        out, flag = os.path.join(tmp, "rec.txt"), os.path.join(tmp, "fail-now")
        d, ep = self.agent(emu, subscribers=[recorder(out, flag)])
        doc = ep.wait_status(in_step, message="everything delivered")
        s = sub(doc)
        self.assertEqual(s["plugin"], "recorder")
        self.assertEqual(s["failures"], 0)
        old = s["groups"]["RULE"]["md5"]
        self.assertEqual(old, emu.group("RULE")["md5"])
        self.assertIsNotNone(s["groups"]["RULE"]["deliveredAt"])

        open(flag, "w").close()
        v = emu.upsert("RULE", synclog.rule("st-1"))
        doc = ep.wait_status(lambda s: sub(s)["failures"] >= 1, message="a rejected change")
        s = sub(doc)
        self.assertFalse(s["inStep"])
        self.assertIn("told to fail", s["lastError"])
        self.assertTrue(s["lastError"].startswith("RULE: "), s["lastError"])
        r = s["groups"]["RULE"]
        self.assertEqual(r["md5"], old)  # still what it last accepted
        self.assertFalse(r["inStep"])
        self.assertGreaterEqual(r["consecutiveFailures"], 1)
        self.assertTrue(s["groups"]["PLUGIN"]["inStep"])
        self.assertEqual(doc["groups"]["RULE"]["md5"], v["md5"])  # the agent holds the new one
        self.assertTrue(doc["healthy"])
        m = ep.metrics()
        self.assertGreaterEqual(m.value("gwsync_subscriber_apply_failures_total", subscriber="rec"), 1)
        self.assertEqual(m.value("gwsync_subscriber_groups_behind", subscriber="rec"), 1)
        self.assertGreaterEqual(m.value("gwsync_subscriber_consecutive_failures", subscriber="rec"), 1)
        # which group it refuses, without debug logs (issue 20, item 5)
        self.assertGreaterEqual(m.value("gwsync_subscriber_group_apply_failures_total",
                                        subscriber="rec", group="RULE"), 1)
        self.assertEqual(m.value("gwsync_subscriber_group_apply_failures_total",
                                 subscriber="rec", group="PLUGIN"), 0)
        self.assertGreaterEqual(m.value("gwsync_subscriber_group_consecutive_failures",
                                        subscriber="rec", group="RULE"), 1)
        # log wording is the behaviour here: the warning an operator must see
        d.wait_log(r"warn  dispatch: subscriber 'rec' rejected RULE version %s .*told to fail"
                   % v["md5"])

        os.unlink(flag)  # the plugin recovers: the dispatcher's retry brings it in step
        doc = ep.wait_status(lambda s: sub(s)["inStep"], timeout=15, message="back in step")
        self.assertEqual(sub(doc)["groups"]["RULE"]["md5"], v["md5"])
        self.assertEqual(sub(doc)["groups"]["RULE"]["consecutiveFailures"], 0)
        self.assertEqual(ep.metrics().value("gwsync_subscriber_groups_behind", subscriber="rec"), 0)

    def test_snapshot_cold_start_is_healthy_and_shown_as_such(self):
        emu = self.emulator(mode="shenyu", hold=2)
        d, ep = self.agent(emu)
        ep.wait_status(lambda s: s["healthy"], message="data from the admin")
        held = {g: v["md5"] for g, v in ep.status()["groups"].items()}
        harness.wait_until(lambda: all(os.path.exists(os.path.join(d.state_dir, g + ".json"))
                                       for g in emu.groups), message="the snapshot written")
        d.stop()
        emu.stop()

        d.start()  # every admin down: the snapshot bridges the outage
        doc = ep.wait_status(lambda s: s["healthy"], message="healthy from the snapshot")
        self.assertEqual(ep.get("/healthz")[0], 200)
        for g, v in doc["groups"].items():
            self.assertEqual(v["md5"], held[g])
            self.assertEqual(v["source"], "snapshot")
            self.assertTrue(v["fromSnapshot"])
        self.assertEqual(ep.metrics().value("gwsync_group_from_snapshot", group="RULE"), 1)

        emu.flags["seed"] = 2  # the admin comes back with other data (for most groups)
        emu.start()  # an admin answers: its data replaces the snapshot's
        changed = [g for g in emu.groups if emu.group(g)["md5"] != held[g]]
        self.assertIn("RULE", changed)
        doc = ep.wait_status(lambda s: all(not s["groups"][g]["fromSnapshot"] for g in changed),
                             timeout=20, message="the admin's data")
        for g in changed:
            self.assertEqual(doc["groups"][g]["source"], emu.url)
            self.assertEqual(doc["groups"][g]["md5"], emu.group(g)["md5"])
        self.assertEqual(ep.metrics().value("gwsync_group_from_snapshot", group="RULE"), 0)

    def test_snapshot_data_is_confirmed_by_an_admin_serving_the_same_data(self):
        """The snapshot is provisional: an admin's copy replaces it even with the same md5,
        so /status stops saying "snapshot" once an admin has answered."""
        emu = self.emulator(mode="shenyu", hold=2)
        d, ep = self.agent(emu)
        ep.wait_status(lambda s: s["healthy"], message="data from the admin")
        harness.wait_until(lambda: all(os.path.exists(os.path.join(d.state_dir, g + ".json"))
                                       for g in emu.groups), message="the snapshot written")
        d.stop()
        emu.stop()
        d.start()
        ep.wait_status(lambda s: s["healthy"], message="healthy from the snapshot")
        emu.start()  # same seed: the same data (md5), a new lastModifyTime
        doc = ep.wait_status(lambda s: all(not v["fromSnapshot"] for v in s["groups"].values()),
                             timeout=15, message="the admin's confirmation")
        self.assertEqual({v["source"] for v in doc["groups"].values()}, {emu.url})
        self.assertEqual(ep.metrics().value("gwsync_group_from_snapshot", group="PLUGIN"), 0)

    def test_metrics_are_prometheus_text_and_counters_move(self):
        emu = self.emulator(mode="shenyu", hold=30)
        out = os.path.join(self.tmpdir(), "rec.txt")
        d, ep = self.agent(emu, subscribers=[recorder(out)])
        ep.wait_status(in_step, message="everything delivered")
        harness.wait_until(lambda: emu.state()["held"] >= 1, message="a held poll")
        m1 = ep.metrics()
        for fam, typ in (("gwsync_polls_total", "counter"), ("gwsync_changes_total", "counter"),
                         ("gwsync_fetched_bytes_total", "counter"),
                         ("gwsync_errors_total", "counter"),
                         ("gwsync_group_last_update_timestamp_seconds", "gauge"),
                         ("gwsync_group_items", "gauge"),
                         ("gwsync_subscriber_apply_failures_total", "counter"),
                         ("gwsync_change_latency_seconds", "histogram"),
                         ("gwsync_sync_paused", "gauge"), ("gwsync_up", "gauge")):
            self.assertEqual(m1.types.get(fam), typ, fam)
        self.assertEqual(m1.value("gwsync_up"), 1)
        self.assertEqual(m1.value("gwsync_sync_paused"), 0)
        for g in emu.groups:
            v = emu.group(g)
            self.assertEqual(m1.value("gwsync_group_items", group=g), v["count"], g)
            self.assertAlmostEqual(m1.value("gwsync_group_last_update_timestamp_seconds", group=g),
                                   v["lastModifyTime"] / 1000.0, places=3)
        reasons = {dict(labels)["reason"] for labels in m1.series("gwsync_errors_total")}
        self.assertEqual(reasons, {"connect", "timeout", "http", "code", "parse", "fetch",
                                   "too_large", "auth", "session"})

        v = emu.upsert("RULE", synclog.rule("mx-1"))
        ep.wait_status(lambda s: in_step(s) and sub(s)["groups"]["RULE"]["md5"] == v["md5"],
                       message="the change delivered")
        m2 = harness.wait_until(
            lambda: (lambda m: m if m.value("gwsync_change_latency_seconds_count") >
                     m1.value("gwsync_change_latency_seconds_count") else None)(ep.metrics()),
            message="a latency observation")
        url = emu.url
        self.assertGreater(m2.value("gwsync_polls_total", server=url),
                           m1.value("gwsync_polls_total", server=url))
        self.assertGreaterEqual(m2.value("gwsync_changes_total", server=url),
                                m1.value("gwsync_changes_total", server=url) + 1)
        self.assertGreater(m2.value("gwsync_fetches_total", server=url),
                           m1.value("gwsync_fetches_total", server=url))
        self.assertGreater(m2.value("gwsync_fetched_bytes_total", server=url),
                           m1.value("gwsync_fetched_bytes_total", server=url))
        self.assertGreater(m2.value("gwsync_subscriber_applies_total", subscriber="rec"),
                           m1.value("gwsync_subscriber_applies_total", subscriber="rec"))
        self.assertEqual(m2.value("gwsync_group_items", group="RULE"), v["count"])
        self.assertAlmostEqual(m2.value("gwsync_group_last_update_timestamp_seconds", group="RULE"),
                               v["lastModifyTime"] / 1000.0, places=3)
        self.assertGreater(m2.value("gwsync_change_latency_seconds_sum"), 0)
        self.assertEqual(m2.value("gwsync_change_latency_seconds_bucket", le="+Inf"),
                         m2.value("gwsync_change_latency_seconds_count"))

    def test_pause_stores_but_delivers_nothing_and_resume_delivers_the_newest(self):
        emu = self.emulator(mode="shenyu", hold=30)
        out = os.path.join(self.tmpdir(), "rec.txt")
        d, ep = self.agent(emu, subscribers=[recorder(out)])
        doc = ep.wait_status(in_step, message="everything delivered")
        old = sub(doc)["groups"]["RULE"]["md5"]

        st, hdrs, body = ep.post("/sync/pause")
        self.assertEqual(st, 200, body)
        reply = json.loads(body)
        self.assertEqual((reply["paused"], reply["changed"], reply["persisted"]), (True, True, True))
        state_file = os.path.join(d.state_dir, "paused")
        self.assertEqual(reply["stateFile"], state_file)
        self.assertTrue(os.path.exists(state_file))
        self.assertTrue(ep.status()["paused"])
        self.assertEqual(ep.metrics().value("gwsync_sync_paused"), 1)
        # no /status field reports this: who paused (the log is the audit trail)
        d.wait_log(r"pause: sync paused by POST /sync/pause from 127\.0\.0\.1")

        # two changes while paused: polled and stored, not delivered
        n_before = len(applies(out))
        v1 = emu.upsert("RULE", synclog.rule("pz-1"))
        ep.wait_status(lambda s: s["groups"]["RULE"]["md5"] == v1["md5"], message="v1 stored")
        v2 = emu.upsert("RULE", synclog.rule("pz-2"))
        doc = ep.wait_status(lambda s: s["groups"]["RULE"]["md5"] == v2["md5"],
                             message="v2 stored")
        time.sleep(0.5)
        self.assertEqual(len(applies(out)), n_before, applies(out))
        self.assertEqual(sub(ep.status())["groups"]["RULE"]["md5"], old)
        self.assertFalse(sub(doc)["inStep"])
        self.assertEqual(ep.get("/healthz")[0], 200)

        st, _, body = ep.post("/sync/resume")
        self.assertEqual(st, 200, body)
        self.assertEqual(json.loads(body)["changed"], True)
        self.assertFalse(os.path.exists(state_file))
        ep.wait_status(lambda s: sub(s)["groups"]["RULE"]["md5"] == v2["md5"],
                       message="the newest delivered")
        rule_lines = applies(out, "RULE")[len(applies(out, "RULE")) - 1:]
        self.assertTrue(rule_lines[0].startswith("apply RULE md5=%s prev=%s " % (v2["md5"], old)),
                        rule_lines)
        self.assertFalse([l for l in applies(out) if v1["md5"] in l])  # coalesced away
        self.assertEqual(len(applies(out)), n_before + 1)
        self.assertFalse(ep.status()["paused"])
        self.assertEqual(ep.metrics().value("gwsync_sync_paused"), 0)

    def test_pause_survives_a_restart_and_the_cli_switches_it(self):
        emu = self.emulator(mode="shenyu", hold=30)
        out = os.path.join(self.tmpdir(), "rec.txt")
        d, ep = self.agent(emu, subscribers=[recorder(out)])
        ep.wait_status(in_step, message="everything delivered")

        r = d.run("--pause", timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        # through the control socket, not the network
        self.assertRegex(r.stdout, r"^sync paused \(agent at unix:%s"
                         % re.escape(os.path.join(d.state_dir, "control.sock")))
        # no /status field reports this: who paused (the log is the audit trail)
        d.wait_log(r"pause: sync paused by the control socket \(uid \d+, pid \d+\)")
        self.assertTrue(os.path.exists(os.path.join(d.state_dir, "paused")))
        r = d.run("--pause", timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already paused", r.stdout)
        self.assertTrue(ep.status()["paused"])

        d.restart()
        doc = ep.wait_status(lambda s: True, message="the endpoint after the restart")
        self.assertTrue(doc["paused"])
        ep.wait_status(lambda s: s["healthy"], message="data after the restart")
        n_before = len(applies(out))
        v = emu.upsert("RULE", synclog.rule("rs-1"))
        doc = ep.wait_status(lambda s: s["groups"]["RULE"]["md5"] == v["md5"],
                             message="stored while paused")
        time.sleep(0.5)
        # the restarted agent delivered nothing at all: not its start-up data, not the change
        self.assertEqual(len(applies(out)), n_before)
        self.assertTrue(all(g["md5"] is None for g in sub(ep.status())["groups"].values()))
        self.assertEqual(ep.metrics().value("gwsync_sync_paused"), 1)

        r = d.run("--resume", timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sync resumed", r.stdout)
        ep.wait_status(lambda s: in_step(s) and sub(s)["groups"]["RULE"]["md5"] == v["md5"],
                       message="delivered after --resume")
        self.assertFalse(os.path.exists(os.path.join(d.state_dir, "paused")))
        # resuming an agent that is not paused removes nothing and says so (issue 21: it
        # claimed a state file was removed)
        r = d.run("--resume", timeout=20)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^sync was not paused: nothing to resume \(agent at unix:")
        self.assertNotIn("removed", r.stdout)
        # one change per group, each from nothing (a fresh process) to the newest
        fresh = applies(out)[n_before:]
        self.assertEqual(len(fresh), len(emu.groups), fresh)
        self.assertTrue(all(" prev=- " in l for l in fresh), fresh)
        self.assertFalse(ep.status()["paused"])

    def test_pause_needs_no_access_to_the_admin_secrets(self):
        # An operator in the agent's group may use the control socket without being able
        # to read the admin password: --pause reads only state_dir, control_socket and
        # status (a regression: it used to load, and so need, the whole configuration).
        emu = self.emulator(mode="shenyu", hold=30)
        ep = Endpoint(harness.free_port())
        secret = os.path.join(self.tmpdir(), "admin-password")
        with open(secret, "w") as f:
            f.write(emu.password)
        d = self.daemon(emu.config(status={"listen": ep.listen}, password=None,
                                   password_file=secret, log_level="info"))
        ep.wait_status(lambda s: s["healthy"], message="synced")
        os.unlink(secret)  # what the operator cannot read
        full = d.run("--check")
        self.assertNotEqual(full.returncode, 0, "the full configuration needs the password")
        for flag, word in (("--pause", "paused"), ("--resume", "resumed")):
            r = d.run(flag, timeout=20)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("sync " + word, r.stdout)

    def test_a_deep_state_dir_starts_and_the_cli_finds_its_control_socket(self):
        # issue 20, item 8: STATE_DIR/control.sock longer than a Unix socket's address (a
        # deep container volume) used to stop the agent at start (exit 2). The socket is
        # reached through its directory; the CLI finds it by the same rule.
        emu = self.emulator(mode="shenyu", hold=30)
        deep = os.path.join(self.tmpdir(), *("kubelet-pods-fedcba9876543210-volume-%d" % i
                                             for i in range(6)), "state")
        self.assertGreater(len(os.path.join(deep, "control.sock")), 200)
        d = self.daemon(emu.config(state_dir=deep))
        # the harness asks /status over that control socket (through its directory)
        d.wait_status(harness.holds("RULE"), "RULE held, asked over the deep control socket")
        self.assertTrue(d.alive())
        for flag, word in (("--pause", "paused"), ("--resume", "resumed")):
            r = d.run(flag, timeout=20)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("sync %s (agent at unix:%s" % (word, os.path.join(deep, "control.sock")),
                          r.stdout)
        # no /status field reports this: who paused (the log is the audit trail)
        d.wait_log(r"pause: sync paused by the control socket")

    def test_pause_cli_fails_without_an_agent_or_endpoint(self):
        emu = self.emulator(mode="shenyu", hold=2)
        port = harness.free_port()
        d = self.daemon(emu.config(status={"listen": "127.0.0.1:%d" % port}), start=False)
        sock = os.path.join(d.state_dir, "control.sock")
        for flag in ("--pause", "--resume"):
            r = d.run(flag, timeout=30)
            self.assertEqual(r.returncode, 1, (flag, r.stdout, r.stderr))
            self.assertIn("no agent answered at %s" % sock, r.stderr)
        self.assertIn(os.path.join(d.state_dir, "paused"), d.run("--pause").stderr)
        self.assertFalse(os.path.exists(os.path.join(d.state_dir, "paused")))

        # no control socket and no endpoint: nothing to ask
        d2 = self.daemon(emu.config(extra={"control_socket": ""}), start=False)
        r = d2.run("--pause", timeout=30)
        self.assertEqual(r.returncode, 1, (r.stdout, r.stderr))
        self.assertIn("status.listen is not set", r.stderr)

    def test_once_while_paused_stores_but_delivers_nothing(self):
        emu = self.emulator(mode="shenyu", hold=2)
        out = os.path.join(self.tmpdir(), "rec.txt")
        d = self.daemon(emu.config(subscribers=[recorder(out)], log_level="info"), start=False)
        os.makedirs(d.state_dir, exist_ok=True)
        with open(os.path.join(d.state_dir, "paused"), "w") as f:
            f.write("paused by a test\n")
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"(?i)paused")
        self.assertEqual(applies(out), [])
        for g in emu.groups:  # fetched and stored
            self.assertTrue(os.path.exists(os.path.join(d.state_dir, g + ".json")), g)
        os.unlink(os.path.join(d.state_dir, "paused"))
        r = d.run_once()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(applies(out)), len(emu.groups))

    def test_binds_only_where_configured_and_refuses_other_routes(self):
        emu = self.emulator(mode="shenyu", hold=2)
        d, ep = self.agent(emu)
        harness.wait_until(lambda: ep.try_get("/healthz"), message="the endpoint")
        self.assertEqual(listening_ports(d.pid), [ep.port])
        # the same port on another loopback address: nothing there
        other = Endpoint(ep.port, host="127.0.0.2")
        self.assertIsNone(other.try_get("/healthz"))

        for method, path, want in (("GET", "/index.html", 404), ("GET", "/nope", 404),
                                   ("GET", "/status/x", 404), ("GET", "/healthz/", 404),
                                   ("POST", "/sync", 404), ("DELETE", "/nope", 404),
                                   ("POST", "/status", 405), ("PUT", "/healthz", 405),
                                   ("DELETE", "/metrics", 405), ("GET", "/sync/pause", 405),
                                   ("PUT", "/sync/resume", 405), ("HEAD", "/status", 200)):
            st, hdrs, _ = ep.request(method, path, body=b"" if method in ("POST", "PUT") else None)
            self.assertEqual(st, want, (method, path))
            if want == 405:
                self.assertIn(hdrs.get("Allow"), ("GET, HEAD", "POST"), (method, path))
        # an exposed listener is read-only to anyone without the token
        for token in (None, "wrong-token-0123456789abcdef", TOKEN[:-1], TOKEN + "x"):
            st, hdrs, body = ep.post("/sync/pause", token=token)
            self.assertEqual(st, 401, (token, body))
            self.assertEqual(hdrs.get("WWW-Authenticate"), 'Bearer realm="gwsync"')
        self.assertFalse(ep.status()["paused"])
        # a web page (a request with an Origin header) cannot pause the agent
        st, _, _ = ep.post("/sync/pause", headers={"Origin": "http://example.com"})
        self.assertEqual(st, 403)
        self.assertFalse(ep.status()["paused"])
        self.assertFalse(os.path.exists(os.path.join(d.state_dir, "paused")))

        # a second agent configured on the same address refuses to start, naming it
        d2 = self.daemon(emu.config(status={"listen": ep.listen}, state_dir=self.tmpdir()))
        self.assertEqual(d2.wait_exit(20), 1)
        self.assertIn("status.listen %s" % ep.listen, d2.text())

        # no status section: no listening socket at all
        d3 = self.daemon(emu.config(log_level="info"))
        d3.wait_status(harness.holds("RULE"), "RULE held (asked over the control socket)")
        self.assertEqual(listening_ports(d3.pid), [])

    def test_systemd_notify_ready_watchdog_and_stopping(self):
        emu = self.emulator(start=False, mode="shenyu", hold=2)
        emu.port = harness.free_port()
        tmp = self.tmpdir()
        path = os.path.join(tmp, "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(sock.close)
        sock.bind(path)
        out = os.path.join(tmp, "rec.txt")
        ep = Endpoint(harness.free_port())
        cfg = emu.config(status={"listen": ep.listen}, retry=RETRY, connect_timeout="1s",
                         subscribers=[recorder(out)], log_level="info")
        d = self.daemon(cfg, env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "300000"})

        def collect(seconds):
            got = []
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    got.append(sock.recv(4096).decode())
                except socket.timeout:
                    break
            return got

        early = collect(1.5)  # the admin is down: alive, not ready
        self.assertFalse([m for m in early if "READY=1" in m], early)
        self.assertGreaterEqual(len([m for m in early if "WATCHDOG=1" in m]), 3, early)
        self.assertTrue([m for m in early if "STATUS=waiting for data" in m], early)

        emu.start()
        ready = []
        deadline = time.monotonic() + 20
        while not [m for m in ready if "READY=1" in m] and time.monotonic() < deadline:
            ready += collect(0.5)
        self.assertTrue([m for m in ready if "READY=1" in m], ready)
        # ready means delivered: the subscriber holds every group by then
        self.assertEqual(len(applies(out)), len(emu.groups))
        later = collect(1.0)
        self.assertGreaterEqual(len([m for m in later if "WATCHDOG=1" in m]), 4, later)
        self.assertFalse([m for m in later if "READY=1" in m])  # once only

        d.send_signal(signal.SIGTERM)
        self.assertEqual(d.wait_exit(10), 0)
        self.assertTrue([m for m in collect(0.5) + later if "STOPPING=1" in m])

    def test_json_logs_and_sighup_reopens_the_log_file(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        log_path = os.path.join(tmp, "gwsync.log")
        d = self.daemon(emu.config(log={"format": "json", "file": log_path}, log_level="info"))

        def lines(path):
            try:
                with open(path, encoding="utf-8") as f:
                    return [json.loads(l) for l in f]  # each line one JSON object
            except FileNotFoundError:
                return []

        harness.wait_until(lambda: any(l["msg"].startswith("accepted RULE") for l in lines(log_path)),
                           message="the log file")
        for l in lines(log_path):
            self.assertEqual(set(l), {"time", "level", "component", "msg"})
            self.assertIn(l["level"], ("error", "warn", "info", "debug"))
        self.assertEqual(d.lines("stderr"), [])

        os.rename(log_path, log_path + ".1")  # what logrotate does
        d.send_signal(signal.SIGHUP)
        harness.wait_until(lambda: any("SIGHUP" in l["msg"] for l in lines(log_path)),
                           message="a new log file")
        self.assertTrue(d.alive())
        n_old = len(lines(log_path + ".1"))
        v = emu.upsert("RULE", synclog.rule("lg-1"))
        harness.wait_until(lambda: any(v["md5"] in l["msg"] for l in lines(log_path)),
                           message="the change logged to the new file")
        self.assertEqual(len(lines(log_path + ".1")), n_old)

    def test_systemd_unit_is_valid(self):
        unit = os.path.join(harness.BUILDDIR, "etc", "gwsync.service")
        if not os.path.exists(unit):
            self.skipTest("etc/gwsync.service not built")
        with open(unit) as f:
            text = f.read()
        self.assertNotIn("@", text.replace("@system-service", "").replace("@privileged", ""))
        for line in ("Type=notify", "Restart=on-failure", "StateDirectory=gwsync",
                     "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
                     "PrivateTmp=yes"):
            self.assertIn("\n" + line + "\n", text)
        self.assertRegex(text, r"\nWatchdogSec=\d+s\n")
        m = re.search(r"\nExecStart=(/\S+/gwsyncd) -c (/\S+/gwsync\.yaml)\n", text)
        self.assertTrue(m, text)
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed")
        tmp = self.tmpdir()
        check = os.path.join(tmp, "gwsync.service")
        with open(check, "w") as f:  # verify against the built binary, not the install path
            f.write(text.replace(m.group(1), harness.GWSYNCD or "/bin/true"))
        # Documentation=man:... is checked with man(1): the pages of this build, laid out
        # as they install
        mandir = os.path.join(tmp, "man")
        for page in glob.glob(os.path.join(harness.BUILDDIR, "man", "*.[1-8]")):
            section = os.path.join(mandir, "man" + page.rsplit(".", 1)[1])
            os.makedirs(section, exist_ok=True)
            shutil.copy(page, section)
        r = subprocess.run(["systemd-analyze", "verify", check], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60,
                           env=dict(os.environ, MANPATH=mandir))
        problems = [l for l in r.stdout.splitlines() if "gwsync.service" in l]
        self.assertEqual(problems, [], r.stdout)


if __name__ == "__main__":
    harness.main()
