"""Small upstream HTTP servers for the end-to-end gateway tests (standard library only).

Each server answers every request (any method, any path) with 200, the header
`X-Upstream: <name>` and a one-line JSON body naming itself and echoing what it received
(method, raw path, query), so a test can tell which upstream nginx chose and that the
request line travelled unchanged.

They run in a child process (`python3 upstreams.py NAME...`), not in the test process:
the load generator's client threads and these server threads would otherwise share one
GIL, and the rate the tests need (hundreds of requests per second) would then depend on
how Python schedules them rather than on nginx. The child prints one line
`LISTENING <name> <port>` per server, then `READY`, and exits on SIGTERM.

Servers speak HTTP/1.1 with keep-alive (nginx pools upstream connections) and set
TCP_NODELAY: without it a reply on a reused connection can stall on delayed ACK.
"""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "e2e-upstream"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        path, _, query = self.path.partition("?")
        name = self.server.upstream_name
        body = (json.dumps({"upstream": name, "method": self.command, "path": path,
                            "query": query, "host": self.headers.get("Host", "")},
                           separators=(",", ":")) + "\n").encode("utf-8")
        self.send_response(200)
        self.send_header("X-Upstream", name)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _answer

    def log_message(self, *args):
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


def serve(names):
    """Run in the child: one server per name on a free loopback port, until SIGTERM."""
    servers = []
    for name in names:
        srv = _Server(("127.0.0.1", 0), _Handler)
        srv.upstream_name = name
        servers.append(srv)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        print("LISTENING %s %d" % (name, srv.server_address[1]), flush=True)
    print("READY", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    while not stop.wait(0.5):
        pass
    for srv in servers:
        srv.shutdown()
    return 0


class Upstreams:
    """The child process with its servers: `.ports[name]`, `.url(name)` ("127.0.0.1:port")."""

    def __init__(self, names=("up-a", "up-b", "up-c")):
        self.names = list(names)
        self.ports = {}
        self.proc = None

    def start(self, timeout=10.0):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)] + self.names,
                                     stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        buf = b""
        while b"READY\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.close()
                raise AssertionError("upstream servers did not start: %r" % buf)
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                self.close()
                raise AssertionError("upstream servers exited: %r" % buf)
            buf += chunk
        for line in buf.decode().splitlines():
            parts = line.split()
            if parts and parts[0] == "LISTENING":
                self.ports[parts[1]] = int(parts[2])
        return self

    def url(self, name):
        return "127.0.0.1:%d" % self.ports[name]

    def name_of(self, url):
        for name in self.names:
            if self.url(name) == url:
                return name
        return None

    def close(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:] or ["up-a"]))
