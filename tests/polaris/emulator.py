"""A Polaris config-center emulator: the plain HTTP client API of polarismesh/polaris
(GetConfigFile, WatchConfigFile) as its code answers, plus the console side a publisher
uses (create/update a file, release it, delete it) as in-process calls. Python stdlib,
one thread per connection. README.md beside this file names the Polaris file each
behaviour comes from.

The emulator keeps, per (namespace, group, fileName), the draft content and the active
release (content, md5, version). Every release bumps the file's version by one (the store
writes maxVersion + 1). A watch is answered at once when a watched file has an active
release newer than the version the client sent, else held `hold` seconds (30 by default)
and answered "data no change", or as soon as a watched file is released newer.

Faults (fault(kind, **params), each for the next `count` matching requests; clear_faults()):
  drop         close the connection without an answer (on a watch: once it is held)
  non_json     answer 200 with a body that is not JSON
  bad_utf8     answer a GetConfigFile with content holding invalid UTF-8 bytes
  trickle      send the answer one byte every `delay` seconds
  flood        answer 200 and send `size` bytes of JSON-looking garbage
  huge         answer a syntactically valid JSON document of `size` bytes
  deep         answer a JSON document nested `depth` levels deep
  http500      answer 500 with an HTML body
  nohold       answer a watch "no change" at once instead of holding it (a file already
               newer is still named at once)
Plus restart() (the listening socket closed and opened again on the same port, state
kept, held watches cut) and drop_holds() (every held watch cut at once).

Run alone (`python3 emulator.py --port P`), it also takes POST /_control/publish
{fileName: content, ...} (not Polaris's: the bench's writes from another process, so the
emulator's CPU is its own; each file updated and released, in order).
"""
import hashlib
import http.server
import json
import random
import socket
import socketserver
import sys
import threading
import time
import urllib.parse

# common/api/v1 codes (polarismesh/specification api/v1/model/code.proto)
EXECUTE_SUCCESS = 200000
DATA_NO_CHANGE = 200001
BAD_REQUEST = 400000
PARSE_EXCEPTION = 400001
NOT_FOUND_RESOURCE = 400202
INVALID_WATCH_FORMAT = 400806
TOKEN_NOT_EXISTED = 401004
EXECUTE_EXCEPTION = 500000
INFO = {
    EXECUTE_SUCCESS: "execute success",
    DATA_NO_CHANGE: "discover data is no change",
    BAD_REQUEST: "bad request",
    PARSE_EXCEPTION: "request decode failed",
    NOT_FOUND_RESOURCE: "not found resource",
    INVALID_WATCH_FORMAT: "invalid watch config file format",
    TOKEN_NOT_EXISTED: "token not existed",
    EXECUTE_EXCEPTION: "execute exception",
}
TOKEN_HEADER = "X-Polaris-Token"  # common/utils/const.go HeaderAuthTokenKey


def go_json(obj):
    """jsonpb.Marshaler{Indent: " ", EmitDefaults: true}: one-space indent, and Go's string
    escaping (< > & U+2028 U+2029 as \\uXXXX, other characters as they are)."""
    text = json.dumps(obj, indent=1, ensure_ascii=False)
    for c, e in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(c, e)
    return text.encode("utf-8")


def md5_hex(content):
    return hashlib.md5(content.encode("utf-8")).hexdigest()


class _Watch:
    """One held WatchConfigFile (config/watcher.go LongPollWatchContext): answered once."""

    def __init__(self, files):
        self.files = files  # {(ns, group, name): version}
        self.event = threading.Event()
        self.reply = None
        self.cut = False

    def answer(self, reply):
        if not self.event.is_set():
            self.reply = reply
            self.event.set()


class PolarisEmulator:
    def __init__(self, port=0, token=None, hold=30.0, host="127.0.0.1"):
        self.host = host
        self.port = port
        self.token = token
        self.hold = hold
        self.mu = threading.RLock()
        # (ns, group, name) -> {"draft": text or None, "max": the highest version,
        #                      "release": {content, md5, version} or None}
        self.files = {}
        self.watchers = {}  # key -> set(_Watch)
        self.faults = []  # [{"kind", "count", "path", params...}]
        self.requests = []  # (kind, detail) of every client request, oldest first
        self.server = None
        self.thread = None

    # ------------------------------------------------------------------ lifecycle
    def start(self):
        emu = self

        class Handler(_Handler):
            emulator = emu

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

            def handle_error(self, request, client_address):
                # a client that hung up mid-answer (a cancelled watch) is not news
                if not isinstance(sys.exc_info()[1], OSError):
                    super().handle_error(request, client_address)

        self.server = Server((self.host, self.port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        self.drop_holds()

    close = stop

    def restart(self, down=0.0):
        """The server goes away (held watches cut, connections refused for `down`
        seconds) and comes back on the same port with the same data."""
        self.stop()
        time.sleep(down)
        self.start()

    @property
    def url(self):
        return "http://%s:%d" % (self.host, self.port)

    def drop_holds(self):
        with self.mu:
            held = {w for ws in self.watchers.values() for w in ws}
            self.watchers = {}
        for w in held:
            w.cut = True
            w.answer(None)

    # ------------------------------------------------------------------ console side
    def _file(self, ns, group, name):
        return self.files.setdefault((ns, group, name), {"draft": None, "release": None, "max": 0})

    def create_file(self, ns, group, name, content):
        with self.mu:
            f = self._file(ns, group, name)
            f["draft"] = content

    update_file = create_file

    def release_file(self, ns, group, name, notify=True):
        """Publish the draft: version = the file's highest version + 1, watchers told
        (notify=False: a release whose event is lost, for anti-entropy tests)."""
        with self.mu:
            f = self._file(ns, group, name)
            if f["draft"] is None:
                raise KeyError("no file %s/%s/%s to release" % (ns, group, name))
            f["max"] += 1
            rel = {"content": f["draft"], "md5": md5_hex(f["draft"]), "version": f["max"]}
            f["release"] = rel
            key = (ns, group, name)
            for w in list(self.watchers.get(key, ()) if notify else ()):
                if w.files.get(key, 0) < rel["version"]:
                    self._unwatch(w)
                    w.answer((200, go_json(_response(EXECUTE_SUCCESS, _notify_info(key, rel)))))

    def publish(self, ns, group, name, content):
        self.create_file(ns, group, name, content)
        self.release_file(ns, group, name)

    def delete_file(self, ns, group, name):
        """The operator deletes the file and its releases: GetConfigFile answers not found."""
        with self.mu:
            self.files.pop((ns, group, name), None)

    def released(self, ns, group, name):
        """The active release {content, md5, version} or None."""
        with self.mu:
            f = self.files.get((ns, group, name))
            return dict(f["release"]) if f and f["release"] else None

    def file_names(self, ns, group):
        with self.mu:
            return sorted(k[2] for k, f in self.files.items()
                          if k[0] == ns and k[1] == group and f["release"])

    def wipe(self):
        with self.mu:
            self.files = {}

    # ------------------------------------------------------------------ faults, log
    def fault(self, kind, count=1, path=None, **params):
        """Misbehave on the next `count` requests (of `path`, a substring, if given)."""
        with self.mu:
            self.faults.append(dict(params, kind=kind, count=count, path=path))

    def clear_faults(self):
        with self.mu:
            self.faults = []

    def take_fault(self, path):
        with self.mu:
            for f in self.faults:
                if f["count"] > 0 and (f["path"] is None or f["path"] in path):
                    f["count"] -= 1
                    return f
        return None

    def log(self, kind, detail):
        with self.mu:
            self.requests.append((kind, detail))

    def count(self, kind, since=0):
        with self.mu:
            return sum(1 for k, _ in self.requests[since:] if k == kind)

    def mark(self):
        with self.mu:
            return len(self.requests)

    def since(self, mark, kind=None):
        with self.mu:
            return [d for k, d in self.requests[mark:] if kind is None or k == kind]

    # ------------------------------------------------------------------ client API
    def get_config_file(self, ns, group, name, version):
        """config/client.go GetConfigFileWithCache (with the paramcheck interceptor)."""
        for value, what in ((ns, "namespace is empty"), (group, "file group is empty"),
                            (name, "filename is empty")):
            if not value:
                return 400, _response(BAD_REQUEST, None, info=what)
        req = {"namespace": ns, "group": group, "fileName": name, "content": None,
               "version": str(version), "md5": None,
               "tags": [{"key": "internal-client-ip", "value": "127.0.0.1"}]}
        with self.mu:
            f = self.files.get((ns, group, name))
            rel = f["release"] if f else None
            if rel is None:
                return 400, _response(NOT_FOUND_RESOURCE, _full_info(req))
            if version > rel["version"]:
                return 200, _response(DATA_NO_CHANGE, _full_info(req))
            info = {"namespace": ns, "group": group, "fileName": name,
                    "content": rel["content"], "version": str(rel["version"]),
                    "md5": rel["md5"], "tags": [], "encrypted": False}
            return 200, _response(EXECUTE_SUCCESS, _full_info(info))

    def watch(self, files):
        """config/client.go LongPullWatchFile: a quick answer if a watched file is already
        newer, else a _Watch registered for every file."""
        if not files:
            return _response(INVALID_WATCH_FORMAT, None), None
        for (ns, group, name) in files:
            for value, what in ((ns, "namespace is empty"), (group, "file group is empty"),
                                (name, "filename is empty")):
                if not value:
                    return _response(BAD_REQUEST, None, info=what), None
        with self.mu:
            keys = list(files)
            random.shuffle(keys)  # Go's map iteration order
            for key in keys:
                f = self.files.get(key)
                rel = f["release"] if f else None
                if rel is not None and files[key] < rel["version"]:
                    return _response(EXECUTE_SUCCESS, _notify_info(key, rel)), None
            w = _Watch(dict(files))
            for key in files:
                self.watchers.setdefault(key, set()).add(w)
            return None, w

    def _unwatch(self, w):
        for key in w.files:
            s = self.watchers.get(key)
            if s is not None:
                s.discard(w)
                if not s:
                    del self.watchers[key]

    def expire(self, w):
        with self.mu:
            self._unwatch(w)
        w.answer((200, go_json(_NOT_MODIFIED)))


# watcher.go notModifiedResponse: a code and nothing else (EmitDefaults writes the rest null)
_NOT_MODIFIED = {"code": DATA_NO_CHANGE, "info": None, "configFile": None}


def _full_info(d):
    """A ClientConfigFileInfo as jsonpb writes it with EmitDefaults (json_name keys)."""
    out = {"namespace": None, "group": None, "fileName": None, "content": None,
           "version": None, "md5": None, "tags": [], "encrypted": None, "publicKey": None,
           "name": None, "release_time": None, "client_type": "SDK",
           "supported_client": "DEFAULT", "persistent": None}
    out.update(d)
    return out


def _notify_info(key, rel):
    """common/model/config_file.go ToSpecNotifyClientRequest / watcher.go buildRet."""
    ns, group, name = key
    return _full_info({"namespace": ns, "group": group, "fileName": name, "name": "",
                       "md5": rel["md5"], "version": str(rel["version"])})


def _response(code, info_obj, info=None):
    return {"code": code, "info": info if info is not None else INFO.get(code, ""),
            "configFile": info_obj}


def _wrapped(v):
    """A google.protobuf wrapper value as jsonpb reads it: the bare value, or (accepted by
    the Go unmarshaler too) {"value": v}."""
    if isinstance(v, dict):
        return v.get("value")
    return v


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    emulator = None  # set by the subclass start() makes

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # headers and body leave in two writes: without this, Nagle and the client's
        # delayed ACK add 40 ms to every answer
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # ------------------------------------------------------------------ plumbing
    def _authorized(self):
        tok = self.emulator.token
        return tok is None or self.headers.get(TOKEN_HEADER) == tok

    def _send(self, status, body, fault=None, ctype="application/json"):
        if fault and fault["kind"] == "trickle":
            head = ("HTTP/1.1 %d OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                    % (status, ctype, len(body))).encode()
            self.wfile.write(head)
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(fault.get("delay", 0.5))
            return
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _faulty(self, fault):
        """Answer as the fault says; True if the request is answered (or cut)."""
        kind = fault["kind"]
        if kind == "drop":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return True
        if kind == "non_json":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", ctype="text/html")
            return True
        if kind == "http500":
            self._send(500, b"<html>internal error</html>", ctype="text/html")
            return True
        if kind == "flood":
            size = fault.get("size", 256 << 20)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b'{"code":200000,"info":"' + b"x" * 65000
            sent = 0
            try:
                while sent < size:
                    n = min(len(chunk), size - sent)
                    self.wfile.write(chunk[:n])
                    sent += n
            except OSError:
                pass
            self.close_connection = True
            return True
        if kind == "huge":
            size = fault.get("size", 80 << 20)
            body = b'{"code":200000,"info":"' + b"y" * size + b'","configFile":null}'
            self._send(200, body)
            return True
        if kind == "deep":
            depth = fault.get("depth", 100000)
            body = b'{"code":200000,"configFile":' + b"[" * depth + b"]" * depth + b"}"
            self._send(200, body)
            return True
        return False

    def _control_publish(self, url, raw):
        """Not Polaris's: the bench's writes from another process (bench/polaris.py
        --fanout), {fileName: content, ...} in the query's namespace and group (default
        "default", "shenyu"), each file published (updated, then released) in the body's
        order, as the admin's doPublishConfig does one key at a time."""
        q = urllib.parse.parse_qs(url.query)
        ns = q.get("namespace", ["default"])[0]
        group = q.get("group", ["shenyu"])[0]
        try:
            files = json.loads(raw.decode("utf-8"))
            if not isinstance(files, dict) or not all(
                    isinstance(v, str) for v in files.values()):
                raise ValueError("a JSON object of file name to content (a string)")
        except ValueError as e:
            self._send(400, str(e).encode("utf-8"), ctype="text/plain")
            return
        for name, content in files.items():
            self.emulator.publish(ns, group, name, content)
        self._send(200, b"ok\n", ctype="text/plain")

    # ------------------------------------------------------------------ routes
    def do_GET(self):
        emu = self.emulator
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/config/v1/GetConfigFile":
            self._send(404, b"404 page not found", ctype="text/plain")
            return
        q = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        ns = q.get("namespace", [""])[0]
        group = q.get("group", [""])[0]
        name = q.get("fileName", [""])[0]
        emu.log("get", name)
        fault = emu.take_fault(url.path)
        if fault and fault["kind"] not in ("trickle", "bad_utf8") and self._faulty(fault):
            return
        if not self._authorized():
            self._send(401, go_json(_response(TOKEN_NOT_EXISTED, None)))
            return
        try:
            version = int(q.get("version", ["0"])[0] or "0")
        except ValueError:
            version = 0
        status, obj = emu.get_config_file(ns, group, name, version)
        body = go_json(obj)
        if fault and fault["kind"] == "bad_utf8" and obj["configFile"]:
            body = body.replace(b'"content": "', b'"content": "\xff\xfe', 1)
        self._send(status, body, fault)

    def do_POST(self):
        emu = self.emulator
        url = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if url.path == "/_control/publish":
            self._control_publish(url, raw)
            return
        if url.path != "/config/v1/WatchConfigFile":
            self._send(404, b"404 page not found", ctype="text/plain")
            return
        fault = emu.take_fault(url.path)
        if fault and fault["kind"] not in ("trickle", "drop", "nohold") and self._faulty(fault):
            return
        if not self._authorized():
            emu.log("watch", 0)
            self._send(401, go_json(_response(TOKEN_NOT_EXISTED, None)))
            return
        try:
            req = json.loads(raw.decode("utf-8"))
            files = {}
            for f in req.get("watch_files", req.get("watchFiles")) or []:
                key = (_wrapped(f.get("namespace")) or "", _wrapped(f.get("group")) or "",
                       _wrapped(f.get("file_name", f.get("fileName"))) or "")
                files[key] = int(_wrapped(f.get("version")) or 0)
        except (ValueError, AttributeError, TypeError) as e:
            emu.log("watch", 0)
            self._send(400, go_json(_response(PARSE_EXCEPTION, None, info=str(e))))
            return
        emu.log("watch", len(files))
        quick, w = emu.watch(files)
        if quick is not None:
            self._send(int(quick["code"]) // 1000, go_json(quick),
                       fault if fault and fault["kind"] == "trickle" else None)
            return
        if fault and fault["kind"] == "nohold":
            emu.expire(w)
            self._send(200, go_json(_NOT_MODIFIED))
            return
        if fault and fault["kind"] == "drop":
            time.sleep(fault.get("after", 0.3))
            with emu.mu:
                emu._unwatch(w)
            self._faulty(fault)
            return
        if not w.event.wait(emu.hold):
            emu.expire(w)
        if w.cut or w.reply is None:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        status, body = w.reply
        self._send(status, body, fault)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=8090)
    ap.add_argument("--token")
    ap.add_argument("--hold", type=float, default=30.0)
    a = ap.parse_args()
    e = PolarisEmulator(port=a.port, token=a.token, hold=a.hold).start()
    print("polaris emulator on %s" % e.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        e.stop()
