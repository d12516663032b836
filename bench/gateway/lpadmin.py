#!/usr/bin/env python3
"""A long-polling admin for figure 11's end-to-end rows: the admin's HTTP sync protocol
(/shared/PROTOCOL.md: /platform/login, /configs/fetch, /configs/listener with md5
comparison and a 60 s hold) over the group lists scaledata.py writes, changed one item at a
time on command, and saying when it told the agent.

    lpadmin.py DATASET_DIR        (stdout: "LISTENING PORT"; then commands on stdin)
    put GROUP OFFSET LEN\\n<LEN bytes>\\n   -> "ok T_NS": when the answer to the held listener
                                           that announced the change was written
                                           (CLOCK_MONOTONIC ns), or "ok -1" if none came in 30 s

Why not the admin emulator (tests/admin): its change re-encodes the whole group and its md5
in Python, about 3.5 s for 100,000 rules on the bench machine, which would be most of an
"admin change -> routed" figure and a core taken from the gateway under test. Here a change
splices the new item's bytes into the group's text (the harness keeps every item's length)
and tags the version with a counter, as bench/fastadmin.c does; the text the agent fetches
is exactly scaledata.py's. The same command as bench/cachewriter's, so one Change object
drives either. Any login is accepted; groups it does not hold are served empty.
"""
import json
import os
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HOLD = 60.0
JSON = "application/json;charset=UTF-8"


class State:
    def __init__(self, path):
        self.cond = threading.Condition()
        self.text, self.md5, self.lmt = {}, {}, {}
        self.changes = 0
        self.answers = []        # (group, version, t_ns) of listener answers written
        with open(os.path.join(path, "manifest")) as f:
            for line in f:
                g, md5, lmt = line.split()
                with open(os.path.join(path, g + ".json"), "rb") as t:
                    self.text[g] = t.read()
                self.md5[g], self.lmt[g] = md5, int(lmt)

    def put(self, group, off, data):
        with self.cond:
            old = self.text[group]
            if off + len(data) > len(old) or old[off:off + 1] != b"{" or data[:1] != b"{":
                raise ValueError("%s: bytes %d+%d are not one item" % (group, off, len(data)))
            self.text[group] = old[:off] + data + old[off + len(data):]
            self.changes += 1
            self.md5[group] = "1a7e%028x" % self.changes
            self.lmt[group] += 1
            version = self.changes
            self.cond.notify_all()
            deadline = time.monotonic() + 30
            while True:
                for g, v, t in self.answers:
                    if g == group and v >= version:
                        return t
                left = deadline - time.monotonic()
                if left <= 0:
                    return -1
                self.cond.wait(left)

    def changed(self, client):
        return [g for g in self.text if client.get(g, "").split(",")[0] != self.md5[g]]


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def reply(self, pieces, newline=False):
            body = list(pieces) + ([b"\n"] if newline else [])
            self.send_response(200)
            self.send_header("Content-Type", JSON)
            self.send_header("Content-Length", str(sum(len(p) for p in body)))
            self.end_headers()
            for p in body:
                self.wfile.write(p)
            self.wfile.flush()

        def doc(self, doc, newline=False):
            self.reply([json.dumps(doc, separators=(",", ":")).encode()], newline)

        def params(self):
            url = urlsplit(self.path)
            out = parse_qs(url.query)
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            if body and not body.lstrip().startswith(b"{"):
                for k, v in parse_qs(body.decode()).items():
                    out.setdefault(k, []).extend(v)
            return url.path, out

        def do_GET(self):
            self.route()

        def do_POST(self):
            self.route()

        def route(self):
            path, params = self.params()
            if path == "/platform/login":
                self.doc({"code": 200, "message": "login dashboard user success",
                          "data": {"id": "1", "userName": "admin", "token": "bench-token",
                                   "expiredTime": 86400000}})
            elif path == "/configs/fetch":
                groups = []
                for v in params.get("groupKeys", []):
                    groups += [g for g in v.split(",") if g and g not in groups]
                pieces = [b'{"code":200,"message":"success","data":{']
                with state.cond:
                    for i, g in enumerate(groups):
                        text = state.text.get(g, b"[]")
                        md5 = state.md5.get(g, "d751713988987e9331980363e24189ce")
                        head = '%s"%s":{"md5":"%s","lastModifyTime":%d,"data":' % (
                            "," if i else "", g, md5, state.lmt.get(g, 1700000000000))
                        pieces += [head.encode(), text, b"}"]
                pieces.append(b"}}")
                self.reply(pieces)
            elif path == "/configs/listener":
                client = {k: v[0] for k, v in params.items()}
                with state.cond:
                    deadline = time.monotonic() + HOLD
                    changed = state.changed(client)
                    while not changed and time.monotonic() < deadline:
                        state.cond.wait(deadline - time.monotonic())
                        changed = state.changed(client)
                    version = state.changes
                self.doc({"code": 200, "message": "success", "data": changed}, newline=True)
                t = time.monotonic_ns()
                with state.cond:
                    state.answers = state.answers[-50:] + [(g, version, t) for g in changed]
                    state.cond.notify_all()
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
    return Handler


def main():
    state = State(sys.argv[1])
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("LISTENING %d" % server.server_address[1], flush=True)
    inp = sys.stdin.buffer
    while True:
        line = inp.readline()
        if not line or line.startswith(b"quit"):
            break
        _, group, off, n = line.split()
        data = inp.read(int(n) + 1)[:-1]
        try:
            print("ok %d" % state.put(group.decode(), int(off), data), flush=True)
        except (ValueError, KeyError) as e:
            print("err %s" % e, flush=True)
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
