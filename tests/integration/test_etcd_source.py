"""The etcd source against a real etcd (Debian's etcd-server, 3.4) on free ports.

Items are written the way ShenYu's admin writes them: one key per item under
/{namespace}/shenyu/{group dir}/..., the item's Gson JSON as the value, through etcd's v3
JSON gateway (base64 keys and values). The agent (the file subscriber) must show exactly
what etcd holds: at start-up, after a change, after a delete, after the watch has fallen
behind a compaction (it must read everything again at a fresh revision), and it must exit
within a second of SIGTERM.
"""
import base64
import json
import os
import shutil
import ssl
import re
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import groupfiles
import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kv"))
import proxy  # noqa: E402

ETCD = shutil.which("etcd") or "/usr/bin/etcd"
NS = "649330b6-c2d7-4edc-be8e-8a54df9eb385"
ROOT = "/%s/shenyu" % NS
GROUPS = ["PLUGIN", "SELECTOR", "RULE"]


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class Etcd:
    """One etcd member on free ports with a temporary data dir; removed on close().
    A member of a cluster gets its name and the cluster's peer list from Cluster."""

    def __init__(self, tmp, name="m0", tls=None):
        self.dir = tmp
        self.name = name
        self.tls = tls       # {"ca", "cert", "key"} (harness.make_test_ca): clients use https
        self.cluster = None  # "m0=http://..,m1=http://..": set for a member of a cluster
        self.token = None    # the Authorization token once auth is enabled
        self.extra_args = []  # more etcd flags for the next start()
        scheme = "https" if tls else "http"
        self.public_url = "%s://127.0.0.1:%d" % (scheme, harness.free_port())
        self.hidden_url = "%s://127.0.0.1:%d" % (scheme, harness.free_port())
        self.peer_port = harness.free_port()
        self.url = self.public_url  # where it listens now
        self.proc = None

    def start(self, hidden=False):
        """hidden: listen on a port no agent knows, so the test can change etcd while
        every agent is cut off from it."""
        self.url = self.hidden_url if hidden else self.public_url
        peer = "http://127.0.0.1:%d" % self.peer_port
        self.log = open(os.path.join(self.dir, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            [ETCD, "--name", self.name, "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", self.cluster or "%s=%s" % (self.name, peer),
             "--initial-cluster-token", "gwsync-test"] +
            (["--cert-file", self.tls["cert"], "--key-file", self.tls["key"]]
             if self.tls else []) + self.extra_args,
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if not self.cluster:
            self.wait_up()
        return self

    @property
    def peer_url(self):
        return "http://127.0.0.1:%d" % self.peer_port

    def wait_up(self):
        harness.wait_until(self._up, timeout=30, message="etcd answering on " + self.url)

    def _up(self):
        try:
            self.call("/v3/kv/range", {"key": b64("/")})
            return True
        except urllib.error.HTTPError as e:
            return e.code in (400, 401)  # auth enabled: it answers
        except OSError:
            return False

    def close(self):
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None
            self.log.close()

    def call(self, path, body):
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = self.token
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers=headers)
        ctx = ssl.create_default_context(cafile=self.tls["ca"]) if self.tls else None
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return json.loads(r.read().decode("utf-8"))

    def put(self, key, item):
        """Write one item as the admin does (Gson-like compact JSON); the new revision."""
        value = json.dumps(item, separators=(",", ":"))
        return int(self.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})
                   ["header"]["revision"])

    def delete(self, key):
        return int(self.call("/v3/kv/deleterange", {"key": b64(key)})["header"]["revision"])

    def compact(self, revision):
        self.call("/v3/kv/compaction", {"revision": str(revision), "physical": True})

    def revision(self):
        return int(self.call("/v3/kv/range", {"key": b64("/")})["header"]["revision"])

    def enable_auth(self, password):
        """A root user with `password`, auth on; this client keeps working with a token."""
        self.call("/v3/auth/user/add", {"name": "root", "password": password})
        try:
            self.call("/v3/auth/role/add", {"name": "root"})
        except urllib.error.HTTPError:
            pass  # it exists already
        self.call("/v3/auth/user/grant", {"user": "root", "role": "root"})
        self.call("/v3/auth/enable", {})
        self.token = self.call("/v3/auth/authenticate",
                               {"name": "root", "password": password})["token"]


class Cluster:
    """Three etcd members (m0, m1, m2) on free ports."""

    def __init__(self, tmpdirs):
        self.members = [Etcd(t, "m%d" % i) for i, t in enumerate(tmpdirs)]
        spec = ",".join("%s=%s" % (m.name, m.peer_url) for m in self.members)
        for m in self.members:
            m.cluster = spec

    def start(self):
        for m in self.members:
            m.start()
        for m in self.members:
            m.wait_up()
        return self

    def close(self):
        for m in self.members:
            m.close()

    def leader(self):
        """The index of the leader, as the members report it."""
        for i, m in enumerate(self.members):
            if m.proc is None:
                continue
            st = m.call("/v3/maintenance/status", {})
            if st.get("leader") == st["header"].get("member_id"):
                return i
        return None


def plugin(name, pid, enabled=True):
    return {"id": pid, "name": name, "enabled": enabled, "sort": 10, "namespaceId": NS,
            "config": "{\"multiSelectorHandle\":\"1\"}", "pluginJar": ""}


def selector(sid, plugin_name, name):
    return {"id": sid, "pluginId": "5", "pluginName": plugin_name, "name": name,
            "matchMode": 0, "type": 1, "sort": 1, "enabled": True, "logged": False,
            "continued": True, "handle": "[{\"upstreamUrl\":\"127.0.0.1:8080\"}]",
            "conditionList": [{"paramType": "uri", "operator": "\u003d",
                               "paramName": "/", "paramValue": "/http/" + name}],
            "namespaceId": NS}


def rule(rid, sid, plugin_name):
    return {"id": rid, "name": "/http/" + rid, "pluginName": plugin_name, "selectorId": sid,
            "matchMode": 0, "sort": 1, "enabled": True, "loged": True,
            "handle": "{\"loadBalance\":\"random\"}", "namespaceId": NS,
            "conditionDataList": [{"paramType": "uri", "operator": "match",
                                   "paramName": "/", "paramValue": "/http/" + rid}]}


def etcd_config(endpoints, files, **kw):
    """An agent on etcd with the file subscriber writing into `files`."""
    etcd = {"endpoints": list(endpoints), "groups": GROUPS, "settle": "50ms",
            "retry": {"attempts": 2, "interval": "100ms", "backoff": "500ms",
                      "startup_backoff": "200ms"}}
    etcd.update(kw.pop("etcd", {}))
    doc = {"etcd": etcd, "state_dir": "@TMP@/state", "log": {"level": kw.pop("log_level",
                                                                             "debug")},
           "subscribers": [groupfiles.file_subscriber(files)]}
    doc.update(kw)
    return harness.to_yaml(doc)


def status_of(port):
    """The first (only) connection of the agent's /status."""
    _, _, body = harness.http_request("GET", "http://127.0.0.1:%d/status" % port, timeout=5)
    return json.loads(body.decode("utf-8"))["servers"][0]


def status_when(port, predicate):
    """status_of(port) once predicate holds of it, else None (for harness.wait_until)."""
    st = status_of(port)
    return st if predicate(st) else None


class EtcdSourceTest(harness.IntegrationTest):
    def setUp(self):
        super().setUp()
        if not os.access(ETCD, os.X_OK):
            self.skipTest("etcd is not installed (apt install etcd-server)")
        self.etcd = Etcd(self.tmpdir()).start()
        self.addCleanup(self.etcd.close)
        self.held = {g: {} for g in GROUPS}  # what etcd holds: group -> key -> item

    def put(self, group, key, path, item):
        self.held[group][key] = item
        return self.etcd.put(ROOT + path, item)

    def delete(self, group, key, path):
        del self.held[group][key]
        return self.etcd.delete(ROOT + path)

    def wait_files(self, files, timeout=20.0):
        """Every group's file holds exactly what etcd holds (any order)."""
        def same():
            for g in GROUPS:
                doc = groupfiles.read(files, g)
                if doc is None:
                    return False
                got = {json.dumps(i, sort_keys=True) for i in doc["data"]}
                want = {json.dumps(i, sort_keys=True) for i in self.held[g].values()}
                if got != want:
                    return False
            return True
        harness.wait_until(same, timeout=timeout, message="the files equal etcd's items")

    def seed(self):
        self.put("PLUGIN", "divide", "/plugin/divide", plugin("divide", "5"))
        self.put("PLUGIN", "sign", "/plugin/sign", plugin("sign", "6", enabled=False))
        self.put("SELECTOR", "100", "/selector/divide/100", selector("100", "divide", "s1"))
        self.put("SELECTOR", "101", "/selector/divide/101", selector("101", "divide", "s2"))
        self.put("RULE", "200", "/rule/divide/100-200", rule("200", "100", "divide"))
        # a key outside the configured groups and one outside the root: never delivered
        self.etcd.put(ROOT + "/auth/app1", {"appKey": "app1", "appSecret": "x"})
        self.etcd.put("/other/shenyu/plugin/x", plugin("x", "9"))

    def test_startup_change_delete_and_recovery_after_compaction(self):
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))

        # one change and one delete, through the watch
        self.put("RULE", "201", "/rule/divide/101-201", rule("201", "101", "divide"))
        changed = selector("100", "divide", "s1-moved")
        self.put("SELECTOR", "100", "/selector/divide/100", changed)
        self.delete("PLUGIN", "sign", "/plugin/sign")
        self.wait_files(files)
        d.wait_status(harness.holds("PLUGIN", items=len(self.held["PLUGIN"])))

        # the agent is stopped; meanwhile etcd changes and compacts past its revision
        rc, _ = d.stop()
        self.assertEqual(rc, 0)
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.delete("RULE", "200", "/rule/divide/100-200")
        self.etcd.compact(self.etcd.revision())
        d.start()
        # the snapshot or the start-up read: either way the files end equal to etcd
        self.wait_files(files)

    def test_watch_behind_a_compaction_reads_everything_again(self):
        """A watch resumed from a revision that was compacted meanwhile is cancelled with
        compact_revision; the agent counts a session failure, reads everything at a fresh
        revision and watches again, missing nothing."""
        self.seed()
        files = self.tmpdir()
        port = harness.free_port()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    status={"listen": "127.0.0.1:%d" % port}))
        self.wait_files(files)
        st = harness.wait_until(lambda: status_when(port, lambda c: c["watches"] == 1),
                                timeout=10, message="/status: watching")
        self.assertEqual(st["state"], "connected")
        self.assertEqual(st["session"], self.etcd.public_url)
        self.assertEqual(st["watches"], 1)
        self.assertEqual(st["revision"], self.etcd.revision())
        self.assertEqual(st["errors"]["session"], 0)
        # etcd restarts where the agent cannot reach it, changes and compacts, then comes
        # back: the agent's resumed watch starts below the compaction
        self.etcd.close()
        harness.wait_until(lambda: status_of(port)["errors"]["connect"] >= 1, timeout=20,
                           message="/status: the lost watch counted as a connect failure")
        self.etcd.start(hidden=True)
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.delete("SELECTOR", "101", "/selector/divide/101")
        self.etcd.compact(self.etcd.revision())
        self.etcd.close()
        self.etcd.start()
        self.wait_files(files, timeout=30)
        harness.wait_until(lambda: status_of(port)["errors"]["session"] >= 1, timeout=20,
                           message="/status: the compacted watch counted as a session failure")
        # no /status field reports this: the read that recovers a compacted watch
        d.wait_log(r"etcd: endpoint .*: recovery read of %s/" % ROOT, since=0)
        # and the watch works after the recovery
        rev = self.put("RULE", "202", "/rule/divide/100-202", rule("202", "100", "divide"))
        self.wait_files(files)
        harness.wait_until(lambda: status_of(port)["revision"] == rev, timeout=10,
                           message="/status at revision %d" % rev)
        st = status_of(port)
        self.assertEqual(st["errors"]["session"], 1)
        self.assertGreaterEqual(st["errors"]["connect"], 1)
        self.assertEqual(st["watches"], 1)
        self.assertIn("compacted", st["lastError"])

    def test_a_watch_that_ended_resumes_from_its_revision_without_a_full_read(self):
        """Changes made while etcd was out of the agent's reach, not compacted: the
        resumed watch (from the last revision seen + 1) brings them; nothing is read
        again."""
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))
        time.sleep(1.2)  # a watch that ran at least a second is resumed at once
        self.etcd.close()
        # no /status field reports this: the revision a watch resumes from
        m = d.wait_log(r"etcd: endpoint .*: watch of .*; resuming the watch from revision "
                       r"(\d+)", timeout=20)
        self.etcd.start(hidden=True)
        first = self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.assertEqual(int(m.group(1)), first)
        self.delete("RULE", "200", "/rule/divide/100-200")
        self.etcd.close()
        self.etcd.start()
        self.wait_files(files, timeout=30)
        # no /status field reports this: the revision a watch starts from
        d.wait_log(r"etcd: endpoint .*: watching .* from revision %d" % first)
        self.assertNotRegex(d.text(), r"recovery read|resync read")

    def test_a_dead_first_endpoint_moves_on_to_the_next(self):
        self.seed()
        files = self.tmpdir()
        dead = "http://127.0.0.1:%d" % harness.free_port()
        d = self.daemon(etcd_config([dead, self.etcd.public_url], files))
        self.wait_files(files)
        doc = d.wait_status(harness.watching(self.etcd.public_url))
        self.assertGreaterEqual(harness.connection(doc, None)["errors"]["connect"], 1, doc)
        self.assertIn(dead, harness.connection(doc, None)["lastError"])
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.wait_files(files)

    def test_a_member_that_never_answers_the_watch_is_left_for_the_next(self):
        """A member that takes the watch request and never answers it (a frozen process:
        its kernel still accepts and acknowledges) holds the agent for connect_timeout at
        most: then the next endpoint's watch brings the changes."""
        class SilentWatch:
            """Per connection: once the agent has sent a watch request, nothing of the
            answer reaches it (ranges, on their own connection, pass)."""
            def __init__(self):
                self.watch = False

            def up(self, data):
                self.watch = self.watch or b"/v3/watch" in data
                return data

            def down(self, data):
                return b"" if self.watch else data

        port = int(self.etcd.public_url.rsplit(":", 1)[1])
        frozen = proxy.Proxy(port, make_filter=SilentWatch)
        self.addCleanup(frozen.close)
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([frozen.url, self.etcd.public_url], files,
                                    etcd={"connect_timeout": "1s"}))
        self.wait_files(files)
        doc = d.wait_status(harness.watching(self.etcd.public_url), timeout=10)
        self.assertGreaterEqual(harness.connection(doc, None)["errors"]["timeout"], 1, doc)
        self.assertIn("endpoint %s: watch of %s/: not created within 1000 ms"
                      % (frozen.url, ROOT), harness.connection(doc, None)["lastError"])
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.wait_files(files)

    def test_auth_with_a_token_and_the_password_never_logged(self):
        password = "s3cret-Pa55word-etcd"
        self.seed()
        self.etcd.enable_auth(password)
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"username": "root", "password": password}))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))
        self.put("SELECTOR", "102", "/selector/divide/102", selector("102", "divide", "s3"))
        self.wait_files(files)
        self.assertNotIn(password, d.text())
        self.assertNotIn(self.etcd.token, d.text())

    def invalidate_tokens(self, password):
        """Auth off and on again: etcd forgets every token it gave out."""
        self.etcd.call("/v3/auth/disable", {})
        self.etcd.token = None
        self.etcd.call("/v3/auth/enable", {})
        self.etcd.token = self.etcd.call("/v3/auth/authenticate",
                                         {"name": "root", "password": password})["token"]

    def test_a_watch_refused_for_its_token_authenticates_again(self):
        password = "renew-Pa55"
        self.seed()
        self.etcd.enable_auth(password)
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"username": "root", "password": password}))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))
        # the running watch keeps going; the one resumed after a restart meets the
        # forgotten token
        self.invalidate_tokens(password)
        self.etcd.close()
        self.etcd.start()
        # no /status field reports this: a token renewed is no failure
        d.wait_log(r"etcd: endpoint .*: watch of .* cancelled: .*invalid auth token "
                   r"\[auth\]; authenticating again", timeout=20)
        d.wait_status(harness.watching(self.etcd.public_url))
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.wait_files(files)
        self.assertNotIn(password, d.text())

    def test_a_range_refused_for_its_token_authenticates_again(self):
        password = "renew-Pa55"
        self.seed()
        self.etcd.enable_auth(password)
        files = self.tmpdir()
        port = harness.free_port()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"username": "root", "password": password,
                                          "resync_interval": "1s"},
                                    status={"listen": "127.0.0.1:%d" % port}))
        self.wait_files(files)
        # no /status field reports this: that a resync ran
        d.wait_log(r"etcd: endpoint .*: resync read of ")
        mark = d.mark()
        self.invalidate_tokens(password)
        # no /status field reports this: a token renewed is no failure
        d.wait_log(r"etcd: endpoint .*: range of .*: HTTP 401: etcdserver: invalid auth "
                   r"token; authenticating again", since=mark, timeout=10)
        # no /status field reports this: that a resync ran, and what it found
        m = d.wait_log(r"etcd: endpoint .*: resync read of .* (\d+) new", since=mark)
        self.assertEqual(m.group(1), "0")
        self.assertEqual(status_of(port)["errors"]["auth"], 0)
        self.assertNotIn(password, d.text())

    def test_a_wrong_password_is_an_auth_failure_that_names_the_user_only(self):
        password = "the-right-one"
        self.seed()
        self.etcd.enable_auth(password)
        files = self.tmpdir()
        port = harness.free_port()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"username": "root", "password": "wrong-Pa55"},
                                    status={"listen": "127.0.0.1:%d" % port}))
        # log wording is the behaviour here: the failure names the user, not the password
        d.wait_log(r"etcd: endpoint .*: authenticate as root refused: HTTP 400: .*"
                   r"authentication failed.*\[auth\]")
        harness.wait_until(lambda: status_of(port)["errors"]["auth"] >= 2, timeout=10)
        self.assertNotIn("wrong-Pa55", d.text())
        self.assertEqual(groupfiles.read(files, "PLUGIN"), None)

    def test_resync_finds_nothing_to_repair_while_in_step(self):
        self.seed()
        files = self.tmpdir()
        port = harness.free_port()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"resync_interval": "1s"},
                                    status={"listen": "127.0.0.1:%d" % port}))
        self.wait_files(files)
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        # no /status field reports this: that a resync ran, and what it found
        d.wait_log(r"etcd: endpoint .*: resync read of .*: 6 key\(s\) at revision \d+, "
                   r"0 new version", timeout=10)
        self.assertEqual(status_of(port)["repairs"], 0)
        self.wait_files(files)

    def test_the_source_thread_sleeps_while_nothing_changes(self):
        """Idle means asleep: with no change and no resync, etcd-0 never wakes."""
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"resync_interval": "0", "connect_timeout": "1s"}))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))
        # libcurl's own one-shot timers of a new connection (happy eyeballs at 200 ms, the
        # connect timeout) fire once after it connected; the measurement starts after them
        time.sleep(1.5)

        def wakeups():
            for task in os.listdir("/proc/%d/task" % d.pid):
                with open("/proc/%d/task/%s/comm" % (d.pid, task)) as f:
                    if f.read().strip() != "etcd-0":
                        continue
                with open("/proc/%d/task/%s/status" % (d.pid, task)) as f:
                    return sum(int(l.split()[1]) for l in f if "ctxt_switches" in l)
            raise AssertionError("no etcd-0 thread")
        before = wakeups()
        time.sleep(2)  # the measurement is a stretch of time with nothing in it
        self.assertEqual(wakeups(), before)

    def test_sigterm_exits_within_a_second(self):
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files))
        self.wait_files(files)
        d.wait_status(harness.watching(self.etcd.public_url))
        rc, elapsed = d.stop()
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)


class FakeGateway:
    """Just enough of etcd's JSON gateway for what a real etcd will not do on demand: every
    range answers an empty store, at revision 5 before the first watch and 20 after it; the
    first watch is
    created, then sends one answer bigger than the agent's 64 MiB cap, as a watch resumed
    far behind can (etcd batches up to 1000 revisions into one answer); later watches are
    created and stay quiet."""

    BIG = 65 << 20

    def __init__(self, refuse_token_after_create=False):
        """refuse_token_after_create: instead, every watch is created and then ended by
        an UNAUTHENTICATED error (what a token refused only once the watch runs looks
        like); /v3/auth/authenticate gives a token every time (and is counted)."""
        import http.server
        import threading
        gw = self
        self.ranges = []  # the revision each range asked for ("" for the newest)
        self.watches = []  # each watch's start_revision
        self.authenticates = 0
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/v3/auth/authenticate":
                    with gw.lock:
                        gw.authenticates += 1
                    reply = json.dumps({"header": {"revision": "5"}, "token": "tok"}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                    return
                if self.path == "/v3/kv/range":
                    with gw.lock:
                        gw.ranges.append(body.get("revision", ""))
                        rev = "5" if len(gw.watches) == 0 else "20"
                    reply = json.dumps({"header": {"revision": rev}}).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply)
                    return
                with gw.lock:
                    gw.watches.append(body["create_request"].get("start_revision"))
                    first = len(gw.watches) == 1
                self.send_response(200)
                self.end_headers()
                try:
                    self.wfile.write(b'{"result":{"header":{"revision":"5"},"created":true}}\n')
                    self.wfile.flush()
                    if refuse_token_after_create:
                        self.wfile.write(b'{"error":{"grpc_code":16,"http_code":401,'
                                         b'"message":"etcdserver: invalid auth token"}}\n')
                        return
                    if first:
                        self.wfile.write(b'{"result":{"header":{"revision":"9"},"x":"')
                        chunk = b"A" * (1 << 20)
                        for _ in range(gw.BIG >> 20):
                            self.wfile.write(chunk)
                        self.wfile.write(b'"}}\n')
                        self.wfile.flush()
                    while not gw.closing:
                        time.sleep(0.05)
                except OSError:
                    pass

        self.closing = False
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.closing = True
        self.server.shutdown()
        self.server.server_close()


class EtcdFakeGatewayTest(harness.IntegrationTest):
    def test_a_watch_answer_over_the_cap_is_followed_by_a_fresh_read(self):
        """An answer over the size cap would come again at every resume of the same
        watch: the agent reads everything at a fresh revision and watches from there."""
        gw = FakeGateway()
        self.addCleanup(gw.close)
        files = self.tmpdir()
        d = self.daemon(etcd_config([gw.url], files))
        # the answer refused, then a read at a fresh revision (20) and a watch again
        doc = d.wait_status(harness.all_of(
            harness.only_conn(lambda c: c["errors"]["too_large"] >= 1, "an answer refused"),
            harness.only_conn(lambda c: c["revision"] == 20, "at revision 20"),
            harness.watching(gw.url)), timeout=30)
        self.assertIn("watch of %s/: watch stream: an answer larger than 67108864 bytes" % ROOT,
                      harness.connection(doc, None)["lastError"])
        harness.wait_until(lambda: len(gw.watches) >= 2, timeout=10, message="a second watch")
        with gw.lock:
            self.assertEqual(gw.watches[:2], ["6", "21"])

    def test_a_watch_refused_for_its_token_after_creation_follows_the_retry_rules(self):
        """A token refused by a watch that was created is renewed once; when the new
        token is refused the same way, that is a failed try on the retry schedule, not
        an endless loop of authenticate and watch."""
        gw = FakeGateway(refuse_token_after_create=True)
        self.addCleanup(gw.close)
        files = self.tmpdir()
        d = self.daemon(etcd_config([gw.url], files, etcd={
            "username": "root", "password": "pw",
            "retry": {"attempts": 2, "interval": "300ms", "backoff": "1s",
                      "startup_backoff": "1s"}}))
        # no /status field reports this: a token renewed once is no failure
        d.wait_log(r"etcd: .*invalid auth token \[auth\]; authenticating again")
        # the renewed token refused too: a failed try
        doc = d.wait_status(harness.only_conn(lambda c: c["errors"]["auth"] >= 1 and
                                              c["consecutiveFailures"] >= 1, "a failed try"))
        self.assertIn("invalid auth token", harness.connection(doc, None)["lastError"])
        time.sleep(1.5)  # a rate: what the thread does in a stretch of time
        with gw.lock:
            self.assertLess(gw.authenticates, 15)
            self.assertLess(len(gw.watches), 15)
            # and each try after that starts with a new token, not the refused one
            self.assertGreaterEqual(gw.authenticates, len(gw.watches) - 1)


class EtcdTlsTest(harness.IntegrationTest):
    """https:// endpoints: the start-up range and the watch stream both verify etcd's
    certificate with etcd.tls.ca_file; the wrong CA is a connect failure naming the
    endpoint."""

    def setUp(self):
        super().setUp()
        if not os.access(ETCD, os.X_OK):
            self.skipTest("etcd is not installed (apt install etcd-server)")
        self.certs = harness.make_test_ca(self.tmpdir())
        self.etcd = Etcd(self.tmpdir(), tls=self.certs).start()
        self.addCleanup(self.etcd.close)

    def test_range_and_watch_over_tls(self):
        self.etcd.put(ROOT + "/plugin/divide", plugin("divide", "5"))
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"groups": ["PLUGIN"],
                                          "tls": {"ca_file": self.certs["ca"]}}))
        d.wait_status(harness.watching(self.etcd.public_url))
        self.etcd.put(ROOT + "/plugin/waf", plugin("waf", "7"))
        harness.wait_until(lambda: len((groupfiles.read(files, "PLUGIN") or
                                        {"data": []})["data"]) == 2, timeout=10,
                           message="both plugins delivered over TLS")

    def test_the_wrong_ca_is_refused(self):
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files,
                                    etcd={"groups": ["PLUGIN"],
                                          "tls": {"ca_file": self.certs["wrong_ca"]}}))
        doc = d.wait_status(harness.only_conn(lambda c: c["errors"]["connect"] >= 1,
                                              "a refused certificate"))
        self.assertRegex(harness.connection(doc, None)["lastError"],
                         r"endpoint %s: range of .*(certificate|TLS)" % re.escape(self.etcd.public_url))
        self.assertIsNone(groupfiles.read(files, "PLUGIN"))


class EtcdClusterTest(harness.IntegrationTest):
    """Three members: the member the agent watches goes down, and the leader moves; the
    agent goes on with the next endpoint from the revision it had reached."""

    def setUp(self):
        super().setUp()
        if not os.access(ETCD, os.X_OK):
            self.skipTest("etcd is not installed (apt install etcd-server)")
        self.cluster = Cluster([self.tmpdir() for _ in range(3)]).start()
        self.addCleanup(self.cluster.close)

    def test_member_down_and_leader_change_lose_nothing(self):
        m = self.cluster.members
        held = {}
        for i in range(5):
            item = plugin("p%d" % i, str(i))
            m[1].put(ROOT + "/plugin/p%d" % i, item)
            held["p%d" % i] = item
        files = self.tmpdir()
        d = self.daemon(etcd_config([x.public_url for x in m], files,
                                    etcd={"groups": ["PLUGIN"]}))

        def same():
            doc = groupfiles.read(files, "PLUGIN")
            return doc is not None and sorted(json.dumps(i, sort_keys=True) for i in
                                              doc["data"]) == \
                sorted(json.dumps(i, sort_keys=True) for i in held.values())
        harness.wait_until(same, timeout=20, message="PLUGIN equal to etcd's")
        d.wait_status(harness.watching(m[0].public_url))

        # the watched member goes down; writes go on through another one
        m[0].close()
        for i in range(5, 10):
            item = plugin("p%d" % i, str(i))
            m[2].put(ROOT + "/plugin/p%d" % i, item)
            held["p%d" % i] = item
        harness.wait_until(same, timeout=30, message="PLUGIN equal after a member is down")
        # the next member, or the one after it when the next had no leader yet (the one
        # that went down was the leader)
        d.wait_status(harness.watching(m[1].public_url, m[2].public_url))

        # the leader moves to another live member while writes go on
        leader = self.cluster.leader()
        target = [i for i in (1, 2) if i != leader][0]
        lead = m[leader]
        st = m[target].call("/v3/maintenance/status", {})
        lead.call("/v3/maintenance/transfer-leadership",
                  {"targetID": st["header"]["member_id"]})
        for i in range(10, 15):
            item = plugin("p%d" % i, str(i))
            m[target].put(ROOT + "/plugin/p%d" % i, item)
            held["p%d" % i] = item
        del held["p3"]
        m[target].delete(ROOT + "/plugin/p3")
        harness.wait_until(same, timeout=30, message="PLUGIN equal after a leader change")
        self.assertEqual(self.cluster.leader(), target)


if __name__ == "__main__":
    harness.main()
