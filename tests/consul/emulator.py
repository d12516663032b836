#!/usr/bin/env python3
"""A Consul KV emulator (standard library, threaded): the part of Consul's HTTP API that
ShenYu's admin writes with and gwsync's consul: source reads with, following Consul's own
code (README.md names the version and file of each behaviour):

- GET /v1/kv/KEY (one key) and GET /v1/kv/PREFIX?recurse (every key below PREFIX, a pure
  string prefix), sorted by key, each entry {"LockIndex","Key","Flags","Value" (base64 or
  null),"CreateIndex","ModifyIndex"}; 404 (empty body) when nothing is there, with
  X-Consul-Index still set; ?keys lists the keys.
- Blocking queries: ?index=N&wait=D. index 0 or absent: answered at once. Else held until
  the prefix's index exceeds N or the wait runs out (default 5m, at most 10m, plus a random
  jitter of up to wait/16), then answered with whatever is there (the same index: no
  change). The index of a list is the highest ModifyIndex of its entries and tombstones
  (deleted keys); for a prefix that never held anything, the whole table's; never 0 (1).
- PUT /v1/kv/KEY (the body is the value; at most 512 KB: 413 above), DELETE /v1/kv/KEY and
  DELETE /v1/kv/PREFIX?recurse. Keys that begin with '/' are refused (400).
- ACLs (when `tokens` is given): the token from X-Consul-Token, ?token= or Authorization:
  Bearer; an unknown one is 403 "ACL not found"; a known one that may not read some keys
  sees them filtered out, with X-Consul-Results-Filtered-By-ACLs: true (not shown to the
  anonymous token); with key_list_policy, a token without list on the prefix is 403
  "Permission denied".

Faults, for the tests (attributes and methods of Emulator): reset_indexes() (the index
goes backwards: a snapshot restored into a new cluster), `immediate` (blocking queries
answered at once without a change), restart() (the listener and every connection closed,
the data kept), drop_holds() (held queries cut mid-hold), `trickle` (answers sent a few
bytes at a time), `foreign_404` (a 404 without X-Consul-Index, as a misrouted proxy gives), `flood` (an answer that never ends), `bad_body` ("nonjson",
"invalid_utf8", "deep", "huge"), `hide_prefix` (writes below it change the value without
moving any index: a change a blocking query cannot see; anti-entropy must).

Run alone (the demo): python3 emulator.py --port 8500
"""
import base64
import json
import random
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_WAIT_S = 300.0  # agent/consul/config.go DefaultQueryTime
MAX_WAIT_S = 600.0      # MaxQueryTime
JITTER_FRACTION = 16    # agent/structs JitterFraction
KV_MAX_VALUE_SIZE = 512 * 1024  # agent/config default kv_max_value_size

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text):
    """Go's time.ParseDuration: "5m", "1m30s", "250ms", "0"; None when invalid."""
    s = text
    sign = 1.0
    if s[:1] in "+-":
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        return None
    total, pos = 0.0, 0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if not m:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * total


class Store:
    """The KV table, its tombstones and the raft index, with a condition for watchers."""

    def __init__(self):
        self.cv = threading.Condition()
        self.entries = {}     # key -> dict(Value=bytes|None, CreateIndex, ModifyIndex, Flags)
        self.graveyard = {}   # key -> index of its deletion
        self.index = 10       # the raft index of the last write (a fresh server is ~10)
        self.generation = 0   # bumped when the whole state is "abandoned" (a restore)
        self.hide_prefix = None
        self.hidden = 0       # writes made invisible to blocking queries (hide_prefix)

    def _next(self):
        self.index += 1
        return self.index

    def put(self, key, value, flags=0):
        with self.cv:
            if self.hide_prefix is not None and key.startswith(self.hide_prefix) \
                    and key in self.entries:
                # the value changes, no index moves: a blocking query never wakes for it
                self.entries[key]["Value"] = value
                self.hidden += 1
                return
            idx = self._next()
            old = self.entries.get(key)
            self.entries[key] = {"Value": value, "Flags": flags, "ModifyIndex": idx,
                                 "CreateIndex": old["CreateIndex"] if old else idx}
            self.graveyard.pop(key, None)
            self.cv.notify_all()

    def delete(self, key, recurse=False):
        with self.cv:
            idx = self._next()
            gone = [k for k in self.entries if (k.startswith(key) if recurse else k == key)]
            for k in gone:
                del self.entries[k]
                self.graveyard[k] = idx
            if gone:
                self.cv.notify_all()
            return len(gone)

    def table_index(self):
        idx = 0
        for e in self.entries.values():
            idx = max(idx, e["ModifyIndex"])
        for i in self.graveyard.values():
            idx = max(idx, i)
        return idx

    def list(self, prefix):
        """(index, [(key, entry)]) as kvsListTxn: the max index of the entries and
        tombstones below prefix, else the whole table's; sorted by key."""
        items = sorted((k, e) for k, e in self.entries.items() if k.startswith(prefix))
        lindex = 0
        for _, e in items:
            lindex = max(lindex, e["ModifyIndex"])
        if prefix:
            for k, i in self.graveyard.items():
                if k.startswith(prefix):
                    lindex = max(lindex, i)
        else:
            lindex = self.table_index()
        return (lindex or self.table_index()), items

    def get(self, key):
        e = self.entries.get(key)
        if e is None:
            return (self.graveyard.get(key) or self.table_index()), []
        return e["ModifyIndex"], [(key, e)]

    def reset_indexes(self):
        """Renumber everything from 1, the data kept: what a snapshot restored into a new
        cluster looks like to a client holding a high index."""
        with self.cv:
            n = 0
            for k in sorted(self.entries):
                n += 1
                self.entries[k]["ModifyIndex"] = n
                self.entries[k]["CreateIndex"] = n
            self.graveyard.clear()
            self.index = n + 1
            self.generation += 1
            self.cv.notify_all()


def entry_json(key, e):
    v = e["Value"]
    return {"LockIndex": 0, "Key": key, "Flags": e.get("Flags", 0),
            "Value": base64.b64encode(v).decode("ascii") if v else None,
            "CreateIndex": e["CreateIndex"], "ModifyIndex": e["ModifyIndex"]}


class Emulator:
    """One emulated Consul agent+server on 127.0.0.1:port. tokens: None (ACLs off), or
    {token: [key prefixes it may read]} ("" = everything)."""

    def __init__(self, port=0, tokens=None, key_list_policy=False, tls=None):
        """tls: {"cert", "key"} (harness.make_test_ca) serves https."""
        self.tls = tls
        self.store = Store()
        self.tokens = tokens
        self.key_list_policy = key_list_policy
        self.immediate = False
        self.trickle = None   # bytes per write, slept 50 ms between writes
        self.flood = False
        self.bad_body = None
        self.huge_bytes = 8 << 20  # the size of a "huge" body
        self.foreign_404 = False   # every GET answered 404 without X-Consul-Index (a proxy)
        self.requests = []    # (monotonic time, method, path with query) of every request
        self.lock = threading.Lock()
        self.conns = set()    # sockets of requests in progress
        self.port = port
        self.httpd = None
        self.thread = None
        self.start()

    # -------------------------------------------------------------- lifecycle
    def start(self):
        emu = self

        class Handler(_Handler):
            pass
        Handler.emu = emu
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.allow_reuse_address = True
        if self.tls:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls["cert"], self.tls["key"])
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def close(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        self.drop_holds()

    def restart(self, i=0, down_s=0.0):
        """Every connection closed and the listener gone for down_s, the data kept (Consul
        persists its raft log); the same port again."""
        self.close()
        if down_s:
            time.sleep(down_s)
        for _ in range(50):
            try:
                self.start()
                return
            except OSError:
                time.sleep(0.1)
        self.start()

    def drop_holds(self):
        """Cut every request in progress (a held blocking query) without an answer."""
        with self.lock:
            conns = list(self.conns)
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self.store.cv:
            self.store.cv.notify_all()

    # -------------------------------------------------------------- for tests
    def gets(self, since=0.0):
        """The GETs of the KV API made at or after monotonic time `since`."""
        with self.lock:
            return [r for r in self.requests if r[0] >= since and r[1] == "GET"]

    def reset_indexes(self):
        self.store.reset_indexes()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    emu = None

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        with self.emu.lock:
            self.emu.conns.add(self.connection)

    def finish(self):
        with self.emu.lock:
            self.emu.conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    # -------------------------------------------------------------- replies
    def reply(self, status, body=b"", headers=(), ctype="application/json", faults=False):
        """faults: the KV answer of a GET, which the trickle and flood faults apply to."""
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if self.emu.flood and status == 200 and faults:
            self.send_header("Content-Type", ctype)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"[" + b'{"Key":"x","ModifyIndex":1,"Value":null},' * 2000
            try:
                while self.emu.flood:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except OSError:
                pass
            self.close_connection = True
            return
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = self.emu.trickle if faults else None
        try:
            if step:
                for i in range(0, len(body), step):
                    self.wfile.write(body[i:i + step])
                    self.wfile.flush()
                    time.sleep(0.05)
            else:
                self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def error(self, status, text):
        self.reply(status, text.encode("utf-8"), ctype="text/plain; charset=utf-8")

    def meta(self, index):
        # agent/http.go setMeta: the index, never 0 for a blocking client (rpc.go)
        return [("X-Consul-Index", str(max(index, 1))), ("X-Consul-KnownLeader", "true"),
                ("X-Consul-LastContact", "0")]

    def token(self, q):
        # agent/http.go parseTokenInternal: ?token, then X-Consul-Token, then Bearer
        t = q["token"][0] if q.get("token", [""])[0] else None
        if not t:
            t = self.headers.get("X-Consul-Token")
        if not t:
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                t = auth[7:].strip()
        return t or ""

    def may_read(self, token, key):
        if self.emu.tokens is None:
            return True
        return any(key.startswith(p) for p in self.emu.tokens.get(token, []))

    # -------------------------------------------------------------- the KV API
    def kv_key(self):
        path = urllib.parse.urlsplit(self.path).path
        if not path.startswith("/v1/kv/"):
            return None
        return urllib.parse.unquote(path[len("/v1/kv/"):])

    def do_GET(self):
        with self.emu.lock:
            self.emu.requests.append((time.monotonic(), "GET", self.path))
        key = self.kv_key()
        if key is None or self.emu.foreign_404:
            return self.error(404, "not found")
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                  keep_blank_values=True)
        wait = DEFAULT_WAIT_S
        if q.get("wait", [""])[0] != "":
            d = parse_duration(q["wait"][0])
            if d is None:
                return self.error(400, "Invalid wait time")
            wait = d
        min_index = 0
        if q.get("index", [""])[0] != "":
            try:
                min_index = int(q["index"][0])
                if min_index < 0 or min_index >= 1 << 64:
                    raise ValueError
            except ValueError:
                return self.error(400, "Invalid index")
        if key.startswith("/"):
            return self.error(400, "key must not begin with a '/'")
        recurse = "recurse" in q
        if not recurse and key == "" and "keys" not in q:
            return self.error(400, "Missing key name")
        token = self.token(q)
        if self.emu.tokens is not None and token and token not in self.emu.tokens:
            return self.error(403, "ACL not found")
        if self.emu.tokens is not None and self.emu.key_list_policy and recurse \
                and not self.may_read(token, key):
            return self.error(403, "Permission denied")
        store = self.emu.store

        def query():
            idx, items = store.list(key) if (recurse or "keys" in q) else store.get(key)
            if not recurse and "keys" not in q and items and not self.may_read(token, key):
                return idx, None, False  # KVS.Get: permission denied
            seen = [(k, e) for k, e in items if self.may_read(token, k)]
            return idx, seen, len(seen) != len(items)

        # agent/blockingquery/blockingquery.go: blocking when index > 0
        with store.cv:
            idx, items, filtered = query()
            if min_index > 0 and not self.emu.immediate:
                if wait <= 0:
                    wait = DEFAULT_WAIT_S
                wait = min(wait, MAX_WAIT_S)
                wait += random.uniform(0, wait / JITTER_FRACTION)
                deadline = time.monotonic() + wait
                gen = store.generation
                while idx <= min_index:
                    left = deadline - time.monotonic()
                    if left <= 0 or store.generation != gen or self.cut():
                        break
                    store.cv.wait(min(left, 0.5))
                    idx, items, filtered = query()
            body_items = [entry_json(k, e) for k, e in items] if items is not None else None
        if self.cut():
            self.close_connection = True
            return
        if items is None:
            return self.error(403, "Permission denied")
        headers = self.meta(idx)
        if filtered and token:
            headers.append(("X-Consul-Results-Filtered-By-ACLs", "true"))
        if not body_items:
            return self.reply(404, b"", headers, faults=True)
        if "keys" in q:
            body = json.dumps([x["Key"] for x in body_items]).encode("utf-8")
        else:
            body = json.dumps(body_items, separators=(",", ":")).encode("utf-8")
        bad = self.emu.bad_body
        if bad == "nonjson":
            body = b"<html><body>502 Bad Gateway</body></html>"
        elif bad == "invalid_utf8":
            body = body.replace(b'"Key":"', b'"Key":"\xff\xfe', 1)
        elif bad == "deep":
            body = b'[{"Key":"x","ModifyIndex":1,"Extra":' + b"[" * 100000 + b"]" * 100000 + b"}]"
        elif bad == "huge":
            body = b'[{"Key":"x","ModifyIndex":1,"Value":"' + b"QUFB" * (self.emu.huge_bytes // 4) + b'"}]'
        self.reply(200, body, headers, faults=True)

    def cut(self):
        """The connection was dropped under the request (drop_holds, restart)."""
        try:
            self.connection.getpeername()
            return self.emu.httpd is None
        except OSError:
            return True

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_PUT(self):
        with self.emu.lock:
            self.emu.requests.append((time.monotonic(), "PUT", self.path))
        key = self.kv_key()
        if key is None:
            return self.error(404, "not found")
        n = int(self.headers.get("Content-Length") or 0)
        if key == "":
            self.read_body()
            return self.error(400, "Missing key name")
        if key.startswith("/"):
            self.read_body()
            return self.error(400, "key must not begin with a '/'")
        if n > KV_MAX_VALUE_SIZE:
            # agent/kvs_endpoint.go KVSPut: refused by its Content-Length. The body is read
            # and dropped here so the client always sees the 413 (Go's server drains up to
            # 256 KB and then closes, which a client still sending may see as a reset)
            self.read_body()
            return self.error(413, "Request body(%d bytes) too large, max size: %d bytes. "
                              "See https://developer.hashicorp.com/docs/agent/config/"
                              "config-files#kv_max_value_size." % (n, KV_MAX_VALUE_SIZE))
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        token = self.token(q)
        if self.emu.tokens is not None and token and token not in self.emu.tokens:
            self.read_body()
            return self.error(403, "ACL not found")
        value = self.read_body()
        self.emu.store.put(key, value if value else None,
                           int(q.get("flags", ["0"])[0] or 0))
        self.reply(200, b"true")

    def do_DELETE(self):
        with self.emu.lock:
            self.emu.requests.append((time.monotonic(), "DELETE", self.path))
        key = self.kv_key()
        if key is None:
            return self.error(404, "not found")
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                  keep_blank_values=True)
        recurse = "recurse" in q
        if key == "" and not recurse:
            return self.error(400, "Missing key name")
        if key.startswith("/"):
            return self.error(400, "key must not begin with a '/'")
        self.emu.store.delete(key, recurse)
        self.reply(200, b"true")


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8500)
    ap.add_argument("--token", action="append", default=[],
                    help="an ACL token that may read everything (ACLs on when given)")
    args = ap.parse_args(argv)
    emu = Emulator(args.port, tokens={t: [""] for t in args.token} if args.token else None)
    print("consul emulator on %s" % emu.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        emu.close()


if __name__ == "__main__":
    main(sys.argv[1:])
