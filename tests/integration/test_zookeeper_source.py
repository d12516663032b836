#!/usr/bin/env python3
"""The ZooKeeper source end to end (issue 12): the real gwsyncd against a real standalone
ZooKeeper server (Debian's zookeeper package) started on a free port, with items written by
kazoo the way ShenYu's admin writes them (one JSON item per znode under /{ns}/shenyu,
parents without data, recursive deletes), delivered to the `file` subscriber.

This file is the source's own smoke suite and needs nothing but the server and kazoo; the
full black-box suite for both path stores (ensembles, every fault, the admin's exact
publishing) lives in tests/kv/.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import zlib

import groupfiles
import harness

JAVA = shutil.which("java") or "/usr/bin/java"
ZK_JARS = ("/usr/share/java/zookeeper.jar",) + tuple(
    sorted(glob.glob("/usr/share/java/zookeeper-3*.jar")))


def server_classpath():
    """Debian's ZooKeeper jar (its manifest's Class-Path names the jars it needs), or None."""
    for jar in ZK_JARS:
        if os.path.isfile(jar) and not jar.endswith(("-it.jar", "-jute.jar")):
            return jar
    return None


def require_zookeeper():
    missing = []
    if not server_classpath() or not os.access(JAVA, os.X_OK):
        missing.append("zookeeper + default-jre-headless")
    try:
        sys.path.insert(0, "/usr/lib/python3/dist-packages")
        import kazoo.client  # noqa: F401
    except ImportError:
        missing.append("python3-kazoo")
    if missing:
        raise unittest.SkipTest("the ZooKeeper tests need the Debian packages " +
                                ", ".join(missing))


class Server:
    """One standalone ZooKeeper server on a free loopback port, with its own data dir.
    tickTime 200 ms lets sessions be as short as 400 ms, so expiry tests stay fast."""

    def __init__(self, port=None):
        self.port = port or harness.free_port()
        self.tmp = tempfile.mkdtemp(prefix="gwsync-zk-")
        self.proc = None
        with open(os.path.join(self.tmp, "zoo.cfg"), "w") as f:
            f.write("tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "minSessionTimeout=400\nmaxSessionTimeout=10000\n"
                    "admin.enableServer=false\n4lw.commands.whitelist=*\nforceSync=no\n"
                    % (os.path.join(self.tmp, "data"), self.port))

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        log = open(os.path.join(self.tmp, "server.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                [JAVA, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 "-Dzookeeper.admin.enableServer=false", "-cp", server_classpath(),
                 "org.apache.zookeeper.server.ZooKeeperServerMain",
                 os.path.join(self.tmp, "zoo.cfg")],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        finally:
            log.close()
        harness.wait_until(self.serving, timeout=60, interval=0.1,
                           message="ZooKeeper on port %d" % self.port)
        return self

    def four_letter(self, word):
        import socket
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(word.encode())
                out = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        return out.decode("utf-8", "replace")
                    out += chunk
        except OSError:
            return ""

    def serving(self):
        if self.proc is None or self.proc.poll() is not None:
            return False
        return "Mode: standalone" in self.four_letter("srvr")

    def session_alive(self, session_hex):
        return ("0x%x" % int(session_hex, 16)) in self.four_letter("dump").lower()

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def gson(item):
    """The item as the admin's Gson writes it: nulls left out, HTML characters escaped."""
    text = json.dumps({k: v for k, v in item.items() if v is not None},
                      separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("=", "\\u003d"),
                    ("'", "\\u0027")):
        text = text.replace(ch, esc)
    return text.encode("utf-8")


def plugin(name, enabled=True, **kw):
    return dict({"id": str(zlib.crc32(name.encode()) % 1000), "name": name, "enabled": enabled,
                 "sort": 10, "role": "Proxy", "pluginJar": "", "config": None}, **kw)


def selector(plugin_name, sid, **kw):
    return dict({"id": sid, "pluginId": "5", "pluginName": plugin_name, "name": "sel-" + sid,
                 "matchMode": 0, "type": 1, "sort": 1, "enabled": True, "logged": False,
                 "continued": True, "handle": "[]", "conditionList": []}, **kw)


class Admin:
    """Writes like ShenYu's admin to ZooKeeper (PROTOCOL-PUSH.md 2.1, 2.2): createOrUpdate
    with parents created empty, deletes recursive, a REFRESH of selectors deleting the
    plugin's subtree first."""

    def __init__(self, client, root):
        self.c = client
        self.root = root

    def put(self, path, item):
        full = self.root + path
        if self.c.exists(full):
            self.c.set(full, gson(item))
        else:
            self.c.create(full, gson(item), makepath=True)

    def delete(self, path):
        from kazoo.exceptions import NoNodeError
        try:
            self.c.delete(self.root + path, recursive=True)
        except NoNodeError:
            pass

    def plugin(self, item):
        self.put("/plugin/" + item["name"], item)

    def selector(self, item):
        self.put("/selector/%s/%s" % (item["pluginName"], item["id"]), item)

    def refresh_selectors(self, plugin_name, items):
        self.delete("/selector/" + plugin_name)
        for it in items:
            self.selector(it)


def by_key(files, group, key):
    doc = groupfiles.read(files, group)
    return {it[key]: it for it in doc["data"]} if doc else None


def connection(port, predicate=lambda c: True):
    """The agent's one ZooKeeper connection in /status once predicate holds of it, else None
    (for harness.wait_until)."""
    try:
        status, _, body = harness.http_request("GET", "http://127.0.0.1:%d/status" % port)
    except OSError:  # not listening yet
        return None
    if status != 200:
        return None
    conns = json.loads(body)["source"]["connections"]
    return conns[0] if len(conns) == 1 and predicate(conns[0]) else None


def accepted(daemon, group, since=0):
    """(md5, items) of every version of `group` the store accepted, oldest first."""
    rx = re.compile(r"store: accepted %s version (\w+) \(lastModifyTime \d+, (\d+) items\)"
                    % group)
    return [(m.group(1), int(m.group(2))) for m in
            (rx.search(line) for line in daemon.lines(since=since)) if m]


class ZooKeeperSource(harness.IntegrationTest):
    """One server for the class; each test writes under its own namespace."""

    @classmethod
    def setUpClass(cls):
        require_zookeeper()
        harness.require_daemon()
        cls.server = Server().start()
        from kazoo.client import KazooClient
        cls.client = KazooClient(hosts=cls.server.address, timeout=10.0)
        cls.client.start(timeout=30)

    @classmethod
    def tearDownClass(cls):
        cls.client.stop()
        cls.client.close()
        cls.server.close()

    def admin(self, ns):
        root = "/%s/shenyu" % ns
        self.addCleanup(lambda: self.client.delete("/" + ns, recursive=True)
                        if self.client.exists("/" + ns) else None)
        return Admin(self.client, root)

    def agent(self, ns, files, servers=None, status_port=None, **zk):
        section = dict({"servers": servers or [self.server.address], "namespace": ns,
                        "groups": ["PLUGIN", "SELECTOR"], "settle": "50ms"}, **zk)
        doc = {"zookeeper": section, "state_dir": "@TMP@/state", "log": {"level": "debug"},
               "subscribers": [groupfiles.file_subscriber(files)]}
        if status_port:
            doc["status"] = {"listen": "127.0.0.1:%d" % status_port}
        return self.daemon(doc)

    def session_of(self, port, other_than=None):
        """The session /status names once connected (and not `other_than`)."""
        return harness.wait_until(
            lambda: connection(port, lambda c: c["state"] == "connected" and c["session"] and
                               c["session"] != other_than),
            timeout=20, message="/status: a connected session")["session"]

    def test_startup_sync_then_a_change_and_a_delete_arrive_and_sigterm_ends_it(self):
        a = self.admin("ns-basic")
        a.plugin(plugin("divide"))
        a.plugin(plugin("sign", enabled=False))
        a.selector(selector("divide", "s1"))
        a.selector(selector("divide", "s2", handle='[{"upstreamUrl":"a:80"}]'))
        files = self.tmpdir()
        d = self.agent("ns-basic", files)
        harness.wait_until(lambda: (by_key(files, "PLUGIN", "name") or {}).keys() ==
                           {"divide", "sign"}, timeout=20, message="start-up PLUGIN")
        sels = harness.wait_until(lambda: by_key(files, "SELECTOR", "id"), timeout=20,
                                  message="start-up SELECTOR")
        self.assertEqual(set(sels), {"s1", "s2"})
        self.assertEqual(sels["s2"]["handle"], '[{"upstreamUrl":"a:80"}]')
        self.assertFalse(by_key(files, "PLUGIN", "name")["sign"]["enabled"])

        a.plugin(plugin("sign", enabled=True))  # one change
        harness.wait_until(lambda: by_key(files, "PLUGIN", "name")["sign"]["enabled"],
                           timeout=10, message="sign enabled")
        a.delete("/selector/divide/s1")  # one delete: applied (unlike ShenYu's Java client)
        harness.wait_until(lambda: set(by_key(files, "SELECTOR", "id")) == {"s2"},
                           timeout=10, message="s1 deleted")

        rc, seconds = d.stop(signal.SIGTERM)
        self.assertEqual(rc, 0, d.tail())
        self.assertLess(seconds, 1.0)
        self.assertIn("zookeeper: zookeeper://%s/ns-basic/shenyu: ZooKeeper sync stopped"
                      % self.server.address, d.text())

    def test_every_thread_is_named_the_client_librarys_own_too(self):
        # `top -H` must tell the threads apart: the ZooKeeper client library starts two
        # threads of its own (network I/O, completions), which would otherwise carry the
        # process's name; after a session expiry the new handle's threads are named too
        a = self.admin("ns-names")
        a.plugin(plugin("divide"))
        files = self.tmpdir()
        port = harness.free_port()
        d = self.agent("ns-names", files, status_port=port, session_timeout="1s")
        harness.wait_until(lambda: by_key(files, "PLUGIN", "name"), timeout=20,
                           message="start-up PLUGIN")

        def names():
            out = {}
            for tid in os.listdir("/proc/%d/task" % d.pid):
                try:
                    with open("/proc/%d/task/%s/comm" % (d.pid, tid)) as f:
                        out[int(tid)] = f.read().strip()
                except FileNotFoundError:
                    pass  # the thread ended meanwhile
            return out

        # ThreadSanitizer's runtime starts a background thread of its own before main,
        # which carries the process's name: allowed in a TSan build, and only that one
        with open("/proc/%d/maps" % d.pid) as f:
            runtime_threads = 1 if "libtsan" in f.read() else 0

        def named_as_wanted():
            got = names()
            unnamed = [t for t, n in got.items() if n == "gwsyncd" and t != d.pid]
            return (len(unnamed) <= runtime_threads and
                    {"zk-0", "zk-client", "zk-events"} <= set(got.values()))
        def wait_named(when):
            try:
                harness.wait_until(named_as_wanted, timeout=10,
                                   message="every thread named " + when)
            except AssertionError as e:
                raise AssertionError("%s: %r" % (e, names()))
        wait_named("at start")
        got = sorted(names().values())
        self.assertEqual(1, got.count("zk-client"), got)
        self.assertEqual(1, got.count("zk-events"), got)

        session = self.session_of(port)
        os.kill(d.pid, signal.SIGSTOP)  # frozen past its session timeout
        try:
            harness.wait_until(lambda: not self.server.session_alive(session), timeout=20,
                               interval=0.1, message="the server to expire the session")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        self.session_of(port, other_than=session)
        wait_named("after a new session")
        got = sorted(names().values())
        self.assertEqual(1, got.count("zk-client"), got)
        self.assertEqual(1, got.count("zk-events"), got)

    def test_a_refresh_reaches_the_store_as_one_version_never_an_empty_group(self):
        a = self.admin("ns-refresh")
        a.plugin(plugin("divide"))
        old = [selector("divide", "s%d" % i) for i in range(8)]
        for s in old:
            a.selector(s)
        files = self.tmpdir()
        d = self.agent("ns-refresh", files, settle="200ms")
        harness.wait_until(lambda: len(by_key(files, "SELECTOR", "id") or {}) == 8,
                           timeout=20, message="start-up SELECTOR")
        mark = d.mark()
        # delete the plugin's subtree, then write every item again, one changed
        new = old[:]
        new[3] = selector("divide", "s3", name="renamed")
        a.refresh_selectors("divide", new)
        harness.wait_until(lambda: by_key(files, "SELECTOR", "id")["s3"]["name"] == "renamed",
                           timeout=10, message="the refreshed selector")
        # the final state is delivered: any partial or empty version of the refresh
        # would have been accepted before it
        versions = accepted(d, "SELECTOR", since=mark)
        self.assertEqual([n for _, n in versions], [8], d.tail())

    def test_a_session_expiry_is_followed_by_a_full_read_with_every_change_made_meanwhile(self):
        a = self.admin("ns-expiry")
        a.plugin(plugin("divide"))
        a.plugin(plugin("sign"))
        a.selector(selector("divide", "s1"))
        files = self.tmpdir()
        port = harness.free_port()
        d = self.agent("ns-expiry", files, status_port=port, session_timeout="1s")
        harness.wait_until(lambda: by_key(files, "SELECTOR", "id"), timeout=20,
                           message="start-up sync")
        session = self.session_of(port)
        # a frozen agent (a long GC pause, a stopped VM) loses its session on the server
        os.kill(d.pid, signal.SIGSTOP)
        try:
            a.delete("/plugin/sign")
            a.plugin(plugin("waf"))
            a.selector(selector("divide", "s2"))
            harness.wait_until(lambda: not self.server.session_alive(session), timeout=20,
                               interval=0.1, message="the server to expire the session")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        # the server's "expired" on reconnecting, or, when that answer is slower than the 1 s
        # session timeout (a sanitizer build on a busy machine), the agent's own give-up ("no
        # server answered for the session timeout", a timeout): either ends the old session
        try:
            harness.wait_until(
                lambda: connection(port, lambda c: c["errors"].get("session", 0) +
                                   c["errors"].get("timeout", 0) >= 1),
                timeout=30, message="/status: the expiry counted")
        except AssertionError:
            # what the agent saw (debug level), for a failure seen once in CI only
            sys.stderr.write("---- gwsyncd output\n%s\n/status: %r\n" % (d.text(),
                                                                         connection(port)))
            raise
        self.session_of(port, other_than=session)
        harness.wait_until(lambda: set(by_key(files, "PLUGIN", "name")) == {"divide", "waf"},
                           timeout=10, message="plugins after the expiry")
        harness.wait_until(lambda: set(by_key(files, "SELECTOR", "id")) == {"s1", "s2"},
                           timeout=10, message="selectors after the expiry")
        # and the new session watches: a change after it arrives too
        a.selector(selector("divide", "s3"))
        harness.wait_until(lambda: "s3" in by_key(files, "SELECTOR", "id"), timeout=10,
                           message="a change on the new session")

    def test_an_agent_started_before_its_server_syncs_once_the_server_is_up(self):
        late = Server()
        self.addCleanup(late.close)
        files = self.tmpdir()
        port = harness.free_port()
        d = self.agent("ns-late", files, servers=[late.address], status_port=port,
                       retry={"attempts": 2, "interval": "200ms", "backoff": "500ms"})
        # no server: the first try fails (the connect wait is the 10 s connect timeout),
        # then tries follow the retry schedule
        doc = d.wait_status(harness.only_conn(lambda c: c["errors"]["connect"] >= 1,
                                              "a failed connect"), timeout=30)
        self.assertFalse(doc["healthy"], doc)
        self.assertIn("no session with any server", harness.connection(doc, None)["lastError"])
        harness.wait_until(lambda: connection(port, lambda c: c["errors"]["connect"] >= 2),
                           timeout=30, message="/status: a retry failed too")
        late.start()
        from kazoo.client import KazooClient
        c = KazooClient(hosts=late.address, timeout=10.0)
        c.start(timeout=30)
        self.addCleanup(c.close)
        self.addCleanup(c.stop)
        Admin(c, "/ns-late/shenyu").plugin(plugin("divide"))
        harness.wait_until(lambda: by_key(files, "PLUGIN", "name"), timeout=40,
                           message="the first sync once the server is up")
        self.assertEqual(set(by_key(files, "PLUGIN", "name")), {"divide"})
        # a group with no directory at all is an empty group, delivered as such
        harness.wait_until(lambda: by_key(files, "SELECTOR", "id") == {}, timeout=10,
                           message="an empty SELECTOR version")

    def test_status_names_the_session_the_watches_and_the_revision(self):
        a = self.admin("ns-status")
        a.plugin(plugin("divide"))
        a.selector(selector("divide", "s1"))
        files = self.tmpdir()
        port = harness.free_port()
        section = {"servers": [self.server.address], "namespace": "ns-status",
                   "groups": ["PLUGIN", "SELECTOR"]}
        d = self.daemon({"zookeeper": section, "state_dir": "@TMP@/state",
                         "log": {"level": "debug"},
                         "status": {"listen": "127.0.0.1:%d" % port},
                         "subscribers": [groupfiles.file_subscriber(files)]})
        # log wording is the behaviour here: /status must name the session the log names
        session = d.wait_log(r"session (0x[0-9a-f]+): everything read", timeout=20).group(1)

        def connection():
            status, _, body = harness.http_request(
                "GET", "http://127.0.0.1:%d/status" % port)
            if status != 200:
                return None
            conns = json.loads(body)["source"]["connections"]
            self.assertEqual(len(conns), 1)  # the ensemble is one connection
            return conns[0] if conns[0].get("session") else None
        conn = harness.wait_until(connection, timeout=10, message="/status")
        self.assertEqual(conn["session"], session)
        self.assertEqual(conn["state"], "connected")
        # plugin dir + divide, selector dir + divide + s1: five nodes read and watched
        self.assertEqual(conn["watches"], 5)
        self.assertGreater(conn["revision"], 0)

if __name__ == "__main__":
    harness.main()
