"""The admin's WebSocket sync endpoint, /websocket (PROTOCOL-PUSH.md section 1).

The upgrade arrives through the same ThreadingHTTPServer handler as every HTTP request
(emulator.py hands GET /websocket here), so ws:// and wss:// share the HTTP port. The
handshake checks follow Tomcat's UpgradeUtil and ShenYu's WebsocketConfigurator in that
order: not an upgrade -> 404 (Spring MVC has no mapping), bad Sec-WebSocket-Key or
Connection -> 400, version not 13 -> 426, Origin not allowed (2.5+) -> 403, sync token
missing, wrong or not configured (HEAD) -> 500; then 101, and a 2.7+ session without a
namespaceId header is closed at once (code 1000, Tomcat's session.close() after @OnOpen
threw).

A session is the handler's thread reading client frames (ws_admin.Session.run) plus one
writer thread draining a queue, so pushes never block a control request and go out in
the order the changes were made (GroupStore calls on_change under its lock).
"""
import collections
import email.utils
import itertools
import queue
import socket
import ssl
import struct
import threading
import time

import faults
import replies
import websocket as ws
import ws_messages as msgs

VERSIONS = ("2.4", "2.5", "2.6", "2.7.0", "2.7.1", "head")
DEFAULT_VERSION = {"shenyu": "2.7.1", "shenyu-legacy": "2.5", "soul": "2.4"}
TOO_BIG_REASON = ("The decoded text message was too big for the output buffer and the "
                  "endpoint does not support partial messages")
KEEP_TEXTS = 20
KEEP_EVENTS = 50
KEEP_CLOSED = 20


def _version_index(v):
    return VERSIONS.index(v)


class WsConfig:
    """What differs between admin versions and deployments (README.md, WebSocket)."""

    def __init__(self, version, enabled=True, allow_origins=(), token=None, cluster=False,
                 master=True, master_url="", fragment_size=8192, max_message=10240):
        self.version = version
        self.enabled = enabled
        self.allow_origins = [o for o in allow_origins if o]
        self.token = token
        self.cluster = cluster
        self.master = master
        self.master_url = master_url
        self.fragment_size = fragment_size
        self.max_message = max_message

    def at_least(self, v):
        return _version_index(self.version) >= _version_index(v)

    @property
    def namespaced(self):
        return self.at_least("2.7.0")

    def describe(self):
        return {"enabled": self.enabled, "version": self.version,
                "allow_origins": list(self.allow_origins),
                "origin_check": self.at_least("2.5") and bool(self.allow_origins),
                "token_check": self.at_least("head"), "token_configured": bool(self.token),
                "namespace_required": self.namespaced, "running_mode_supported": self.namespaced,
                "running_mode": "CLUSTER" if self.cluster else "STANDALONE",
                "is_master": self.master, "master_url": self.master_url,
                "fragment_size": self.fragment_size, "max_message": self.max_message}


def _error_page(status, path):
    """Spring Boot's error JSON, which is what Tomcat's sendError() becomes in the admin."""
    reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 426: "Upgrade Required",
              500: "Internal Server Error"}.get(status, "Error")
    return replies.doc_reply({"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", time.gmtime()),
                              "status": status, "error": reason, "path": path}, status=status)


def garbage_frames(params):
    """The bytes of a `garbage` fault: something no admin sends."""
    what = params.get("what", "text")
    body = params.get("body")
    if what == "text":
        return ws.frame(ws.OP_TEXT, (body if body is not None else msgs.GARBAGE_TEXT).encode("utf-8"))
    if what == "utf8":
        return ws.frame(ws.OP_TEXT, b'{"groupType":"RULE","eventType":"UPDATE","data":[{"id":"1","name":"'
                        + faults.INVALID_UTF8 + b'"}]}')
    if what == "binary":
        return ws.frame(ws.OP_BINARY, (body if body is not None
                                       else msgs.envelope("RULE", "UPDATE", [])).encode("utf-8"))
    bad = params.get("frame", "rsv")
    if bad == "rsv":        # RSV1 without a negotiated extension
        return ws.frame(ws.OP_TEXT, b"{}", rsv=4)
    if bad == "opcode":     # reserved data opcode 0x3
        return ws.frame(0x3, b"{}")
    if bad == "masked":     # a server frame must not be masked
        return ws.frame(ws.OP_TEXT, b"{}", mask=b"\x01\x02\x03\x04")
    if bad == "continuation":  # no message was started
        return ws.frame(ws.OP_CONT, b"{}")
    if bad == "big_control":   # a control frame over 125 bytes (an extended length)
        return ws.frame(ws.OP_PING, b"x" * 200)
    return ws.frame(ws.OP_PING, b"x", fin=False)  # "control": a fragmented control frame


class Session:
    _ids = itertools.count(1)

    def __init__(self, hub, handler, headers, namespace):
        self.hub = hub
        self.id = next(Session._ids)
        self.sock = handler.connection
        self.rfile = handler.rfile
        self.conn = handler.client_address[1]
        self.headers = headers
        self.namespace = namespace
        self.connected_at = time.time()
        self.lock = threading.Condition()
        self.q = queue.Queue()
        self.open = True
        self.stalled_until = None      # None, a monotonic deadline, or float("inf")
        self.close_sent = False
        self.reset = False
        self.closed = None              # {"by", "code", "reason"} once it ended
        self.instance_info = None
        self.recv = collections.Counter()
        self.sent = collections.Counter()
        self.texts = collections.deque(maxlen=KEEP_TEXTS)
        self.events = collections.deque(maxlen=KEEP_EVENTS)
        self.writer = threading.Thread(target=self._write_loop, daemon=True,
                                       name="ws-writer-%d" % self.id)

    # ------------------------------------------------------------------ stalls
    def stall(self, seconds):
        with self.lock:
            self.stalled_until = (float("inf") if seconds is None
                                  else time.monotonic() + float(seconds))
            self.lock.notify_all()

    def unstall(self):
        with self.lock:
            self.stalled_until = None
            self.lock.notify_all()

    def stalled(self):
        with self.lock:
            return self.stalled_until is not None and time.monotonic() < self.stalled_until

    def wait_unstalled(self):
        with self.lock:
            while self.stalled_until is not None and self.open:
                left = self.stalled_until - time.monotonic()
                if left <= 0:
                    self.stalled_until = None
                    break
                self.lock.wait(min(left, 0.5))

    # ------------------------------------------------------------------ sending
    def enqueue(self, item):
        self.q.put(item)

    def _send(self, data):
        self.sock.sendall(data)
        with self.lock:
            self.sent["bytes"] += len(data)

    def _write_loop(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            kind = item[0]
            if kind not in ("drop",):
                self.wait_unstalled()
            try:
                if kind == "text":
                    frames = ws.text_frames(item[1], self.hub.cfg.fragment_size)
                    for f in frames:
                        self._send(f)
                    with self.lock:
                        self.sent["messages"] += 1
                        self.sent["frames"] += len(frames)
                        if item[2]:
                            self.events.append(item[2])
                elif kind == "raw":
                    self._send(item[1])
                    with self.lock:
                        self.sent["garbage"] += 1
                        self.events.append(item[2])
                elif kind == "pong":
                    self._send(ws.frame(ws.OP_PONG, item[1]))
                    with self.lock:
                        self.sent["pongs"] += 1
                elif kind == "sleep":
                    time.sleep(item[1])
                elif kind == "close":
                    _, code, reason, echo = item
                    if not self.close_sent:
                        self.close_sent = True
                        self._send(ws.frame(ws.OP_CLOSE, ws.close_payload(code, reason)))
                    if echo:
                        self.shutdown(socket.SHUT_RDWR)
                        return
                    # Server-initiated: wait for the client's close, but not forever.
                    timer = threading.Timer(2.0, self.shutdown, (socket.SHUT_RDWR,))
                    timer.daemon = True
                    timer.start()
                elif kind == "drop":
                    _, how, code, reason = item
                    self.hub.note_closed(self, "drop", code if how == "frame" else None, how)
                    if how == "frame":
                        self.q.put(("close", code, reason, False))
                        continue
                    if how == "reset":
                        self.reset = True
                        try:
                            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        except OSError:
                            pass
                        self.shutdown(socket.SHUT_RD)   # wakes the reader; nothing is sent
                    else:
                        self.shutdown(socket.SHUT_RDWR)  # FIN
                    return
            except (OSError, ssl.SSLError, ValueError):
                with self.lock:
                    self.open = False
                    self.lock.notify_all()
                return

    def shutdown(self, how):
        try:
            self.sock.shutdown(how)
        except (OSError, ValueError):
            pass

    # ------------------------------------------------------------------ reading
    def run(self):
        """The handler thread: read the client's frames until the session ends."""
        self.writer.start()
        reader = ws.Reader(self.rfile, self.hub.cfg.max_message)
        end = None
        try:
            while True:
                self.wait_unstalled()
                ev = reader.receive()
                self.wait_unstalled()
                with self.lock:
                    self.recv["frames"] = reader.frames
                    self.recv["bytes"] = reader.bytes
                if ev[0] == "close":
                    end = ("client", ev[1], ev[2])
                    if not self.close_sent:
                        self.enqueue(("close", ev[1], "" if ev[1] is not None else "", True))
                    break
                if ev[0] == "ping":
                    with self.lock:
                        self.recv["pings"] += 1
                    self.enqueue(("pong", ev[1]))   # Tomcat answers pings itself
                elif ev[0] == "pong":
                    with self.lock:
                        self.recv["pongs"] += 1
                elif ev[0] == "binary":
                    with self.lock:
                        self.recv["binary"] += 1
                    self.hub.log_message(self, None, len(ev[1]), answer="ignored (binary)")
                else:
                    self.hub.on_text(self, ev[1])
        except ws.ProtocolError as e:
            reason = TOO_BIG_REASON if e.code == ws.TOO_BIG else e.reason
            end = ("protocol_error", e.code, reason)
            self.enqueue(("close", e.code, reason, True))
        except (EOFError, OSError, ssl.SSLError, ValueError) as e:
            end = ("eof", None, str(e) or type(e).__name__)
        finally:
            with self.lock:
                self.open = False
                self.lock.notify_all()
            self.hub.unregister(self, *(end or ("eof", None, "")))
            self.q.put(None)
            self.writer.join(2.0)


class WsHub:
    """Sessions, routing and the admin's answers."""

    def __init__(self, admin, cfg):
        self.admin = admin
        self.cfg = cfg
        self.lock = threading.Lock()
        self.sessions = []
        self.closed = collections.deque(maxlen=KEEP_CLOSED)
        admin.store.add_listener(self.on_change)

    # ------------------------------------------------------------------ handshake
    def handshake(self, handler, req, entry):
        """Answer an upgrade request. Returns a replies.Reply for a refusal (sent by the
        HTTP layer), or None after the session has run and ended."""
        log, cfg = self.admin.log, self.cfg
        hdr = req.header

        def refuse(reply, why):
            log.count("websocket.handshake.refused")
            log.update(entry, refused=why)
            return reply

        if req.method != "GET" or not ws.header_has_token(hdr("Upgrade"), "websocket"):
            return refuse(_error_page(404, req.path), "not an upgrade request")
        delay, fault, taken = self.admin.faults.take(faults.WEBSOCKET, "handshake")
        if taken:
            log.count(*["faults." + t["kind"] for t in taken])
            log.update(entry, faults=[t["kind"] for t in taken])
        if delay > 0 and self.admin.stopping.wait(delay):
            fault = None
        if fault is not None and fault.kind == "http":
            return refuse(replies.http_error(int(fault.params.get("status", 500)),
                                             fault.params.get("body")), "fault http")
        if fault is not None and fault.kind == "drop":
            r = replies.Reply()
            r.drop = "reset" if fault.params.get("how") == "reset" else "close"
            return refuse(r, "fault drop")
        if fault is not None and fault.kind == "trickle":
            # a 101 whose headers never end: `rate` bytes a second, then padding
            r = replies.Reply(status=101, body=b"")
            r.headers = [("Upgrade", "websocket"), ("Connection", "upgrade"),
                         ("X-Padding", "x" * 100000)]
            r.trickle = float(fault.params.get("rate", 4))
            r.trickle_head = True
            return refuse(r, "fault trickle")
        key = hdr("Sec-WebSocket-Key")
        if not key or not ws.valid_key(key):
            return refuse(_error_page(400, req.path), "bad Sec-WebSocket-Key")
        if not ws.header_has_token(hdr("Connection"), "upgrade"):
            return refuse(_error_page(400, req.path), "Connection lacks upgrade")
        if not ws.header_has_token(hdr("Sec-WebSocket-Version"), "13"):
            r = _error_page(426, req.path)
            r.headers.append(("Sec-WebSocket-Version", "13"))
            return refuse(r, "Sec-WebSocket-Version is not 13")
        if cfg.at_least("2.5") and cfg.allow_origins and hdr("Origin") not in cfg.allow_origins:
            return refuse(_error_page(403, req.path), "origin %r is forbidden" % hdr("Origin"))
        if cfg.at_least("head"):
            if not cfg.token:
                return refuse(_error_page(500, req.path), "websocket sync token is not configured")
            sent = hdr("X-Shenyu-Sync-Token")
            if not sent or not sent.strip() or sent != cfg.token:
                return refuse(_error_page(500, req.path), "websocket sync token is invalid")
        # 101, as Tomcat writes it (no reason phrase), with the HttpSession's cookie.
        head = ["HTTP/1.1 101 ", "Upgrade: websocket", "Connection: upgrade",
                "Sec-WebSocket-Accept: " + ws.accept_key(key),
                "Set-Cookie: JSESSIONID=%032X; Path=/; HttpOnly" % (id(entry) ^ int(time.time() * 1e6)),
                "Date: " + email.utils.formatdate(usegmt=True)]
        handler.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        handler.connection.settimeout(None)   # ShenYu sets no session idle timeout
        log.count("websocket.handshake.ok")
        namespace = (hdr("namespaceId") or "").strip() if cfg.namespaced else None
        session = Session(self, handler, dict(entry.get("headers") or {}), namespace)
        log.update(entry, status=101, session=session.id, t_done=time.time())
        with self.lock:
            self.sessions.append(session)
        if cfg.namespaced and not namespace:
            # WebsocketCollector.onOpen throws "namespaceId is null"; Tomcat calls
            # @OnError (the session is forgotten) and session.close(): 1000, no reason.
            with self.lock:
                self.sessions.remove(session)
            log.update(entry, refused="websocket on client open failed, namespaceId is null")
            log.count("websocket.open_failed")
            session.enqueue(("close", ws.NORMAL, "", False))
        session.run()
        if session.reset:
            # Linger 0 is set: the last close (when the handler closes its files) sends RST.
            try:
                handler.connection.close()
            except OSError:
                pass
        return None

    def unregister(self, session, by, code, reason):
        with self.lock:
            if session in self.sessions:
                self.sessions.remove(session)
        self.note_closed(session, by, code, reason)

    def note_closed(self, session, by, code, reason):
        with self.lock:
            if session.closed is None:
                session.closed = {"by": by, "code": code, "reason": reason, "t": time.time()}
                self.closed.append(session)

    # ------------------------------------------------------------------ client messages
    def log_message(self, session, text, size, **fields):
        return self.admin.log.add(kind="websocket", ws="message", session=session.id,
                                  conn=session.conn, text=None if text is None else text[:200],
                                  bytes=size, **fields)

    def on_text(self, session, text):
        log = self.admin.log
        with session.lock:
            session.recv["messages"] += 1
            session.texts.append(text[:200])
        log.count("websocket.in")
        entry = self.log_message(session, text, len(text.encode("utf-8")))
        delay, fault, taken = self.admin.faults.take(faults.WEBSOCKET, "message")
        if taken:
            log.count(*["faults." + t["kind"] for t in taken])
            log.update(entry, faults=[t["kind"] for t in taken])
        if delay > 0:
            self.admin.stopping.wait(delay)
        if fault is not None:
            self.apply(session, fault)
            if fault.kind != "stall":
                log.update(entry, answer="fault " + fault.kind)
                return
        answer = "ignored"
        if text == "MYSELF":
            answer = "MYSELF: %d message(s)" % self.myself(session)
            log.count("websocket.myself")
        elif text == "RUNNING_MODE" and self.cfg.at_least("2.7.0"):
            reply = msgs.running_mode(self.cfg.master, self.cfg.cluster, self.cfg.master_url)
            session.enqueue(("text", reply.encode("utf-8"), "RUNNING_MODE"))
            answer = "RUNNING_MODE"
            log.count("websocket.running_mode")
        elif "bootstrapInstanceInfo" in text and self.cfg.at_least("2.7.1"):
            session.instance_info = text[:1000]
            answer = "instance info recorded"
        log.update(entry, answer=answer, t_done=time.time())

    # ------------------------------------------------------------------ pushing
    def myself(self, session):
        """syncAllByNamespaceId(MYSELF, ns) (1.4); the parts other than PLUGIN, SELECTOR and
        RULE are broadcast to the namespace. Returns the number of steps."""
        store = self.admin.store
        with store.cond:
            if self.cfg.cluster and not self.cfg.master:
                return 0     # a non-master admin skips every non-HTTP listener
            if self.cfg.namespaced and session.namespace != self.admin.namespace:
                return 0     # no data in that namespace: every list is empty
            plan = msgs.full_sync(store.current, store.groups, "MYSELF", self.cfg.namespaced)
            for group, event, items, scope in plan:
                self.route(group, event, items, session if scope == "self" else None)
            return len(plan)

    def on_change(self, group, events):
        """GroupStore listener (under the store lock): one message per event."""
        for event, items in events:
            self.route(group, event, msgs.event_items(group, event, items))

    def run_plan(self, plan):
        """Route steps under the store lock; returns what went out."""
        with self.admin.store.cond:
            out = []
            for group, event, items, scope in plan:
                n = self.route(group, event, items)
                out.append({"groupType": group, "eventType": event, "count": len(items), "sessions": n})
            return out

    def route(self, group, event, items, requester=None):
        """WebsocketCollector.send: MYSELF to the requester, others to the namespace of the
        first item (2.7+) or to everyone. Returns the number of sessions reached."""
        if self.cfg.cluster and not self.cfg.master:
            return 0
        if not items and self.cfg.namespaced:
            return 0
        data = msgs.envelope(group, event, items).encode("utf-8")
        label = "%s/%s/%d" % (group, event, len(items))
        with self.lock:
            if event == "MYSELF":
                targets = [requester] if requester is not None and requester in self.sessions else []
            elif self.cfg.namespaced:
                ns = msgs.namespace_of(items)
                targets = [s for s in self.sessions if s.namespace == ns]
            else:
                targets = list(self.sessions)
        for s in targets:
            self.deliver(s, data, label)
        return len(targets)

    def deliver(self, session, data, label):
        log = self.admin.log
        delay, fault, taken = self.admin.faults.take(faults.WEBSOCKET, "push")
        if taken:
            log.count(*["faults." + t["kind"] for t in taken])
        if delay > 0:
            session.enqueue(("sleep", delay))
        log.count("websocket.out")
        if fault is not None:
            self.apply(session, fault)
            if fault.kind != "stall":
                return
        session.enqueue(("text", data, label))

    def apply(self, session, fault):
        p = fault.params
        if fault.kind == "drop":
            session.enqueue(("drop", p.get("how", "close"), int(p.get("code", 1001)), p.get("reason", "")))
        elif fault.kind == "garbage":
            session.enqueue(("raw", garbage_frames(p), "garbage/" + p.get("what", "text")))
        elif fault.kind == "stall":
            session.stall(p.get("seconds"))

    # ------------------------------------------------------------------ control
    def apply_now(self, fault):
        with self.lock:
            targets = list(self.sessions)
        for s in targets:
            self.apply(s, fault)
        fault.hits = len(targets)
        if targets:
            self.admin.log.count("faults." + fault.kind)
        return len(targets)

    def unstall_all(self):
        with self.lock:
            targets = list(self.sessions)
        for s in targets:
            s.unstall()

    def send_text(self, text, client=None):
        with self.lock:
            targets = [s for s in self.sessions if client is None or s.id == client]
        for s in targets:
            s.enqueue(("text", text.encode("utf-8"), "raw"))
        return len(targets)

    def describe(self):
        with self.lock:
            live = list(self.sessions)
            gone = list(self.closed)
        return dict(self.cfg.describe(), clients=[self._session(s) for s in live],
                    closed=[self._session(s) for s in gone if s not in live])

    @staticmethod
    def _session(s):
        with s.lock:
            return {"id": s.id, "conn": s.conn, "namespace": s.namespace, "headers": s.headers,
                    "connected_at": s.connected_at, "open": s.open, "stalled": s.stalled_until is not None,
                    "received": dict(s.recv, texts=list(s.texts)),
                    "sent": dict(s.sent, events=list(s.events)),
                    "instance_info": s.instance_info, "closed": s.closed}
