#!/usr/bin/env python3
"""A protocol-faithful stand-in for a Soul / Apache ShenYu admin's sync endpoints.

It speaks what gwsync must speak (see ../../../shared/PROTOCOL.md and README.md here):
  POST|GET /platform/login   token with a real lifetime (ShenYu modes)
  GET      /configs/fetch    {"code":200,"data":{GROUP:{md5,lastModifyTime,data}}}
  POST     /configs/listener md5 comparison, then a hold woken by any change
  GET      /websocket        WebSocket sync (ws_admin.py): MYSELF, events for every change
and a control interface under /_control/ for tests (control.py). Behaviour follows the
ShenYu admin sources (ConfigController, HttpLongPollingDataChangedListener,
StatelessAuthFilter, ExceptionHandlers): errors are HTTP 200 with a non-200 "code",
except the auth filter's HTTP 401.

Built on the standard library only (it must run wherever python3 does): a
ThreadingHTTPServer with HTTP/1.1 keep-alive, TCP_NODELAY on every accepted socket (or a
reused connection stalls ~40 ms on delayed ACK), loopback only. The first line on stdout
is "LISTENING 127.0.0.1 PORT", so `--port 0` works for tests.
"""
import argparse
import email.utils
import json
import os
import signal
import socket
import ssl
import struct
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, parse_qsl, urlencode, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dataset  # noqa: E402
import faults  # noqa: E402
import replies  # noqa: E402
import ws_admin  # noqa: E402
from control import Control  # noqa: E402
from state import GroupStore, RequestLog, Tokens  # noqa: E402

MODES = {
    # mode: (dataset flavour, login required, namespaceId required on fetch)
    "shenyu": ("shenyu", True, True),
    "shenyu-legacy": ("shenyu-legacy", True, False),
    "soul": ("soul", False, False),
}
KIND_BY_PATH = {"/platform/login": "login", "/configs/fetch": "fetch",
                "/configs/listener": "listener"}
RECORDED_HEADERS = ("X-Access-Token", "X-Real-PORT", "bootstrapInstanceInfo", "User-Agent",
                    "Accept-Encoding", "Content-Type", "Connection")
LOGIN_USER_DATES = "2022-05-25 18:02:52"


class Request:
    def __init__(self, method, path, query, form, body, headers, client):
        self.method = method
        self.path = path
        self.query = query
        self.form = form
        self.body = body
        self.headers = headers
        self.client = client

    def param(self, name):
        """First value, query string before form body, as a servlet's getParameter()."""
        for source in (self.query, self.form):
            if name in source:
                return source[name][0]
        return None

    def params(self, name):
        return self.query.get(name, []) + self.form.get(name, [])

    def header(self, name):
        return self.headers.get(name)

    def cookie(self, name):
        for part in (self.headers.get("Cookie") or "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                return v
        return None


def spring_error(status, path):
    """What Spring Boot answers for an unmapped path or method."""
    reason = {404: "Not Found", 405: "Method Not Allowed"}.get(status, "Error")
    return replies.doc_reply({"timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", time.gmtime()),
                              "status": status, "error": reason, "path": path}, status=status)


def not_supported(method, allowed):
    # Spring's HttpRequestMethodNotSupportedException through ShenYu's ExceptionHandlers.
    return replies.error("%s method is not supported for this request. Supported methods are %s "
                         % (method, allowed))


class Admin:
    """The emulated admin: protocol endpoints over the shared state."""

    def __init__(self, args, data, times):
        self.mode = args.mode
        flavour, self.needs_login, self.namespace_required = MODES[args.mode]
        groups = args.groups or dataset.groups_for(flavour)
        self.namespace = args.namespace
        self.username = args.username
        self.password = args.password
        self.login_get_only = args.login_get_only
        self.hold = float(args.hold)
        self.tls = bool(args.tls_cert)
        self.store = GroupStore(groups, data, times)
        self.tokens = Tokens(args.token_ttl)
        self.log = RequestLog(args.max_log)
        self.faults = faults.FaultSet()
        self.stopping = threading.Event()
        self.ws = ws_admin.WsHub(self, ws_admin.WsConfig(
            args.ws_version, enabled=not args.ws_disabled,
            allow_origins=(args.ws_allow_origins or "").split(";"), token=args.ws_token,
            cluster=args.ws_running_mode == "cluster", master=not args.ws_not_master,
            master_url=args.ws_master_url or "", fragment_size=args.ws_fragment_size,
            max_message=args.ws_max_message))

    def stop(self):
        self.stopping.set()
        self.store.stop()

    # ------------------------------------------------------------------ dispatch
    def handle(self, kind, req, entry):
        if kind in ("fetch", "listener") and self.needs_login:
            token = (req.header("X-Access-Token") or req.param("X-Access-Token")
                     or req.cookie("X-Access-Token"))
            if not self.tokens.check(token):
                self.log.count("token_errors")
                self.log.update(entry, token_ok=False)
                return replies.token_error()
        delay, fault, taken = (0.0, None, [])
        if kind in faults.ENDPOINTS:
            delay, fault, taken = self.faults.take(kind)
        if taken:
            self.log.count(*["faults." + t["kind"] for t in taken])
            self.log.update(entry, faults=[t["kind"] for t in taken])
        if delay > 0 and self.stopping.wait(delay):
            r = replies.Reply()
            r.drop = "close"
            return r
        if fault is not None and faults.phase(fault) == "before":
            return faults.replace(fault)
        reply = self.endpoint(kind, req, entry)
        if fault is not None and not faults.rewrite(fault, reply):
            self.log.update(entry, fault_not_applicable=fault.kind)
        return reply

    def endpoint(self, kind, req, entry):
        if kind == "login" and self.needs_login:
            return self.login(req, entry)
        if kind == "fetch":
            return self.fetch(req, entry)
        if kind == "listener":
            return self.listener(req, entry)
        return spring_error(404, req.path)

    # ------------------------------------------------------------------ login
    def login(self, req, entry):
        if req.method == "POST" and self.login_get_only:
            return spring_error(405, req.path)
        if req.method not in ("GET", "POST"):
            return not_supported(req.method, "GET POST")
        user = password = None
        if req.method == "POST" and req.body.strip()[:1] == b"{":
            try:
                doc = json.loads(req.body.decode("utf-8"))
                user, password = doc.get("userName"), doc.get("password")
            except (ValueError, UnicodeDecodeError, AttributeError):
                return replies.error("JSON parse error: the request body is not valid JSON")
        else:
            user, password = req.param("userName"), req.param("password")
        self.log.update(entry, user=user, login_method=req.method)
        if user != self.username or password != self.password:
            self.log.count("login.failed")
            return replies.error("username or password error")
        token, ttl = self.tokens.issue(user)
        self.log.count("login.ok")
        return replies.result(200, "login dashboard user success", {
            "id": "1", "userName": user, "role": 1, "enabled": True,
            "dateCreated": LOGIN_USER_DATES, "dateUpdated": LOGIN_USER_DATES,
            "token": token, "expiredTime": ttl})

    # ------------------------------------------------------------------ fetch
    def check_namespace(self, req, required):
        ns = req.param("namespaceId")
        if self.mode != "shenyu":
            return None
        if not ns:
            if required:
                return replies.error("namespaceId is null", 404)
            ns = dataset.DEFAULT_NAMESPACE
        if ns != self.namespace:
            return replies.error("namespace is not exist", 404)
        return None

    def fetch(self, req, entry):
        if req.method != "GET":
            return not_supported(req.method, "GET")
        bad = self.check_namespace(req, self.namespace_required)
        if bad is not None:
            return bad
        groups = []
        for value in req.params("groupKeys"):
            groups += [g for g in value.split(",") if g]
        self.log.update(entry, groups=groups)
        if not groups:
            return replies.error("groupKeys: must not be null")
        unknown = [g for g in groups if g not in self.store.current]
        if unknown:
            # ConfigGroupEnum.valueOf throws; the generic handler hides the reason.
            self.log.update(entry, error="unknown group " + ",".join(unknown))
            return replies.error(replies.BUSY)
        seen = []
        for g in groups:
            if g not in seen:
                seen.append(g)
        self.log.count("fetch.ok")
        return replies.fetch_reply([(g, self.store.served(g)) for g in seen])

    # ------------------------------------------------------------------ listener
    def listener(self, req, entry):
        if req.method != "POST":
            return not_supported(req.method, "POST")
        bad = self.check_namespace(req, False)
        if bad is not None:
            return bad
        params = {k: v[0] for k, v in req.form.items()}
        params.update({k: v[0] for k, v in req.query.items()})  # getParameter(): query first
        self.log.update(entry, params=params)
        client_md5 = {}
        for g in self.store.groups:
            raw = req.param(g)
            parts = [p for p in (raw or "").split(",") if p]
            if len(parts) != 2:
                self.log.count("listener.invalid")
                return replies.error("group param invalid:%s" % ("null" if raw is None else raw))
            client_md5[g] = parts[0]
        mark = self.store.change_mark()
        changed = self.store.changed_groups(client_md5)
        if changed:
            self.log.count("listener.immediate")
            return self.listener_reply(entry, changed, 0.0)
        t0 = time.monotonic()
        self.log.hold_begin()
        try:
            group = self.store.wait_change(mark, self.hold)
        finally:
            self.log.hold_end()
        held = time.monotonic() - t0
        if group is not None:
            self.log.count("listener.woken")
            return self.listener_reply(entry, [group], held)
        self.log.count("listener.timeout")
        return self.listener_reply(entry, self.store.changed_groups(client_md5), held)

    def listener_reply(self, entry, groups, held):
        self.log.update(entry, answer=groups, held_ms=round(held * 1000, 1))
        r = replies.result(200, "success", groups, newline=True)
        r.headers += [("Pragma", "no-cache"), ("Expires", "Thu, 01 Jan 1970 00:00:00 GMT"),
                      ("Cache-Control", "no-cache,no-store")]
        return r


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "shenyu-admin-emulator"
    sys_version = ""

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("emulator: %s %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self.route()

    do_POST = do_PUT = do_DELETE = do_GET

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        return self.rfile.read(length) if length else b""

    def route(self):
        try:
            body = self.read_body()
        except ValueError:
            self.close_connection = True
            self.send(replies.http_error(400))
            return
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        admin = self.server.admin
        if url.path.startswith("/_control/"):
            info = {"tcp_nodelay": self.nodelay(), "client_port": self.client_address[1]}
            status, doc = self.server.control.handle(self.command, url.path[len("/_control/"):],
                                                     query, body, info)
            self.send(replies.doc_reply(doc, status=status))
            return
        if url.path == "/websocket" and admin.ws.cfg.enabled:
            self.websocket(url, query, body)
            return
        form = {}
        ctype = (self.headers.get("Content-Type") or "").lower()
        if body and "application/x-www-form-urlencoded" in ctype:
            form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        headers = {k: v for k, v in self.headers.items()}
        lookup = {k.lower(): v for k, v in headers.items()}
        req = Request(self.command, url.path, query, form, body,
                      _Headers(lookup), self.client_address)
        kind = KIND_BY_PATH.get(url.path, "other")
        entry = admin.log.add(kind=kind, method=self.command, path=url.path,
                              query=_redact(url.query),
                              conn=self.client_address[1],
                              headers={h: lookup.get(h.lower()) for h in RECORDED_HEADERS
                                       if h.lower() in lookup})
        reply = admin.handle(kind, req, entry)
        admin.log.update(entry, status=reply.status, code=reply.code(), t_done=time.time(),
                         dropped=reply.drop)
        self.send(reply)

    def websocket(self, url, query, body):
        """GET /websocket: the upgrade, then the whole WebSocket session (ws_admin.py)."""
        admin = self.server.admin
        headers = {k: v for k, v in self.headers.items()}
        lookup = _Headers({k.lower(): v for k, v in headers.items()})
        req = Request(self.command, url.path, query, {}, body, lookup, self.client_address)
        entry = admin.log.add(kind="websocket", ws="handshake", method=self.command, path=url.path,
                              query=url.query, conn=self.client_address[1], headers=headers)
        reply = admin.ws.handshake(self, req, entry)
        if reply is None:           # the session ran and ended: so does the connection
            self.close_connection = True
            return
        admin.log.update(entry, status=reply.status, t_done=time.time(), dropped=reply.drop)
        self.send(reply)

    def nodelay(self):
        try:
            return self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        except OSError:
            return None

    def send(self, r):
        if r.drop:
            self.close_connection = True
            if r.drop == "reset":
                # Linger 0 and close now: the kernel answers with RST, not FIN.
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass
            return
        if r.trickle:
            self.send_trickled(r)
            return
        bent = r.chunked or r.pad_to or r.send_limit is not None
        pieces = [r.body] if bent else r.pieces()
        length = sum(len(p) for p in pieces)
        prefix, suffix, pad = b"", b"", 0
        if bent:
            prefix = r.body
            if r.pad_to and r.pad_to > length:
                cut = prefix.rfind(b"}")
                cut = cut if cut >= 0 else length
                prefix, suffix, pad = prefix[:cut], prefix[cut:], r.pad_to - length
        total = length + pad
        reason = self.responses.get(r.status, ("Error",))[0]
        head = ["HTTP/1.1 %d %s" % (r.status, reason),
                "Server: " + self.server_version,
                "Date: " + email.utils.formatdate(usegmt=True),
                "Content-Type: " + r.content_type]
        head += ["%s: %s" % kv for kv in r.headers]
        head.append("Transfer-Encoding: chunked" if r.chunked else "Content-Length: %d" % total)
        if r.send_limit is not None:
            self.close_connection = True
        elif self.close_connection:
            head.append("Connection: close")
        self.log_request(r.status, total)
        head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        if r.send_limit is not None:
            self.wfile.write(head_bytes + prefix[:r.send_limit])
        elif not bent and length <= 65536:
            self.wfile.write(head_bytes + b"".join(pieces))  # one write: one segment
        elif not bent:
            self.wfile.write(head_bytes)
            for piece in pieces:  # each group's cached text, never copied
                self.wfile.write(piece)
        else:
            self.wfile.write(head_bytes)
            for piece in _pieces(prefix, pad, suffix):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if r.chunked else piece)
            if r.chunked:
                self.wfile.write(b"0\r\n\r\n")


    def send_trickled(self, r):
        """The reply at r.trickle bytes a second (the headers at once unless
        r.trickle_head), one small write at a time, until it is out, the client gives up
        (a broken pipe ends it quietly) or the emulator stops."""
        body = r.body
        reason = self.responses.get(r.status, ("Error",))[0]
        head = ["HTTP/1.1 %d %s" % (r.status, reason), "Server: " + self.server_version,
                "Content-Type: " + r.content_type, "Content-Length: %d" % len(body)]
        head += ["%s: %s" % kv for kv in r.headers]
        head_bytes = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")
        self.log_request(r.status, len(body))
        data = body if not r.trickle_head else head_bytes + body
        step = max(1, int(r.trickle / 10))          # ten writes a second at most
        pause = step / r.trickle
        stopping = self.server.admin.stopping
        try:
            if not r.trickle_head:
                self.wfile.write(head_bytes)
                self.wfile.flush()
            for at in range(0, len(data), step):
                if stopping.wait(pause):
                    break
                self.wfile.write(data[at:at + step])
                self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True


def _redact(query):
    """The query string for the request log, without the login password."""
    if "password" not in query:
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, "***" if k == "password" else v) for k, v in pairs])


class _Headers(dict):
    def get(self, name, default=None):
        return dict.get(self, name.lower(), default)


def _pieces(prefix, pad, suffix, chunk=1 << 20):
    if prefix:
        yield prefix
    while pad > 0:
        n = min(pad, chunk)
        yield b" " * n
        pad -= n
    if suffix:
        yield suffix


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, port, admin, ssl_ctx, verbose, idle_timeout):
        self.admin = admin
        self.control = Control(admin)
        self.ssl_ctx = ssl_ctx
        self.verbose = verbose
        handler = type("BoundHandler", (Handler,), {"timeout": idle_timeout})
        super().__init__(("127.0.0.1", port), handler)

    def get_request(self):
        sock, addr = super().get_request()
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return sock, addr

    def finish_request(self, request, client_address):
        # TLS handshake here, in the connection's own thread, so a slow or broken client
        # never stalls the accept loop.
        if self.ssl_ctx is None:
            return super().finish_request(request, client_address)
        request.settimeout(10)
        try:
            tls = self.ssl_ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            if self.verbose:
                sys.stderr.write("emulator: TLS handshake with %s failed: %s\n" % (client_address, e))
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, ssl.SSLError, BrokenPipeError)):
            return
        sys.stderr.write("emulator: error serving %s:\n%s" % (client_address, traceback.format_exc()))


def parse_args(argv):
    ap = argparse.ArgumentParser(description="ShenYu / Soul admin emulator (see README.md).")
    ap.add_argument("--port", type=int, default=9095, help="0 picks a free port")
    ap.add_argument("--mode", choices=sorted(MODES), default="shenyu")
    ap.add_argument("--hold", type=float, default=60.0, help="listener hold, seconds")
    ap.add_argument("--username", default="admin")
    ap.add_argument("--password", default="123456")
    ap.add_argument("--token-ttl", type=int, default=86_400_000, help="token lifetime, ms")
    ap.add_argument("--login-get-only", action="store_true",
                    help="POST /platform/login answers HTTP 405 (an older admin)")
    ap.add_argument("--namespace", default=dataset.DEFAULT_NAMESPACE)
    ap.add_argument("--groups", type=lambda s: [g for g in s.split(",") if g],
                    help="override the groups this admin knows (comma-separated)")
    ap.add_argument("--dataset", metavar="FILE", help="load items from a JSON file")
    ap.add_argument("--seed", type=int, default=1)
    for name, default in dataset.DEFAULT_SIZES.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=None,
                        help="generated %s (default %d)" % (name.replace("_", " "), default))
    ap.add_argument("--tls-cert", metavar="FILE")
    ap.add_argument("--tls-key", metavar="FILE")
    ap.add_argument("--idle-timeout", type=float, default=300.0,
                    help="close a keep-alive connection idle this long, seconds")
    ap.add_argument("--max-log", type=int, default=100_000, help="request log entries kept")
    ap.add_argument("--verbose", action="store_true", help="one stderr line per request")
    ws = ap.add_argument_group("WebSocket sync (/websocket on the same port)")
    ws.add_argument("--ws-version", choices=ws_admin.VERSIONS,
                    help="admin generation whose WebSocket behaviour to follow (default by "
                         "--mode: shenyu 2.7.1, shenyu-legacy 2.5, soul 2.4; head with --ws-token)")
    ws.add_argument("--ws-disabled", action="store_true",
                    help="shenyu.sync.websocket.enabled=false: /websocket is a 404")
    ws.add_argument("--ws-allow-origins", metavar="A;B",
                    help="allowOrigins: the exact Origin values accepted (2.5+); empty: any")
    ws.add_argument("--ws-token", metavar="TOKEN",
                    help="shenyu.sync.websocket.token, checked against X-Shenyu-Sync-Token (head)")
    ws.add_argument("--ws-running-mode", choices=("standalone", "cluster"), default="standalone",
                    help="what RUNNING_MODE answers (2.7+)")
    ws.add_argument("--ws-not-master", action="store_true",
                    help="cluster mode, not the master: RUNNING_MODE says isMaster false and "
                         "nothing is pushed (MYSELF answered with nothing)")
    ws.add_argument("--ws-master-url", metavar="URL",
                    help="the master's http(s) URL reported by RUNNING_MODE in cluster mode "
                         "(default: this emulator's own URL)")
    ws.add_argument("--ws-fragment-size", type=int, default=8192, metavar="BYTES",
                    help="text messages longer than this go out fragmented (Tomcat: 8192); 0: never")
    ws.add_argument("--ws-max-message", type=int, default=10240, metavar="BYTES",
                    help="messageMaxSize: a longer client message is closed with 1009")
    args = ap.parse_args(argv)
    if args.ws_version is None:
        args.ws_version = "head" if args.ws_token else ws_admin.DEFAULT_VERSION[args.mode]
    elif args.ws_token and args.ws_version != "head":
        ap.error("--ws-token: only a head admin checks a sync token (use --ws-version head)")
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    if args.groups:
        bad = [g for g in args.groups if g not in dataset.SHENYU_GROUPS]
        if bad:
            ap.error("unknown group(s): " + ", ".join(bad))
    return args


def load_data(args):
    flavour = MODES[args.mode][0]
    groups = args.groups or dataset.groups_for(flavour)
    if args.dataset:
        data, times = dataset.load(args.dataset)
        extra = sorted(set(data) - set(groups))
        if extra:
            sys.stderr.write("emulator: %s: ignoring groups this admin does not know: %s\n"
                             % (args.dataset, ", ".join(extra)))
        return data, times
    sizes = {k: getattr(args, k) for k in dataset.DEFAULT_SIZES}
    return dataset.generate(args.seed, flavour, args.namespace, groups, **sizes), {}


def main(argv=None):
    args = parse_args(argv)
    data, times = load_data(args)
    admin = Admin(args, data, times)
    ssl_ctx = None
    if args.tls_cert:
        ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_ctx.load_cert_chain(args.tls_cert, args.tls_key)
    server = Server(args.port, admin, ssl_ctx, args.verbose, args.idle_timeout)
    port = server.server_address[1]
    if admin.ws.cfg.cluster and not admin.ws.cfg.master_url:
        admin.ws.cfg.master_url = "%s://127.0.0.1:%d" % ("https" if ssl_ctx else "http", port)

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stdout.write("LISTENING 127.0.0.1 %d\n" % port)
    sys.stdout.flush()
    summary = ", ".join("%s=%d" % (g, len(admin.store.current[g].items)) for g in admin.store.groups)
    sys.stderr.write("emulator: %s admin on %s://127.0.0.1:%d (hold %gs, %s)%s\n"
                     % (args.mode, "https" if ssl_ctx else "http", port, args.hold, summary,
                        "" if args.ws_disabled else ", websocket %s at %s://127.0.0.1:%d/websocket"
                        % (args.ws_version, "wss" if ssl_ctx else "ws", port)))
    sys.stderr.flush()
    try:
        server.serve_forever(poll_interval=0.5)
    except (SystemExit, KeyboardInterrupt):
        pass
    finally:
        admin.stop()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
