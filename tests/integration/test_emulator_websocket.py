"""Tests of the admin emulator's WebSocket endpoint (/websocket, PROTOCOL-PUSH.md section 1),
from the outside, with a tiny WebSocket client written here on the standard library (it
shares no code with the emulator's server side, so a framing bug cannot hide in both)."""
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import DEFAULT_NAMESPACE  # noqa: E402

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
GSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d", "'": "\\u0027"}


def strip_nulls(v):
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_nulls(x) for x in v]
    return v


def gson_text(doc):
    """What Gson writes: nulls omitted, compact, HTML characters escaped."""
    text = json.dumps(strip_nulls(doc), separators=(",", ":"), ensure_ascii=False)
    for c, e in GSON_ESCAPES.items():
        text = text.replace(c, e)
    return text


class Closed(Exception):
    pass


class WsClient:
    """A minimal RFC 6455 client: handshake, masked frames out, frames in."""

    def __init__(self, port, headers=None, ca=None, version="13", key=None,
                 connection="Upgrade", upgrade="websocket", method="GET", timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if ca:
            ctx = ssl.create_default_context(cafile=ca)
            self.sock = ctx.wrap_socket(self.sock, server_hostname="127.0.0.1")
        self.buf = b""
        self.key = key if key is not None else base64.b64encode(os.urandom(16)).decode()
        lines = ["%s /websocket HTTP/1.1" % method, "Host: 127.0.0.1:%d" % port]
        if upgrade:
            lines.append("Upgrade: " + upgrade)
        if connection:
            lines.append("Connection: " + connection)
        if self.key:
            lines.append("Sec-WebSocket-Key: " + self.key)
        if version:
            lines.append("Sec-WebSocket-Version: " + version)
        lines += ["%s: %s" % kv for kv in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        try:
            while b"\r\n\r\n" not in self.buf:
                self._recv(timeout)
        except Closed:
            pass
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status_line = lines[0]
        self.status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/1.1 ") else None
        self.headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            self.headers[k.strip().lower()] = v.strip()
        self.body = b""
        if self.status != 101 and "content-length" in self.headers:
            self._need(int(self.headers["content-length"]), timeout)
            self.body, self.buf = self.buf, b""

    def _recv(self, timeout):
        self.sock.settimeout(timeout)
        data = self.sock.recv(65536)
        if not data:
            raise Closed("eof")
        self.buf += data

    def _need(self, n, timeout):
        """Wait until n bytes are buffered (socket.timeout leaves the buffer intact)."""
        while len(self.buf) < n:
            self._recv(timeout)

    def expected_accept(self):
        return base64.b64encode(hashlib.sha1(self.key.encode() + GUID).digest()).decode()

    def send_frame(self, opcode, payload=b"", fin=True):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([(0x80 if fin else 0) | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_text(self, text):
        self.send_frame(0x1, text.encode("utf-8"))

    def frame(self, timeout=5.0):
        """(fin, rsv, opcode, masked, payload); Closed on EOF. Nothing is consumed until
        the whole frame is buffered, so a timeout loses nothing."""
        self._need(2, timeout)
        b0, b1 = self.buf[0], self.buf[1]
        n, at = b1 & 0x7F, 2
        if n == 126:
            self._need(4, timeout)
            n, at = struct.unpack(">H", self.buf[2:4])[0], 4
        elif n == 127:
            self._need(10, timeout)
            n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
        masked = bool(b1 & 0x80)
        self._need(at + (4 if masked else 0) + n, timeout)
        mask = self.buf[at:at + 4] if masked else None
        at += 4 if masked else 0
        payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF, mask is not None, payload

    def message(self, timeout=5.0):
        """The next data message or control frame: ("text", str, frames), ("ping", bytes),
        ("pong", bytes), ("close", code, reason)."""
        parts, frames = [], []
        while True:
            fin, rsv, op, masked, payload = self.frame(timeout)
            if op == 0x8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                return ("close", code, payload[2:].decode("utf-8"))
            if op in (0x9, 0xA):
                return ("ping" if op == 0x9 else "pong", payload)
            frames.append((fin, op, len(payload)))
            parts.append(payload)
            if fin:
                return ("text", b"".join(parts).decode("utf-8"), frames)

    def json(self, timeout=5.0):
        m = self.message(timeout)
        if m[0] != "text":
            raise AssertionError("expected a text message, got %r" % (m,))
        return json.loads(m[1])

    def take(self, n, quiet=0.1):
        """Exactly n text messages (each may take up to 5 s), then nothing for `quiet`."""
        out = [self.json() for _ in range(n)]
        extra = self.drain(quiet)
        if extra:
            raise AssertionError("%d message(s) more than %d: %r" % (len(extra), n, extra[:2]))
        return out

    def drain(self, quiet=0.25):
        """Every text message until none comes for `quiet` seconds."""
        out = []
        while True:
            try:
                m = self.message(quiet)
            except socket.timeout:
                return out
            if m[0] == "text":
                out.append(json.loads(m[1]))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class WebSocketTest(harness.IntegrationTest):
    def client(self, emu, ns=DEFAULT_NAMESPACE, headers=None, **kw):
        h = {"namespaceId": ns} if ns else {}
        h.update(headers or {})
        c = WsClient(emu.port, h, ca=emu.tls.get("ca") if emu.tls else None, **kw)
        self.addCleanup(c.close)
        return c

    def open(self, emu, **kw):
        c = self.client(emu, **kw)
        self.assertEqual(c.status, 101, c.status_line)
        harness.wait_until(lambda: any(s["conn"] == c.sock.getsockname()[1]
                                       for s in emu.state()["websocket"]["clients"]), 5)
        return c

    def ws_state(self, emu):
        return emu.state()["websocket"]

    # ------------------------------------------------------------------ handshake
    def test_handshake_answer_and_recorded_headers(self):
        emu = self.emulator()
        c = self.open(emu, headers={"ClientPort": "9195", "Origin": "ws://localhost:9195",
                                    "User-Agent": "gwsync-test"})
        self.assertEqual(c.status_line, "HTTP/1.1 101 ")   # Tomcat writes no reason phrase
        self.assertEqual(c.headers["sec-websocket-accept"], c.expected_accept())
        self.assertEqual(c.headers["upgrade"].lower(), "websocket")
        self.assertIn("upgrade", c.headers["connection"].lower())
        self.assertIn("JSESSIONID=", c.headers["set-cookie"])
        st = self.ws_state(emu)
        self.assertEqual(st["version"], "2.7.1")
        (cl,) = st["clients"]
        self.assertEqual(cl["namespace"], DEFAULT_NAMESPACE)
        self.assertEqual(cl["headers"]["ClientPort"], "9195")
        self.assertEqual(cl["headers"]["Origin"], "ws://localhost:9195")
        (entry,) = emu.requests("websocket")
        self.assertEqual((entry["ws"], entry["status"], entry["session"]), ("handshake", 101, cl["id"]))
        c.send_text("hello")
        harness.wait_until(lambda: len(emu.requests("websocket")) == 2, 5)
        msg = emu.requests("websocket")[1]
        self.assertEqual((msg["ws"], msg["text"], msg["answer"]), ("message", "hello", "ignored"))
        harness.wait_until(lambda: self.ws_state(emu)["clients"][0]["received"].get("messages") == 1, 5)

    def test_handshake_checks(self):
        emu = self.emulator(ws_token="s3cret", ws_allow_origins="ws://localhost:9095;ws://gw:9195")
        good = {"X-Shenyu-Sync-Token": "s3cret", "Origin": "ws://gw:9195"}
        self.assertEqual(self.ws_state(emu)["version"], "head")
        c = self.client(emu, headers=dict(good, Origin="ws://evil"))
        self.assertEqual(c.status, 403)
        self.assertEqual(json.loads(c.body)["status"], 403)
        c = self.client(emu, headers={"Origin": "ws://gw:9195"})                    # no token
        self.assertEqual(c.status, 500)
        c = self.client(emu, headers=dict(good, **{"X-Shenyu-Sync-Token": "wrong"}))
        self.assertEqual(c.status, 500)
        c = self.client(emu, headers={"x-shenyu-sync-token": "s3cret", "Origin": "ws://gw:9195"})
        self.assertEqual(c.status, 101)                                              # name: any case
        c = self.client(emu, headers=good, version="8")
        self.assertEqual((c.status, c.headers.get("sec-websocket-version")), (426, "13"))
        self.assertEqual(self.client(emu, headers=good, key="").status, 400)
        self.assertEqual(self.client(emu, headers=good, key="short").status, 400)
        self.assertEqual(self.client(emu, headers=good, connection="keep-alive").status, 400)
        self.assertEqual(self.client(emu, headers=good, upgrade=None, connection=None).status, 404)
        # 2.7+: no namespaceId -> opened, then closed at once with 1000.
        c = self.client(emu, ns=None, headers=good)
        self.assertEqual(c.status, 101)
        self.assertEqual(c.message(), ("close", 1000, ""))
        refused = [e.get("refused") for e in emu.requests("websocket")]
        self.assertIn("websocket sync token is invalid", refused)
        self.assertIn("websocket on client open failed, namespaceId is null", refused)
        # A head admin with no token configured refuses everyone.
        emu.control("ws-mode", {"token": None})
        self.assertEqual(self.client(emu, headers=good).status, 500)
        self.assertIn("websocket sync token is not configured",
                      [e.get("refused") for e in emu.requests("websocket")])
        self.assertGreaterEqual(emu.state()["counters"]["websocket.handshake.refused"], 9)

    def test_older_admins(self):
        # 2.5: Origin checked, no namespace needed, no RUNNING_MODE, empty lists sent.
        emu = self.emulator(mode="shenyu-legacy", ws_allow_origins="ws://gw")
        self.assertEqual(self.client(emu, ns=None).status, 403)   # no Origin at all
        c = self.open(emu, ns=None, headers={"Origin": "ws://gw"})
        emu.replace("PLUGIN", [])
        self.assertEqual([(m["groupType"], m["eventType"]) for m in c.take(1)],
                         [("PLUGIN", "DELETE")])
        c.send_text("RUNNING_MODE")
        c.send_text("MYSELF")
        got = c.take(5)
        self.assertEqual([(m["groupType"], m["eventType"]) for m in got],
                         [("APP_AUTH", "REFRESH"), ("PLUGIN", "MYSELF"), ("SELECTOR", "MYSELF"),
                          ("RULE", "MYSELF"), ("META_DATA", "REFRESH")])
        self.assertEqual(got[1]["data"], [])
        # 2.4 (soul): no Origin check at all.
        emu2 = self.emulator(mode="soul", ws_allow_origins="ws://gw")
        self.open(emu2, ns=None)

    # ------------------------------------------------------------------ MYSELF
    def test_myself_full_sync_equals_control_data(self):
        emu = self.emulator()
        c = self.open(emu)
        c.send_text("RUNNING_MODE")
        kind, text, _ = c.message()
        self.assertEqual(text, '{"masterUrl":"/websocket","isMaster":true,'
                               '"runningMode":"STANDALONE","eventType":"RUNNING_MODE"}')
        raw = []
        c.send_text("MYSELF")
        while True:
            try:
                m = c.message(0.5)
            except socket.timeout:
                break
            raw.append(m[1])
        msgs = [json.loads(t) for t in raw]
        order = [(m["groupType"], m["eventType"]) for m in msgs]
        self.assertEqual(order[:5], [("APP_AUTH", "REFRESH"), ("PLUGIN", "MYSELF"),
                                     ("SELECTOR", "MYSELF"), ("RULE", "MYSELF"),
                                     ("META_DATA", "REFRESH")])
        self.assertEqual(order[5:], [("PROXY_SELECTOR", "CREATE"), ("DISCOVER_UPSTREAM", "UPDATE"),
                                     ("PROXY_SELECTOR", "CREATE"), ("DISCOVER_UPSTREAM", "UPDATE"),
                                     ("AI_PROXY_API_KEY", "REFRESH")])
        got = {}
        for m in msgs:
            got.setdefault(m["groupType"], []).extend(m["data"])
        for g in emu.groups:
            self.assertEqual(got[g], strip_nulls(emu.data(g)["data"]), g)
        # Gson's text, byte for byte: HTML characters escaped, non-ASCII as is.
        self.assertEqual(raw[3], gson_text({"groupType": "RULE", "eventType": "MYSELF",
                                            "data": emu.data("RULE")["data"]}))
        self.assertTrue(any("\\u003d" in t or "\\u003c" in t for t in raw))
        self.assertFalse(any(ch in t for t in raw for ch in "<>="))
        self.assertTrue(any("限流-規則" in t for t in raw))
        st = self.ws_state(emu)["clients"][0]
        self.assertEqual(st["sent"]["messages"], 11)
        self.assertEqual(st["received"]["texts"], ["RUNNING_MODE", "MYSELF"])

    def test_myself_broadcast_parts_and_namespaces(self):
        emu = self.emulator()
        a, b = self.open(emu), self.open(emu)
        other = self.open(emu, ns="another-namespace")
        a.send_text("MYSELF")
        self.assertEqual(len(a.take(10)), 10)
        # The others in the namespace get what syncAllByNamespaceId broadcasts.
        self.assertEqual([(m["groupType"], m["eventType"]) for m in b.take(7)],
                         [("APP_AUTH", "REFRESH"), ("META_DATA", "REFRESH"),
                          ("PROXY_SELECTOR", "CREATE"), ("DISCOVER_UPSTREAM", "UPDATE"),
                          ("PROXY_SELECTOR", "CREATE"), ("DISCOVER_UPSTREAM", "UPDATE"),
                          ("AI_PROXY_API_KEY", "REFRESH")])
        self.assertEqual(other.drain(0.15), [])
        other.send_text("MYSELF")          # a namespace with no data: nothing at all
        self.assertEqual(other.drain(0.15), [])
        emu.touch("RULE")
        self.assertEqual(other.drain(0.15), [])
        self.assertEqual(len(a.take(1)), 1)

    # ------------------------------------------------------------------ events
    def test_control_changes_arrive_as_events(self):
        emu = self.emulator()
        c = self.open(emu)
        rule = dict(emu.data("RULE")["data"][0])

        def one():
            (m,) = c.take(1)
            return m["groupType"], m["eventType"], m["data"]

        new = dict(rule, id="r-new", name="new <rule>", sort=None)
        emu.upsert("RULE", new)
        self.assertEqual(one(), ("RULE", "CREATE", [strip_nulls(new)]))
        changed = dict(rule, name="renamed")
        emu.upsert("RULE", changed)
        self.assertEqual(one(), ("RULE", "UPDATE", [changed]))
        emu.control("upsert", {"group": "RULE", "item": changed, "event": "REFRESH"})
        self.assertEqual(one(), ("RULE", "REFRESH", [changed]))
        emu.delete("RULE", "r-new")
        self.assertEqual(one(), ("RULE", "DELETE", [strip_nulls(new)]))
        emu.touch("RULE")
        g, e, data = one()
        self.assertEqual((g, e, data[0]["sort"]), ("RULE", "UPDATE", changed["sort"] + 1))
        emu.notify("RULE")
        self.assertEqual(one()[:2], ("RULE", "UPDATE"))
        # APP_AUTH DELETE carries appKey, appSecret, open, enabled only (no namespaceId).
        auth = emu.data("APP_AUTH")["data"][0]
        emu.delete("APP_AUTH", auth["appKey"])
        self.assertEqual(one(), ("APP_AUTH", "DELETE", [{k: auth[k] for k in
                                                         ("appKey", "appSecret", "open", "enabled")}]))
        # replace: the difference as DELETE, UPDATE, CREATE.
        metas = emu.data("META_DATA")["data"]
        emu.replace("META_DATA", [dict(metas[1], path="/changed"), dict(metas[2], id="m-new")] + metas[3:])
        got = c.take(3)
        self.assertEqual([(m["eventType"], [i["id"] for i in m["data"]]) for m in got],
                         [("DELETE", [metas[0]["id"], metas[2]["id"]]),
                          ("UPDATE", [metas[1]["id"]]), ("CREATE", ["m-new"])])
        # push: false loses the event; the data still changes (HTTP sees it).
        emu.control("touch", {"group": "PLUGIN", "push": False})
        self.assertEqual(c.drain(0.15), [])
        # A selector deleted with its rules: RULE/DELETE first.
        sel = emu.data("SELECTOR")["data"][0]
        kids = [r["id"] for r in emu.data("RULE")["data"] if r["selectorId"] == sel["id"]]
        emu.control("delete", {"group": "SELECTOR", "key": sel["id"], "cascade": True})
        got = c.take(2)
        self.assertEqual([(m["groupType"], m["eventType"]) for m in got],
                         [("RULE", "DELETE"), ("SELECTOR", "DELETE")])
        self.assertEqual(sorted(r["id"] for r in got[0]["data"]), sorted(kids))

    def test_http_long_polling_unchanged_alongside(self):
        emu = self.emulator(hold=5)
        c = self.open(emu)
        token = emu.login()
        st = emu.state()["groups"]
        params = "&".join("%s=%s,%d" % (g, st[g]["md5"], st[g]["lastModifyTime"]) for g in emu.groups)
        out = {}
        t = threading.Thread(target=lambda: out.update(r=emu.call(
            "POST", "/configs/listener?namespaceId=" + DEFAULT_NAMESPACE, params,
            headers={"X-Access-Token": token, "Content-Type": "application/x-www-form-urlencoded"})))
        t.start()
        harness.wait_until(lambda: emu.state()["held"] == 1, 5)
        emu.touch("SELECTOR")
        t.join(5)
        self.assertEqual(json.loads(out["r"][2])["data"], ["SELECTOR"])
        (m,) = c.take(1)
        self.assertEqual((m["groupType"], m["eventType"]), ("SELECTOR", "UPDATE"))

    def test_plugin_refresh(self):
        emu = self.emulator()
        c = self.open(emu)
        sels = [s for s in emu.data("SELECTOR")["data"] if s["pluginName"] == "divide"]
        ids = {s["id"] for s in sels}
        rules = [r for r in emu.data("RULE")["data"] if r["selectorId"] in ids]
        self.assertTrue(sels and rules)
        before = emu.state()["groups"]
        r = emu.control("refresh", {"plugin": "divide"})
        self.assertEqual([(m["groupType"], m["eventType"], m["count"]) for m in r["messages"]],
                         [("PLUGIN", "UPDATE", 1), ("SELECTOR", "REFRESH", len(sels)),
                          ("RULE", "REFRESH", len(rules))])
        got = c.take(3)
        self.assertEqual([(m["groupType"], m["eventType"]) for m in got],
                         [("PLUGIN", "UPDATE"), ("SELECTOR", "REFRESH"), ("RULE", "REFRESH")])
        self.assertEqual(got[0]["data"][0]["name"], "divide")
        self.assertEqual(got[1]["data"], strip_nulls(sels))
        self.assertEqual(got[2]["data"], strip_nulls(rules))
        self.assertEqual(emu.state()["groups"], before)      # no new version
        emu.control("refresh", {"plugin": "divide", "group": "RULE"})
        self.assertEqual([(m["groupType"], m["eventType"]) for m in c.take(1)], [("RULE", "REFRESH")])
        emu.control("refresh", {"group": "META_DATA"})
        self.assertEqual([(m["groupType"], m["eventType"]) for m in c.take(1)], [("META_DATA", "REFRESH")])
        emu.control("refresh", {"all": True})
        self.assertEqual(len(c.take(10)), 10)
        with self.assertRaises(harness.EmulatorError):
            emu.control("refresh", {"plugin": "no-such-plugin"})

    # ------------------------------------------------------------------ framing
    def test_fragmented_large_messages(self):
        emu = self.emulator(rules=400, ws_fragment_size=1000)
        c = self.open(emu)
        c.send_text("MYSELF")
        frames_of = {}
        texts = {}
        while True:
            try:
                m = c.message(0.5)
            except socket.timeout:
                break
            doc = json.loads(m[1])
            frames_of[doc["groupType"]] = m[2]
            texts[doc["groupType"]] = m[1]
        frames = frames_of["RULE"]
        self.assertGreater(len(frames), 50)
        self.assertEqual(frames[0][:2], (False, 0x1))
        self.assertTrue(all(op == 0x0 for _, op, _ in frames[1:]))
        self.assertEqual([fin for fin, _, _ in frames], [False] * (len(frames) - 1) + [True])
        self.assertTrue(all(n <= 1000 for _, _, n in frames))
        self.assertEqual(texts["RULE"], gson_text({"groupType": "RULE", "eventType": "MYSELF",
                                                   "data": emu.data("RULE")["data"]}))
        self.assertEqual(len(frames_of["APP_AUTH"]), 2)
        # Each fragment ends on a character boundary (Tomcat's encoder buffer).
        c.sock.settimeout(5)
        emu.upsert("RULE", dict(emu.data("RULE")["data"][0], name="ルート🚀" * 400))
        parts = []
        while True:
            fin, _, op, masked, payload = c.frame()
            self.assertFalse(masked)
            payload.decode("utf-8")          # raises if a character was cut
            parts.append(payload)
            if fin:
                break
        self.assertIn("ルート🚀" * 400, b"".join(parts).decode("utf-8"))
        # Small messages: one frame.
        emu.control("ws-mode", {"fragment_size": 0})
        emu.control("refresh", {"group": "RULE"})
        self.assertEqual(len(c.message()[2]), 1)

    def test_ping_close_and_limits(self):
        emu = self.emulator(ws_max_message=100)
        c = self.open(emu)
        c.send_frame(0x9, b"hb")
        self.assertEqual(c.message(), ("pong", b"hb"))
        # A fragmented client message is reassembled.
        c.send_frame(0x1, b"MYS", fin=False)
        c.send_frame(0x9, b"")                       # a control frame in between
        c.send_frame(0x0, b"ELF")
        self.assertEqual(c.message()[0], "pong")
        self.assertEqual(len(c.take(10)), 10)
        c.send_frame(0x8, struct.pack(">H", 1000) + b"bye")
        self.assertEqual(c.message()[:2], ("close", 1000))
        with self.assertRaises(Closed):
            c.frame()
        harness.wait_until(lambda: self.ws_state(emu)["clients"] == [], 5)
        self.assertEqual(self.ws_state(emu)["closed"][-1]["closed"]["by"], "client")
        big = self.open(emu)
        big.send_text("x" * 200)
        self.assertEqual(big.message()[:2], ("close", 1009))
        unmasked = self.open(emu)
        unmasked.sock.sendall(b"\x81\x06MYSELF")
        self.assertEqual(unmasked.message()[:2], ("close", 1002))

    # ------------------------------------------------------------------ modes
    def test_running_mode_cluster(self):
        emu = self.emulator(ws_running_mode="cluster", ws_not_master=True,
                            ws_master_url="http://10.0.0.7:9095")
        c = self.open(emu)
        c.send_text("RUNNING_MODE")
        self.assertEqual(json.loads(c.message()[1]),
                         {"masterUrl": "ws://10.0.0.7:9095/websocket", "isMaster": False,
                          "runningMode": "CLUSTER", "eventType": "RUNNING_MODE"})
        c.send_text("MYSELF")
        emu.touch("RULE")
        self.assertEqual(c.drain(0.15), [])          # a non-master pushes nothing
        emu.control("ws-mode", {"master": True})
        c.send_text("RUNNING_MODE")
        self.assertTrue(json.loads(c.message()[1])["isMaster"])
        c.send_text("MYSELF")
        self.assertEqual(len(c.take(10)), 10)

    def test_wss(self):
        paths = harness.make_test_ca(self.tmpdir())
        emu = self.emulator(tls=paths)
        c = self.open(emu)
        c.send_text("MYSELF")
        self.assertEqual(len(c.take(10)), 10)
        emu.upsert("RULE", dict(emu.data("RULE")["data"][0], name="tls"))
        self.assertEqual(c.json()["eventType"], "UPDATE")

    # ------------------------------------------------------------------ faults
    def test_fault_refuse_and_drop_handshake(self):
        emu = self.emulator()
        emu.fault("http", endpoint="websocket", status=503, count=1)
        c = self.client(emu)
        self.assertEqual(c.status, 503)
        self.open(emu)
        emu.fault("drop", endpoint="websocket", on="handshake", count=1)
        c = self.client(emu)
        self.assertIsNone(c.status)
        emu.fault("delay", endpoint="websocket", on="handshake", seconds=0.5, count=1)
        t0 = time.monotonic()
        self.open(emu)
        self.assertGreaterEqual(time.monotonic() - t0, 0.5)
        # "any" faults are HTTP only.
        emu.fault("http", status=503)
        self.open(emu)
        with self.assertRaises(harness.EmulatorError):
            emu.fault("garbage")                      # websocket-only kind, no endpoint
        with self.assertRaises(harness.EmulatorError):
            emu.fault("code", endpoint="websocket")

    def test_fault_drop_connection(self):
        emu = self.emulator()
        c = self.open(emu)
        emu.fault("drop", endpoint="websocket", count=1)            # on the next message
        c.send_text("MYSELF")
        with self.assertRaises(Closed):
            c.frame()
        c = self.open(emu)
        emu.fault("drop", endpoint="websocket", how="reset", on="push", count=1)
        emu.touch("RULE")
        with self.assertRaises((ConnectionResetError, Closed)) as cm:
            c.frame()
        self.assertIsInstance(cm.exception, ConnectionResetError)
        c = self.open(emu)
        f = emu.fault("drop", endpoint="websocket", how="frame", code=1001, on="now")
        self.assertEqual(f["hits"], 1)
        self.assertEqual(c.message()[:2], ("close", 1001))
        c.send_frame(0x8, struct.pack(">H", 1001))                  # the client's answer
        self.assertEqual(emu.control("faults")["faults"], [])       # "now" is not kept
        harness.wait_until(lambda: self.ws_state(emu)["clients"] == [], 5)

    def test_fault_garbage(self):
        emu = self.emulator()
        c = self.open(emu)
        emu.fault("garbage", endpoint="websocket", count=1)         # the next push
        emu.touch("RULE")
        emu.touch("RULE")
        kind, text, _ = c.message()
        with self.assertRaises(ValueError):
            json.loads(text)
        self.assertEqual(c.json()["eventType"], "UPDATE")           # then as usual
        emu.fault("garbage", endpoint="websocket", what="frame", frame="rsv", on="now")
        fin, rsv, op, masked, _ = c.frame()
        self.assertEqual((rsv, op), (4, 0x1))
        emu.fault("garbage", endpoint="websocket", what="frame", frame="opcode", on="now")
        self.assertEqual(c.frame()[2], 0x3)
        emu.fault("garbage", endpoint="websocket", what="utf8", on="now")
        with self.assertRaises(UnicodeDecodeError):
            c.message()
        emu.fault("garbage", endpoint="websocket", on="message", body="not json", count=1)
        c.send_text("MYSELF")
        self.assertEqual(c.message()[1], "not json")                # instead of the answer
        self.assertEqual(c.drain(0.15), [])

    def test_fault_stall(self):
        emu = self.emulator()
        c = self.open(emu)
        emu.fault("stall", endpoint="websocket", seconds=1.0, count=1)  # on the next message
        t0 = time.monotonic()
        c.send_text("MYSELF")
        c.send_frame(0x9, b"p")
        with self.assertRaises(socket.timeout):
            c.message(0.6)                         # neither the answer nor the pong
        got = [c.message(3) for _ in range(11)]
        self.assertGreaterEqual(time.monotonic() - t0, 1.0)
        self.assertEqual(sum(1 for m in got if m[0] == "text"), 10)
        self.assertIn(("pong", b"p"), got)
        emu.fault("stall", endpoint="websocket", on="now")             # until cleared
        self.assertTrue(self.ws_state(emu)["clients"][0]["stalled"])
        emu.touch("RULE")
        with self.assertRaises(socket.timeout):
            c.message(0.4)
        emu.clear_faults()
        self.assertEqual(c.json()["eventType"], "UPDATE")


if __name__ == "__main__":
    harness.main()
