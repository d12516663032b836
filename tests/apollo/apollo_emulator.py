"""An Apollo config service emulator (standard library, threaded), following apollo's own
code (versions and files in README.md): what a config service client sees, and nothing of
the portal's or admin service's API except the two item operations ShenYu's admin uses
(createOrUpdateItem, removeItem) and publishNamespace, as in-process methods.

Served (one app per emulator, any number of clusters and namespaces):
  GET /configs/{appId}/{cluster}/{namespace}?releaseKey=&ip=
      200 {"appId","cluster","namespaceName","configurations","releaseKey"}; 304 when
      releaseKey is the current one; 404 when the namespace has no release.
  GET /notifications/v2?appId=&cluster=&notifications=[{"namespaceName","notificationId"}]
      200 [{"namespaceName","notificationId","messages":{"details":{watchKey: id}}}] at once
      when a namespace has a release message newer than the client's id, else held up to
      `hold` seconds (60, apollo's default) and answered 304; 400 for a notifications
      parameter that is not a non-empty JSON array of them.
  GET /services/config?appId=&ip=   (the meta service) [{"appName","instanceId","homepageUrl"}]
  POST /_control/publish            (not Apollo's: the test's) keys written, one release
The access key: when `secret` is set, every /configs and /notifications request needs
Timestamp within 60 s of the emulator's clock and Authorization "Apollo appId:sign",
sign = base64(HMAC-SHA1(secret, timestamp + "\n" + path[?query])), path and query as sent
(undecoded): else 401.

Faults (set by a test; see the `fault_*` attributes): a clock offset (signatures expire),
dropping every held request (connections closed without an answer), replies replaced by
bytes of the test's choice (non-JSON, invalid UTF-8, huge, deep), a trickled reply, a
flooding reply, and restart() (stop and serve again on the same port, state kept).
"""
import base64
import hashlib
import hmac
import json
import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NOTIFICATION_ID_PLACEHOLDER = -1  # ConfigConsts.NOTIFICATION_ID_PLACEHOLDER
SEPARATOR = "+"                   # ConfigConsts.CLUSTER_NAMESPACE_SEPARATOR
AUTH_SKEW_S = 60                  # BizConfig.accessKeyAuthTimeDiffTolerance() default


def sign(secret, timestamp, path_with_query):
    """apollo-core Signature.signature: base64(HMAC-SHA1(secret, ts + "\\n" + pathWithQuery))."""
    mac = hmac.new(secret.encode("utf-8"), (timestamp + "\n" + path_with_query).encode("utf-8"),
                   hashlib.sha1)
    return base64.b64encode(mac.digest()).decode("ascii")


def changes_between(before, after):
    """DefaultIncrementalSyncService.calcConfigurationChanges: ADDED, DELETED (newValue
    null), MODIFIED."""
    out = [{"key": k, "newValue": after[k], "configurationChangeType": "ADDED"}
           for k in after if k not in before]
    out += [{"key": k, "configurationChangeType": "DELETED"}  # Gson drops the null
            for k in before if k not in after]
    out += [{"key": k, "newValue": after[k], "configurationChangeType": "MODIFIED"}
            for k in after if k in before and before[k] != after[k]]
    return out


class Namespace:
    """One namespace of one cluster: the items being edited and the current release."""

    def __init__(self):
        self.items = {}          # key -> value (the working copy the Open API edits)
        self.release = None      # (releaseKey, {key: value}) or None: never released
        self.release_count = 0
        self.history = {}        # releaseKey -> {key: value}: earlier releases (incremental)


class Emulator:
    def __init__(self, app_id="shenyu", secret=None, hold=60.0, port=0, incremental=False,
                 tls=None):
        self.app_id = app_id
        self.tls = tls  # (certfile, keyfile): serve https
        # config-service.incremental.change.enabled (BizConfig): a client whose releaseKey
        # is a known earlier release gets only the changes since (off by default)
        self.incremental = incremental
        self.incremental_replies = 0
        self.secret = secret
        self.hold = hold
        self.lock = threading.Condition()
        self.namespaces = {}      # (cluster, namespace) -> Namespace
        self.messages = {}        # watch key "app+cluster+ns" -> latest release message id
        self.next_message_id = 1  # ReleaseMessage ids are global and only grow
        self.requests = []        # (method, path, status) of every answered request
        self.body_cache = None    # (release, (app, cluster, name), body): the last served
        # faults
        self.clock_offset_s = 0.0       # the emulator's clock minus the real one
        self.reply_override = {}        # "configs" | "notifications" -> bytes or callable
        self.trickle = None             # (kind, bytes per second) for "configs"/"notifications"
        self.flood = set()              # kinds answered with an endless body
        self.drop_generation = 0        # bumped by drop_held(): held requests then close
        self.held = 0                   # notification requests being held now
        self.server = None
        self.thread = None
        self.port = port

    # ---------------------------------------------------------------- lifecycle
    def start(self):
        emu = self

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 64

        class Handler(_Handler):
            emulator = emu

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        if self.tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self.tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server:
            self.drop_held(wait_s=0)
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def restart(self, down_s=0.0):
        """Stop serving (held requests dropped), stay down down_s, serve again on the same
        port with the same state."""
        self.stop()
        time.sleep(down_s)
        self.start()

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    # ---------------------------------------------------------------- the Open API's part
    def ns(self, cluster="default", namespace="application"):
        return self.namespaces.setdefault((cluster, namespace), Namespace())

    def create_or_update_item(self, key, value, cluster="default", namespace="application"):
        with self.lock:
            self.ns(cluster, namespace).items[key] = value

    def remove_item(self, key, cluster="default", namespace="application"):
        """ItemController.delete: an absent item is a NotFoundException (the Open API
        client throws), so ShenYu's caller stops there."""
        with self.lock:
            items = self.ns(cluster, namespace).items
            if key not in items:
                raise KeyError("item not found for %s" % key)
            del items[key]

    def item(self, key, cluster="default", namespace="application"):
        with self.lock:
            return self.ns(cluster, namespace).items.get(key)

    def publish_namespace(self, cluster="default", namespace="application"):
        """A release of the working copy: a new releaseKey and a release message, which
        answers every held notification request watching the namespace."""
        with self.lock:
            n = self.ns(cluster, namespace)
            n.release_count += 1
            key = "%s-%s-%d-%d" % (time.strftime("%Y%m%d%H%M%S"), namespace, n.release_count,
                                   self.next_message_id)
            n.release = (key, dict(n.items))
            n.history[key] = n.release[1]
            watch = SEPARATOR.join((self.app_id, cluster, namespace))
            self.messages[watch] = self.next_message_id
            self.next_message_id += 1
            self.lock.notify_all()

    def released(self, cluster="default", namespace="application"):
        """{key: value} of the current release ({} when never released)."""
        with self.lock:
            rel = self.ns(cluster, namespace).release
            return dict(rel[1]) if rel else {}

    # ---------------------------------------------------------------- faults
    def drop_held(self, wait_s=5.0):
        """Close every held notification request without an answer, after waiting up to
        wait_s for one to be held (a request on its way would otherwise miss the drop)."""
        deadline = time.monotonic() + wait_s
        with self.lock:
            while self.held == 0 and time.monotonic() < deadline:
                self.lock.wait(0.02)
            self.drop_generation += 1
            self.lock.notify_all()

    def wait_held(self, timeout=10.0):
        """Wait until a notification request is held (the client is idle, waiting)."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while self.held == 0:
                if time.monotonic() >= deadline:
                    raise AssertionError("no notification request held after %.0fs" % timeout)
                self.lock.wait(0.02)

    def now_ms(self):
        return int((time.time() + self.clock_offset_s) * 1000)

    def count(self, path_prefix, status=None):
        with self.lock:
            return sum(1 for (_, p, s) in self.requests
                       if p.startswith(path_prefix) and (status is None or s == status))


class _Handler(BaseHTTPRequestHandler):
    emulator = None
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: without TCP_NODELAY the body waits for the client's
    # delayed ACK (40 ms a reply), which a real service does not add
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    # ---------------------------------------------------------------- answers
    def _record(self, status):
        emu = self.emulator
        with emu.lock:
            emu.requests.append(("GET", self.path, status))

    def _send(self, status, body=b"", kind=None, content_type="application/json;charset=UTF-8"):
        emu = self.emulator
        self._record(status)
        if kind in emu.flood and status == 200:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.end_headers()
            chunk = b"[" * 65536
            try:
                while True:
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
            return
        self.send_response(status)
        if body or status == 200:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if emu.trickle and emu.trickle[0] == kind and body:
            rate = max(1, emu.trickle[1])
            try:
                for i in range(0, len(body), rate):
                    self.wfile.write(body[i:i + rate])
                    self.wfile.flush()
                    time.sleep(1.0)
            except OSError:
                self.close_connection = True
            return
        if body:
            self.wfile.write(body)

    def _json(self, status, doc, kind=None):
        emu = self.emulator
        over = emu.reply_override.get(kind) if kind else None
        if over is not None and status == 200:
            body = over() if callable(over) else over
        else:
            body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        self._send(status, body, kind)

    def _error(self, status, message):
        body = json.dumps({"status": status, "message": message}).encode("utf-8")
        self._send(status, body)

    # ---------------------------------------------------------------- access key
    def _authorized(self, app_id):
        """ClientAuthenticationFilter.doCheck: the timestamp within 60 s, then the
        signature over getRequestURI() [+ "?" + getQueryString()], both undecoded."""
        emu = self.emulator
        if not emu.secret:
            return True
        ts = self.headers.get("Timestamp") or ""
        try:
            skew = abs(emu.now_ms() - int(ts))
        except ValueError:
            skew = None
        if skew is None or skew >= AUTH_SKEW_S * 1000:
            self._error(401, "RequestTimeTooSkewed")
            return False
        auth = self.headers.get("Authorization") or ""
        parts = auth.split(":")
        got = parts[1] if len(parts) > 1 else None
        if got != sign(emu.secret, ts, self.path):
            self._error(401, "Unauthorized")
            return False
        return True

    # ---------------------------------------------------------------- routes
    def do_POST(self):
        """POST /_control/publish {key: value or null, ...}: the keys written (null: removed)
        and one release, for a test or bench driving the emulator as its own process."""
        emu = self.emulator
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        if urllib.parse.urlsplit(self.path).path != "/_control/publish":
            self._error(404, "no such path")
            return
        try:
            keys = json.loads(body or b"{}")
            if not isinstance(keys, dict):
                raise ValueError
        except ValueError:
            self._error(400, "expected a JSON object of keys")
            return
        with emu.lock:
            items = emu.ns().items
            for k, v in keys.items():
                if v is None:
                    items.pop(k, None)
                else:
                    items[k] = v
        if keys:
            emu.publish_namespace()
        self._send(200, b"{}")

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        path = url.path
        try:
            if path.startswith("/configs/"):
                self._configs(path, query)
            elif path == "/notifications/v2":
                self._notifications(query)
            elif path == "/services/config":
                self._services()
            else:
                self._error(404, "no such path")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _services(self):
        emu = self.emulator
        self._json(200, [{"appName": "APOLLO-CONFIGSERVICE",
                          "instanceId": "emulator:apollo-configservice:%d" % emu.port,
                          "homepageUrl": emu.url + "/"}])

    def _configs(self, path, query):
        emu = self.emulator
        parts = [urllib.parse.unquote(p) for p in path[len("/configs/"):].split("/")]
        if len(parts) != 3 or not all(parts):
            self._error(404, "no such path")
            return
        app_id, cluster, namespace = parts
        if not self._authorized(app_id):
            return
        if namespace.endswith(".properties"):  # NamespaceUtil.filterNamespaceName
            namespace = namespace[:-len(".properties")]
        client_key = (query.get("releaseKey") or ["-1"])[0]
        with emu.lock:
            rel = None
            if app_id == emu.app_id:
                n = emu.namespaces.get((cluster, namespace))
                if (not n or not n.release) and cluster != "default":
                    # ConfigServiceWithCache: a cluster without a release falls back to default
                    n = emu.namespaces.get(("default", namespace))
                    cluster = "default" if n and n.release else cluster
                rel = n.release if n else None
        if rel is None:
            self._error(404, "Could not load configurations with appId: %s, clusterName: %s, "
                        "namespace: %s" % (app_id, cluster, parts[2]))
            return
        if rel[0] == client_key:
            self._send(304)
            return
        # the body of a release is made once (the config service caches releases too:
        # ConfigServiceWithCache), so a read costs what serving it costs
        with emu.lock:
            n = emu.namespaces.get((cluster, namespace))
            before = n.history.get(client_key) if emu.incremental and n else None
        if before is not None:
            with emu.lock:
                emu.incremental_replies += 1
            self._json(200, {"appId": app_id, "cluster": cluster, "namespaceName": parts[2],
                             "releaseKey": rel[0], "configSyncType": "IncrementalSync",
                             "configurationChanges": changes_between(before, rel[1])},
                       kind="configs")
            return
        c = emu.body_cache
        if c and c[0] is rel and c[1] == (app_id, cluster, parts[2]):
            body = c[2]
        else:
            body = json.dumps({"appId": app_id, "cluster": cluster, "namespaceName": parts[2],
                               "configurations": rel[1], "releaseKey": rel[0]},
                              separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            emu.body_cache = (rel, (app_id, cluster, parts[2]), body)
        over = emu.reply_override.get("configs")
        if over is not None:
            body = over() if callable(over) else over
        self._send(200, body, "configs")

    def _notifications(self, query):
        emu = self.emulator
        app_id = (query.get("appId") or [""])[0]
        cluster = (query.get("cluster") or [""])[0]
        if not app_id:
            self._error(400, "InvalidAppId")
            return
        if not self._authorized(app_id):
            return
        raw = (query.get("notifications") or [""])[0]
        try:
            wanted = json.loads(raw)
            if not isinstance(wanted, list) or not wanted:
                raise ValueError
            client = {}
            for n in wanted:
                name = n["namespaceName"]
                if name.endswith(".properties"):
                    name = name[:-len(".properties")]
                client[name] = int(n.get("notificationId", NOTIFICATION_ID_PLACEHOLDER))
        except (ValueError, KeyError, TypeError):
            self._error(400, "invalid notifications format: %s" % raw[:200])
            return

        def newer():
            out = []
            for name, cid in client.items():
                keys = [SEPARATOR.join((app_id, c, name)) for c in
                        ([cluster, "default"] if cluster != "default" else ["default"])]
                latest = max((emu.messages.get(k, NOTIFICATION_ID_PLACEHOLDER) for k in keys))
                if latest > cid:
                    out.append({"namespaceName": name, "notificationId": latest,
                                "messages": {"details": {k: emu.messages[k] for k in keys
                                                         if k in emu.messages}}})
            return out

        deadline = time.monotonic() + emu.hold
        with emu.lock:
            gen = emu.drop_generation
            found = newer()
            held = not found  # counted while it waits, not when answered at once
            if held:
                emu.held += 1
                emu.lock.notify_all()
            while not found:
                left = deadline - time.monotonic()
                if left <= 0 or emu.drop_generation != gen:
                    break
                emu.lock.wait(left)
                found = newer()
            if held:
                emu.held -= 1
            dropped = emu.drop_generation != gen
        if dropped and not found:
            self._record(0)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if not found:
            self._send(304)
            return
        self._json(200, found, kind="notifications")


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--app-id", default="shenyu")
    ap.add_argument("--secret")
    ap.add_argument("--hold", type=float, default=60.0)
    a = ap.parse_args()
    emu = Emulator(app_id=a.app_id, secret=a.secret, hold=a.hold, port=a.port).start()
    print("apollo emulator listening on %s" % emu.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        emu.stop()


if __name__ == "__main__":
    main()
