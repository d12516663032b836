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
import subprocess
import time
import unittest
import urllib.request

import groupfiles
import harness

ETCD = shutil.which("etcd") or "/usr/bin/etcd"
NS = "649330b6-c2d7-4edc-be8e-8a54df9eb385"
ROOT = "/%s/shenyu" % NS
GROUPS = ["PLUGIN", "SELECTOR", "RULE"]


def b64(text):
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


class Etcd:
    """One etcd member on free ports with a temporary data dir; removed on close()."""

    def __init__(self, tmp):
        self.dir = tmp
        self.public_url = "http://127.0.0.1:%d" % harness.free_port()
        self.hidden_url = "http://127.0.0.1:%d" % harness.free_port()
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
            [ETCD, "--name", "m0", "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", "m0=" + peer],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        harness.wait_until(self._up, timeout=20, message="etcd answering on " + self.url)
        return self

    def _up(self):
        try:
            self.call("/v3/kv/range", {"key": b64("/")})
            return True
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
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
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
        d.wait_log(r"etcd: endpoint %s: watching %s/ from revision \d+"
                   % (self.etcd.public_url, ROOT))

        # one change and one delete, through the watch
        mark = d.mark()
        self.put("RULE", "201", "/rule/divide/101-201", rule("201", "101", "divide"))
        changed = selector("100", "divide", "s1-moved")
        self.put("SELECTOR", "100", "/selector/divide/100", changed)
        self.delete("PLUGIN", "sign", "/plugin/sign")
        self.wait_files(files)
        d.wait_log(r"store: accepted PLUGIN", since=mark)

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
        d = self.daemon(etcd_config([self.etcd.public_url], files))
        self.wait_files(files)
        d.wait_log(r"etcd: endpoint .*: watching ")
        # etcd restarts where the agent cannot reach it, changes and compacts, then comes
        # back: the agent's resumed watch starts below the compaction
        self.etcd.close()
        d.wait_log(r"etcd: .*resuming the watch from revision", timeout=20)
        self.etcd.start(hidden=True)
        self.put("PLUGIN", "waf", "/plugin/waf", plugin("waf", "7"))
        self.delete("SELECTOR", "101", "/selector/divide/101")
        self.etcd.compact(self.etcd.revision())
        self.etcd.close()
        self.etcd.start()
        self.wait_files(files, timeout=30)
        d.wait_log(r"etcd: .*cancelled: compacted.*\[session\]; reading everything again",
                   timeout=20, since=0)
        d.wait_log(r"etcd: endpoint .*: recovery read of %s/" % ROOT, since=0)
        # and the watch works after the recovery
        mark = d.mark()
        self.put("RULE", "202", "/rule/divide/100-202", rule("202", "100", "divide"))
        self.wait_files(files)
        d.wait_log(r"store: accepted RULE", since=mark)

    def test_sigterm_exits_within_a_second(self):
        self.seed()
        files = self.tmpdir()
        d = self.daemon(etcd_config([self.etcd.public_url], files))
        self.wait_files(files)
        d.wait_log(r"etcd: endpoint .*: watching ")
        rc, elapsed = d.stop()
        self.assertEqual(rc, 0)
        self.assertLess(elapsed, 1.0)


if __name__ == "__main__":
    harness.main()
