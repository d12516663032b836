"""A TCP proxy between the agent and a ZooKeeper or etcd server, for faults a server cannot
make on its own:

- block() / unblock(): connections are cut and new ones refused (a network partition the
  agent sees as connection loss), without stopping the shared server; a server that
  "comes back" later (snapshot cold start) is unblock();
- reset(): every open connection is cut once (the agent reconnects at once);
- lose events on purpose, so anti-entropy has something to repair:
  ZkEventDropper drops ZooKeeper watch notifications (reply frames with xid -1) while
  `dropping` is set: the server has fired and forgotten those one-shot watches, so the
  agent never hears of the change;
  EtcdEventDropper removes the events of some keys from an etcd watch stream while the
  events of other keys flow on (one change lost in the middle);
  EtcdWatchBlinder rewrites every etcd /v3/watch create_request to watch a key range
  nothing is written to, while `blind` is set (a watch that silently stalls): range
  reads still see everything;
- order the agent's reads against a test's writes: ZkRequestGate holds ZooKeeper requests
  until the test lets them through, one at a time.
Standard library only; one thread per direction per connection, all stopped by close().
"""
import json
import select
import socket
import struct
import threading


class Proxy:
    """Listens on 127.0.0.1:port (a free one by default) and forwards to target.
    make_filter(): a new per-connection filter object with up(bytes)->bytes (agent to
    server) and down(bytes)->bytes (server to agent), or None to pass bytes as they are."""

    def __init__(self, target_port, target_host="127.0.0.1", port=0, make_filter=None):
        self.target = (target_host, target_port)
        self.make_filter = make_filter
        self.blocked = False
        self.connections = 0  # accepted and forwarded, for tests that want to know
        self._lock = threading.Lock()
        self._pairs = []
        self._stop = False
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True, name="proxy-accept")
        self._thread.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def _accept(self):
        while not self._stop:
            try:
                r, _, _ = select.select([self._listener], [], [], 0.1)
                if not r:
                    continue
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.blocked:
                _close(client, reset=True)
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client, reset=True)
                continue
            flt = self.make_filter() if self.make_filter else None
            pair = (client, server)
            with self._lock:
                # block() may have run while this connection was being made: decided under
                # the lock block() sets the flag under, so a partition never lets one through
                admitted = not self.blocked
                if admitted:
                    self._pairs.append(pair)
                    self.connections += 1
            if not admitted:
                _close(client, reset=True)
                _close(server, reset=False)
                continue
            for src, dst, fn in ((client, server, flt and flt.up), (server, client, flt and flt.down)):
                threading.Thread(target=self._pump, args=(pair, src, dst, fn), daemon=True,
                                 name="proxy-pump").start()

    def _pump(self, pair, src, dst, fn):
        try:
            while not self._stop:
                data = src.recv(65536)
                if not data:
                    break
                if fn:
                    data = fn(data)
                if data:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(pair, reset=False)

    def _drop(self, pair, reset):
        with self._lock:
            if pair in self._pairs:
                self._pairs.remove(pair)
        for s in pair:
            _close(s, reset)

    def reset(self):
        """Cut every open connection (RST), as a broken network would."""
        with self._lock:
            pairs = list(self._pairs)
        for p in pairs:
            self._drop(p, reset=True)

    def block(self):
        """Cut every connection and refuse new ones until unblock()."""
        with self._lock:
            self.blocked = True
        self.reset()

    def unblock(self):
        self.blocked = False

    def open_connections(self):
        with self._lock:
            return len(self._pairs)

    def close(self):
        self._stop = True
        self.reset()
        _close(self._listener, False)
        self._thread.join(2)


def _close(s, reset):
    """Close s; reset: the peer sees a reset (SO_LINGER 0), not an orderly close. A pump
    thread blocked in recv() on s holds the socket open past close() (Linux), so it is
    shut down for reading first, which wakes that thread and sends nothing."""
    try:
        if reset:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        try:
            s.shutdown(socket.SHUT_RD)
        except OSError:
            pass
        s.close()
    except OSError:
        pass


# ---------------------------------------------------------------------- ZooKeeper
class ZkEventDropper:
    """Per-connection filter: while the shared flag `state["dropping"]` is true, drop the
    server's watch notifications (frames whose reply header xid is -1). Frames are a 4-byte
    big-endian length and the body; the first frame of a connection is the connect
    response (no reply header) and always passes. state["dropped"] counts what was lost."""

    def __init__(self, state):
        self.state = state
        self.buf = b""
        self.first = True

    def up(self, data):
        return data

    def down(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack(">i", self.buf[:4])
            if len(self.buf) < 4 + n:
                break
            frame, self.buf = self.buf[:4 + n], self.buf[4 + n:]
            if self.first:
                self.first = False
            elif n >= 4 and struct.unpack(">i", frame[4:8])[0] == -1 and self.state.get("dropping"):
                self.state["dropped"] = self.state.get("dropped", 0) + 1
                continue
            out.append(frame)
        return b"".join(out)


def zk_event_dropper(target_port):
    """(proxy, state): set state["dropping"] = True to start losing watch events."""
    state = {"dropping": False, "dropped": 0}
    return Proxy(target_port, make_filter=lambda: ZkEventDropper(state)), state


class ZkRequestGate:
    """Shared by the connections of one proxy: holds the agent's ZooKeeper requests so a
    test can order them against its own writes, one read at a time (the source makes one
    read at a time). While closed, every request but a ping waits in the agent-to-server
    pump until step() lets one through or open() lets all through; `held` is the (op, path)
    of the request waiting, op being ZooKeeper's opcode (3 exists, 4 getData, 12
    getChildren2). Server-to-agent traffic (replies, watch events) always flows."""

    GET_DATA, GET_CHILDREN2, EXISTS, PING = 4, 12, 3, 11

    def __init__(self, limit=30.0):
        self.cv = threading.Condition()
        self.closed = False
        self.permits = 0
        self.held = None
        self.limit = limit  # a held request goes on after this long, so nothing hangs

    def close(self):
        with self.cv:
            self.closed, self.permits = True, 0

    def open(self):
        with self.cv:
            self.closed = False
            self.cv.notify_all()

    def step(self):
        """Let the request held now through; the next one is held again."""
        with self.cv:
            self.permits += 1
            self.cv.notify_all()

    def wait_held(self, op, prefix, timeout=30.0):
        """Wait until a request with opcode op on a path starting with prefix is held;
        returns its path."""
        def held():
            return self.held and self.held[0] == op and self.held[1].startswith(prefix)
        with self.cv:
            if not self.cv.wait_for(held, timeout):
                raise AssertionError("no request %d on %s held within %.0fs (held: %r)"
                                     % (op, prefix, timeout, self.held))
            return self.held[1]

    def pass_request(self, op, path):
        with self.cv:
            if not self.closed:
                return
            self.held = (op, path)
            self.cv.notify_all()
            self.cv.wait_for(lambda: not self.closed or self.permits > 0, self.limit)
            if self.permits:
                self.permits -= 1
            self.held = None

    def filter(self):
        return _ZkGateFilter(self)


class _ZkGateFilter:
    """One connection's side of ZkRequestGate: splits the agent's bytes into frames (a
    4-byte big-endian length and the body; the first is the connect request, no header)
    and asks the gate before passing each request."""

    def __init__(self, gate):
        self.gate = gate
        self.buf = b""
        self.first = True

    def down(self, data):
        return data

    def up(self, data):
        self.buf += data
        out = []
        while len(self.buf) >= 4:
            (n,) = struct.unpack(">i", self.buf[:4])
            if len(self.buf) < 4 + n:
                break
            frame, self.buf = self.buf[:4 + n], self.buf[4 + n:]
            if self.first:
                self.first = False
            elif n >= 8:
                _, op = struct.unpack(">ii", frame[4:12])
                path = ""
                if op in (ZkRequestGate.GET_DATA, ZkRequestGate.GET_CHILDREN2,
                          ZkRequestGate.EXISTS) and n >= 12:
                    (plen,) = struct.unpack(">i", frame[12:16])
                    path = frame[16:16 + max(plen, 0)].decode("utf-8", "replace")
                if op != ZkRequestGate.PING:
                    self.gate.pass_request(op, path)
            out.append(frame)
        return b"".join(out)


# ---------------------------------------------------------------------- etcd
BLIND_KEY = "/gwsync-test-blind/"


class EtcdWatchBlinder:
    """Per-connection filter: while state["blind"] is true, every HTTP request to
    .../watch whose JSON body has a create_request gets its key range replaced by
    BLIND_KEY's prefix (nothing is written there), so the watch is set and answers but
    never reports a change. Requests are parsed only as far as the head and a
    Content-Length body (what libcurl sends for a POST with a body); state["blinded"]
    counts the watches blinded."""

    def __init__(self, state):
        self.state = state
        self.buf = b""
        self.passthrough = False  # a body format not understood: forward as is

    def down(self, data):
        return data

    def up(self, data):
        if self.passthrough:
            return data
        self.buf += data
        out = []
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                break
            head = self.buf[:end].decode("latin-1")
            lines = head.split("\r\n")
            headers = {}
            for l in lines[1:]:
                k, _, v = l.partition(":")
                headers[k.strip().lower()] = v.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self.passthrough = True
                out.append(self.buf)
                self.buf = b""
                break
            n = int(headers.get("content-length", "0") or 0)
            if len(self.buf) < end + 4 + n:
                break
            body = self.buf[end + 4:end + 4 + n]
            self.buf = self.buf[end + 4 + n:]
            path = lines[0].split(" ")[1] if len(lines[0].split(" ")) > 1 else ""
            if path.endswith("/watch") and self.state.get("blind"):
                body = self._blind(body)
                lines = [l for l in lines if not l.lower().startswith("content-length:")]
                lines.append("Content-Length: %d" % len(body))
                head = "\r\n".join(lines)
            out.append(head.encode("latin-1") + b"\r\n\r\n" + body)
        return b"".join(out)

    def _blind(self, body):
        import base64
        try:
            doc = json.loads(body.decode("utf-8"))
        except ValueError:
            return body
        req = doc.get("create_request") if isinstance(doc, dict) else None
        if not isinstance(req, dict):
            return body
        req["key"] = base64.b64encode(BLIND_KEY.encode()).decode()
        end = BLIND_KEY[:-1] + chr(ord(BLIND_KEY[-1]) + 1)
        req["range_end"] = base64.b64encode(end.encode()).decode()
        self.state["blinded"] = self.state.get("blinded", 0) + 1
        return json.dumps(doc).encode("utf-8")


class EtcdEventDropper:
    """Per-connection filter: on a connection that carries a watch (the agent sent a
    request to .../watch), the streamed answer (HTTP/1.1 chunked, one JSON message per
    line) is decoded, and while state["drop_prefix"] is set, every event whose key starts
    with it is removed from its message; the rest of the stream, later events included,
    flows on. state["dropped"] counts the events lost."""

    def __init__(self, state):
        self.state = state
        self.watching = False
        self.head_done = False
        self.raw = b""      # bytes from the server not yet decoded
        self.body = b""     # decoded chunk data not yet split into lines
        self.chunked = True

    def up(self, data):
        if b"/watch " in data:
            self.watching = True
        return data

    def down(self, data):
        if not self.watching:
            return data
        self.raw += data
        out = []
        if not self.head_done:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return b""
            head = self.raw[:end + 4]
            self.raw = self.raw[end + 4:]
            self.head_done = True
            self.chunked = b"chunked" in head.lower()
            out.append(head)
        if not self.chunked:
            out.append(self.raw)
            self.raw = b""
            return b"".join(out)
        while True:  # decode whole chunks
            line_end = self.raw.find(b"\r\n")
            if line_end < 0:
                break
            size = int(self.raw[:line_end].split(b";")[0] or b"0", 16)
            if len(self.raw) < line_end + 2 + size + 2:
                break
            self.body += self.raw[line_end + 2:line_end + 2 + size]
            self.raw = self.raw[line_end + 2 + size + 2:]
            if size == 0:
                out.append(b"0\r\n\r\n")
                break
        while b"\n" in self.body:
            line, self.body = self.body.split(b"\n", 1)
            line = self._filter(line) + b"\n"
            out.append(b"%x\r\n%s\r\n" % (len(line), line))
        return b"".join(out)

    def _filter(self, line):
        import base64
        prefix = self.state.get("drop_prefix")
        if not prefix or b'"events"' not in line:
            return line
        try:
            doc = json.loads(line.decode("utf-8"))
            events = doc["result"]["events"]
        except (ValueError, KeyError, TypeError):
            return line
        keep = [e for e in events
                if not base64.b64decode(e.get("kv", {}).get("key", "")).decode(
                    "utf-8", "replace").startswith(prefix)]
        if len(keep) == len(events):
            return line
        self.state["dropped"] = self.state.get("dropped", 0) + len(events) - len(keep)
        doc["result"]["events"] = keep
        return json.dumps(doc).encode("utf-8")


def etcd_event_dropper(target_port):
    """(proxy, state): set state["drop_prefix"] = "/ns/shenyu/rule/" to lose those events."""
    state = {"drop_prefix": None, "dropped": 0}
    return Proxy(target_port, make_filter=lambda: EtcdEventDropper(state)), state


def etcd_watch_blinder(target_port):
    """(proxy, state): set state["blind"] = True before the agent opens its watches."""
    state = {"blind": False, "blinded": 0}
    return Proxy(target_port, make_filter=lambda: EtcdWatchBlinder(state)), state
