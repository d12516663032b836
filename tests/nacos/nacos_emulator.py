"""A Nacos server emulator (the v1 config open API a gateway client uses) and a publisher
that writes to it as ShenYu's admin does. Nacos cannot be installed here (no Debian or npm
package), so the Nacos source is tested against this, which follows Nacos's code; README.md
in this folder names the Nacos version and file behind every behaviour.

Served (path prefix = the context path, /nacos by default):
  POST /v1/auth/login, /v1/auth/users/login   form username, password -> {"accessToken",
                                              "tokenTtl", "globalAdmin", "username"}; 403
  GET  /v1/cs/configs?dataId&group&tenant     200 content | 404 "config data not exist" |
                                              400 without dataId or group | 403 token
  POST /v1/cs/configs/listener                form Listening-Configs; held while nothing
                                              differs, max(10000, Long-Pulling-Timeout - 500)
                                              ms; 400 above 10,000 keys | 403 token
Fault controls: restart(), drop_holds(), expire_tokens(), trickle/flood, refuse_listen,
raw bytes as content (non-JSON, invalid UTF-8), counters of what was asked.

In-process: NacosEmulator runs a ThreadingHTTPServer on a thread of the test process; the
publisher writes straight into its store (the admin's own writes are not what is tested).
"""
import hashlib
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "kv"))
import publisher as kvpub  # noqa: E402  (RandomData, gson, item_key, KV_GROUPS)

WORD, LINE = "\x02", "\x01"
DEFAULT_GROUP = "DEFAULT_GROUP"
MAX_LISTEN = 10000  # MD5Util.getClientMd5Map: "invalid protocol, too much listener"
MIN_HOLD_MS = 10000  # LongPollingService: MIN_LONG_POOLING_TIMEOUT
DELAY_MS = 500  # LongPollingService: FIXED_DELAY_TIME


def md5_hex(content):
    """MD5Utils.md5Hex(content, UTF-8): lowercase hex; an absent key's md5 is ""."""
    return "" if content is None else hashlib.md5(content).hexdigest()


class NacosEmulator:
    def __init__(self, users=None, token_ttl=18000, context_path="/nacos", min_hold_ms=None,
                 tls=None):
        self.users = users  # {"nacos": "nacos"} turns auth on; None: off
        self.token_ttl = token_ttl
        self.context_path = context_path
        self.min_hold_ms = MIN_HOLD_MS if min_hold_ms is None else min_hold_ms
        self.tls = tls  # {"cert", "key"} (harness.make_test_ca): serve https://
        self.store = {}  # (tenant, group, dataId) -> bytes
        self._md5 = {}  # id(content) -> (content, md5)
        self.tokens = {}  # token -> expiry (time.time())
        self.cv = threading.Condition()
        self.counts = {"get": 0, "listen": 0, "login": 0, "get_403": 0, "listen_403": 0,
                       "listen_400": 0}
        self.listen_sizes = []  # keys per listener request
        self.held = set()  # sockets of held listener requests
        self.trickle = 0.0  # seconds between bytes of every GET answer
        self.flood = 0  # GET answers are this many bytes of junk instead
        self.refuse_listen = 0  # an HTTP status every listener request gets instead
        self.down = False
        self.on_edit = None  # the demo's POST /_control/edit: one random admin edit
        self.port = None
        self.server = None
        self.thread = None
        self._seq = 0

    # ------------------------------------------------------------------ life
    def start(self, port=0):
        emu = self

        class Handler(_Handler):
            pass
        Handler.emu = emu
        srv = _Server(("127.0.0.1", port or self.port or 0), Handler)
        srv.daemon_threads = True
        if self.tls:
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.tls["cert"], self.tls["key"])
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        self.server = srv
        self.port = srv.server_address[1]
        self.thread = threading.Thread(target=srv.serve_forever, daemon=True)
        self.thread.start()
        self.down = False
        return self

    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def stop(self):
        self.down = True
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        self.drop_holds()

    def restart(self, pause=0.5):
        """A server restart: the port closes, held requests are cut, the store stays (Nacos
        keeps configs in its database)."""
        self.stop()
        time.sleep(pause)
        self.start(self.port)

    def drop_holds(self):
        """Cut every held listener connection mid-hold (a proxy or server dying)."""
        with self.cv:
            held = list(self.held)
            self.held.clear()
            self.cv.notify_all()
        for s in held:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def expire_tokens(self):
        """Every token issued so far is refused from now on (403 "token expired!")."""
        with self.cv:
            self.tokens.clear()

    # ------------------------------------------------------------------ the store
    def publish(self, data_id, content, group=DEFAULT_GROUP, tenant=""):
        """ConfigService.publishConfig: content is str (UTF-8) or raw bytes."""
        if isinstance(content, str):
            content = content.encode("utf-8")
        with self.cv:
            old = self.store.get((tenant, group, data_id))
            if old is not None:
                self._md5.pop(id(old), None)
            self.store[(tenant, group, data_id)] = content
            self.cv.notify_all()

    def remove(self, data_id, group=DEFAULT_GROUP, tenant=""):
        with self.cv:
            old = self.store.pop((tenant, group, data_id), None)
            if old is not None:
                self._md5.pop(id(old), None)
            self.cv.notify_all()

    def md5_of(self, tenant, group, data_id):
        """The md5 Nacos keeps with each config (ConfigCacheService): computed once per
        content, not at every listener check."""
        v = self.store.get((tenant, group, data_id))
        if v is None:
            return ""
        m = self._md5.get(id(v))
        if m is None or m[0] is not v:
            m = (v, md5_hex(v))
            self._md5[id(v)] = m
        return m[1]

    def get(self, data_id, group=DEFAULT_GROUP, tenant=""):
        with self.cv:
            v = self.store.get((tenant, group, data_id))
        return None if v is None else v.decode("utf-8", "replace")

    def keys(self, group=DEFAULT_GROUP, tenant=""):
        with self.cv:
            return sorted(k[2] for k in self.store if k[0] == tenant and k[1] == group)

    # ------------------------------------------------------------------ auth
    def login(self, username, password):
        if self.users is None or self.users.get(username) != password:
            return None
        with self.cv:
            self._seq += 1
            tok = "tok-%d-%s" % (self._seq, hashlib.sha1(os.urandom(8)).hexdigest())
            self.tokens[tok] = time.time() + self.token_ttl
        return tok

    def token_ok(self, token):
        """None when allowed, else the refusal's text (NacosSignatureAlgorithm)."""
        if self.users is None:
            return None
        if not token:
            return "user not found!"
        with self.cv:
            exp = self.tokens.get(token)
        if exp is None:
            return "token invalid!"
        if exp < time.time():
            return "token expired!"
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client gone mid-answer (an interrupted hold) is no news


def _parse_listening(s):
    """MD5Util.getClientMd5Map: [(dataId, group, md5, tenant)]; ValueError when malformed
    or above MAX_LISTEN keys. (Split by lines and words: the same result as Nacos's scan
    of the characters for a well-formed field, and the same refusals.)"""
    out = []
    lines = s.split(LINE)
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        lines.pop()  # text after the last ^A: Nacos keeps it unread
    for line in lines:
        words = line.split(WORD)
        if len(words) > 4:
            raise ValueError("invalid protocol,too much key")
        if len(words) == 3:
            out.append((words[0], words[1], words[2], ""))
        elif len(words) == 4:
            out.append((words[0], words[1], words[2], words[3]))
        else:
            raise ValueError("invalid protocol")
        if len(out) > MAX_LISTEN:
            raise ValueError("invalid protocol, too much listener")
    return out


class _Handler(BaseHTTPRequestHandler):
    emu = None
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        super().setup()
        # headers and body go out in two writes: without this, Nagle's algorithm and the
        # client's delayed ACK hold every answer 40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, status, body=b"", ctype="text/plain;charset=UTF-8", headers=()):
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def _route(self):
        u = urllib.parse.urlsplit(self.path)
        cp = self.emu.context_path
        if not u.path.startswith(cp + "/"):
            return None, {}
        q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
        return u.path[len(cp):], {k: v[0] for k, v in q.items()}

    def _form(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n).decode("latin-1") if n else ""
        return {k: v[0] for k, v in urllib.parse.parse_qs(raw, keep_blank_values=True).items()}

    def _token(self, q, form=None):
        tok = q.get("accessToken") or (form or {}).get("accessToken")
        auth = self.headers.get("Authorization") or ""
        if not tok and auth.startswith("Bearer "):
            tok = auth[7:]
        return self.emu.token_ok(tok)

    def do_GET(self):
        emu = self.emu
        path, q = self._route()
        if path != "/v1/cs/configs":
            return self._send(404, "no such path")
        emu.counts["get"] += 1
        refused = self._token(q)
        if refused:
            emu.counts["get_403"] += 1
            return self._send(403, refused)
        data_id, group = q.get("dataId", ""), q.get("group", "")
        if not data_id or not group:
            return self._send(400, "dataId and group are required")
        with emu.cv:
            content = emu.store.get((q.get("tenant", ""), group, data_id))
        if content is None:
            return self._send(404, "config data not exist")
        if emu.flood:
            return self._flood(emu.flood)
        headers = [("Content-MD5", md5_hex(content)), ("Config-Type", "json")]
        if emu.trickle:
            self.send_response(200)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            for b in content:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
                time.sleep(emu.trickle)
            return None
        return self._send(200, content, headers=headers)

    def _flood(self, n):
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        chunk = b"x" * 65536
        try:
            while n > 0:
                self.wfile.write(chunk[:n])
                n -= len(chunk)
        except OSError:
            pass

    def do_POST(self):
        emu = self.emu
        if self.path == "/_control/edit" and emu.on_edit:
            self._form()
            return self._send(200, emu.on_edit() + "\n")
        if self.path == "/_control/publish":
            # the bench's writes: {"dataId": "content" or null (remove), ...}
            n = int(self.headers.get("Content-Length") or 0)
            for k, v in json.loads(self.rfile.read(n)).items():
                if v is None:
                    emu.remove(k)
                else:
                    emu.publish(k, v)
            return self._send(200, "ok\n")
        path, q = self._route()
        form = self._form()
        if path in ("/v1/auth/login", "/v1/auth/users/login"):
            emu.counts["login"] += 1
            tok = emu.login(form.get("username") or q.get("username"),
                            form.get("password") or q.get("password"))
            if not tok:
                return self._send(403, "unknown user!")
            return self._send(200, json.dumps({"accessToken": tok, "tokenTtl": emu.token_ttl,
                                               "globalAdmin": True,
                                               "username": form.get("username")}),
                              ctype="application/json")
        if path != "/v1/cs/configs/listener":
            return self._send(404, "no such path")
        emu.counts["listen"] += 1
        if emu.refuse_listen:
            return self._send(emu.refuse_listen, "refused by the test")
        refused = self._token(q, form)
        if refused:
            emu.counts["listen_403"] += 1
            return self._send(403, refused)
        probe = form.get("Listening-Configs", "")
        try:
            if not probe.strip():
                raise ValueError("invalid probeModify is blank")
            # ConfigController.listener decodes the (already form-decoded) field again
            keys = _parse_listening(urllib.parse.unquote(probe))
        except ValueError as e:
            emu.counts["listen_400"] += 1
            return self._send(400, "invalid probeModify: %s" % e)
        emu.listen_sizes.append(len(keys))
        timeout = self.headers.get("Long-Pulling-Timeout")
        hold = None
        if timeout is not None:
            hold = max(emu.min_hold_ms, int(timeout) - DELAY_MS) / 1000.0
        deadline = time.time() + (hold or 0)
        sock = self.connection
        with emu.cv:
            emu.held.add(sock)
            try:
                while True:
                    changed = [k for k in keys if emu.md5_of(k[3], k[1], k[0]) != k[2]]
                    if changed or hold is None or emu.down or sock not in emu.held:
                        break
                    left = deadline - time.time()
                    if left <= 0:
                        break
                    emu.cv.wait(left)
            finally:
                emu.held.discard(sock)
        if emu.down:
            return None
        # MD5Util.compareMd5ResultString: dataId ^B group [^B tenant] ^A, URL-encoded, and
        # the writer's println adds a newline; a timeout answers an empty body
        if not changed:
            return self._send(200, "")
        text = "".join(k[0] + WORD + k[1] + (WORD + k[3] if k[3] else "") + LINE
                       for k in changed)
        return self._send(200, urllib.parse.quote_plus(text, safe="*") + "\n")


# ---------------------------------------------------------------------- the admin
LIST_IDS = {"PLUGIN": "plugin", "SELECTOR": "selector", "RULE": "rule", "APP_AUTH": "auth",
            "META_DATA": "meta", "PROXY_SELECTOR": "proxy.selector",
            "DISCOVER_UPSTREAM": "discovery"}
LEGACY_DOCS = {"PLUGIN": "shenyu.plugin.json", "SELECTOR": "shenyu.selector.json",
               "RULE": "shenyu.rule.json", "APP_AUTH": "shenyu.auth.json",
               "META_DATA": "shenyu.meta.json", "PROXY_SELECTOR": "shenyu.proxy.selector.json"}


class NodePublisher:
    """Writes as ShenYu's admin NacosDataChangedListener does (AbstractNodeDataChangedListener
    at apache/shenyu HEAD, PROTOCOL-PUSH.md 4.1): item keys first, then the list key read,
    merged and written back; DELETE removes the item keys, then the ids from the list (a
    multi-level list left empty is removed); REFRESH of PLUGIN, APP_AUTH and META_DATA
    publishes the items, deletes the vanished ones by their BARE name (the admin's bug: the
    item keys survive) and overwrites the list; REFRESH of the other groups is an UPDATE.
    prefix: "{namespace}." (2.7) or "" (2.6.1+). The same interface as the path stores'
    publisher (write, write_many, delete, refresh, sync_all, published), so RandomData's
    random edits drive it."""

    def __init__(self, emu, prefix, group=DEFAULT_GROUP, tenant=""):
        self.emu = emu
        self.prefix = prefix
        self.group = group
        self.tenant = tenant
        self.root = "/%s/%s" % (tenant or "public", group)
        self.writes = 0

    # ------------------------------------------------------------------ admin ops
    def _put(self, data_id, value):
        self.emu.publish(data_id, value, self.group, self.tenant)
        self.writes += 1

    def _del(self, data_id):
        self.emu.remove(data_id, self.group, self.tenant)
        self.writes += 1

    def _list(self, data_id):
        v = self.emu.get(data_id, self.group, self.tenant)
        return json.loads(v) if v else []

    def _common_prefix(self, group):
        return "%s%s." % (self.prefix, LIST_IDS[group])

    @staticmethod
    def _key(group, item):
        return {"PLUGIN": item.get("name"), "APP_AUTH": item.get("appKey"),
                "META_DATA": item.get("id")}.get(group)

    @staticmethod
    def _multi(group, item):
        """(mappingKey, mappingValue) of onCommonMultiChanged."""
        if group == "RULE":
            return "%s.%s" % (item["pluginName"], item["selectorId"]), item["id"]
        if group == "DISCOVER_UPSTREAM":
            return item["pluginName"], item["selectorId"]
        return item["pluginName"], item["id"]

    def path(self, group, item):
        if group in ("PLUGIN", "APP_AUTH", "META_DATA"):
            return self._common_prefix(group) + self._key(group, item)
        k, v = self._multi(group, item)
        return "%s%s.%s" % (self._common_prefix(group), k, v)

    def event(self, group, kind, items):
        if not items:
            return
        p = self._common_prefix(group)
        if group in ("PLUGIN", "APP_AUTH", "META_DATA"):
            names = [self._key(group, it) for it in items]
            if kind == "DELETE":
                for n in names:
                    self._del(p + n)
                old = self._list(p + "list")
                self._put(p + "list", json.dumps([x for x in old if x not in names]))
            elif kind == "REFRESH":
                old = self._list(p + "list")
                for it in items:
                    self._put(p + self._key(group, it), kvpub.gson(it))
                if len(old) > len(items):
                    for gone in [x for x in old if x not in names]:
                        self._del(gone)  # the bare name: ShenYu's bug
                self._put(p + "list", json.dumps(names))
            else:
                for it in items:
                    self._put(p + self._key(group, it), kvpub.gson(it))
                old = self._list(p + "list")
                self._put(p + "list", json.dumps(old + [n for n in names if n not in old]))
            return
        by_key = {}
        for it in items:
            k, v = self._multi(group, it)
            by_key.setdefault(k, []).append(v)
        for it in items:
            k, v = self._multi(group, it)
            if kind == "DELETE":
                self._del("%s%s.%s" % (p, k, v))
            else:
                self._put("%s%s.%s" % (p, k, v), kvpub.gson(it))
        for k, ids in by_key.items():
            old = self._list("%s%s.list" % (p, k))
            if kind == "DELETE":
                new = [x for x in old if x not in ids]
            else:
                new = old + [x for x in ids if x not in old]
            if new:
                self._put("%s%s.list" % (p, k), json.dumps(new))
            else:
                self._del("%s%s.list" % (p, k))

    # ------------------------------------------------------------------ RandomData's API
    def write(self, group, item):
        self.event(group, "UPDATE", [item])

    def write_many(self, group, items):
        self.event(group, "UPDATE", items)

    def delete(self, group, item):
        if group == "PLUGIN":
            # the admin deletes the plugin's rules, then its selectors, then the plugin
            state = self.published(["SELECTOR", "RULE"])
            rules = [r for r in state["RULE"].values() if r["pluginName"] == item["name"]]
            sels = [s for s in state["SELECTOR"].values() if s["pluginName"] == item["name"]]
            self.event("RULE", "DELETE", rules)
            self.event("SELECTOR", "DELETE", sels)
        self.event(group, "DELETE", [item])

    def refresh(self, group, items):
        self.event(group, "REFRESH", items)

    def sync_all(self, data):
        for group in ("PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR",
                      "DISCOVER_UPSTREAM"):
            if data.get(group):
                self.event(group, "REFRESH", data[group])

    # ------------------------------------------------------------------ reading back
    def published(self, groups=kvpub.KV_GROUPS):
        """{GROUP: {key: item}} as the list keys say (what a correct gateway holds): walk
        plugin.list, each plugin's selector, proxy selector and discovery lists, each
        selector's rule list, auth.list and meta.list."""
        out = {g: {} for g in groups}
        P = self.prefix

        def item(data_id, group):
            v = self.emu.get(data_id, self.group, self.tenant)
            if v and v.strip() and group in out:
                it = json.loads(v)
                out[group][kvpub.item_key(group, it)] = it

        for name in self._list(P + "plugin.list"):
            item("%splugin.%s" % (P, name), "PLUGIN")
            for sid in self._list("%sselector.%s.list" % (P, name)):
                item("%sselector.%s.%s" % (P, name, sid), "SELECTOR")
                for rid in self._list("%srule.%s.%s.list" % (P, name, sid)):
                    item("%srule.%s.%s.%s" % (P, name, sid, rid), "RULE")
            for pid in self._list("%sproxy.selector.%s.list" % (P, name)):
                item("%sproxy.selector.%s.%s" % (P, name, pid), "PROXY_SELECTOR")
            for sid in self._list("%sdiscovery.%s.list" % (P, name)):
                item("%sdiscovery.%s.%s" % (P, name, sid), "DISCOVER_UPSTREAM")
        for key in self._list(P + "auth.list"):
            item("%sauth.%s" % (P, key), "APP_AUTH")
        for key in self._list(P + "meta.list"):
            item("%smeta.%s" % (P, key), "META_DATA")
        return out

    def wipe(self):
        for k in self.emu.keys(self.group, self.tenant):
            self.emu.remove(k, self.group, self.tenant)


class LegacyPublisher:
    """The whole-group documents of ShenYu 2.4 to 2.6.0 (AbstractListDataChangedListener at
    v2.5.1/v2.6.0): shenyu.plugin.json name -> PluginData, shenyu.selector.json plugin ->
    [SelectorData], shenyu.rule.json selectorId -> [RuleData], shenyu.auth.json appKey ->
    AppAuthData, shenyu.meta.json path -> MetaData, shenyu.proxy.selector.json id ->
    [ProxySelectorData]; every change rewrites the whole document."""

    def __init__(self, emu, group=DEFAULT_GROUP, tenant=""):
        self.emu = emu
        self.group = group
        self.tenant = tenant
        self.items = {g: [] for g in LEGACY_DOCS}

    def put_all(self, items):
        """items {GROUP: [items]}: every document written again."""
        for g, its in items.items():
            if g in LEGACY_DOCS:
                self.items[g] = list(its)
                self.emu.publish(LEGACY_DOCS[g], self.doc(g), self.group, self.tenant)

    def doc(self, g):
        its = self.items[g]
        if g == "PLUGIN":
            m = {it["name"]: it for it in its}
        elif g == "APP_AUTH":
            m = {it["appKey"]: it for it in its}
        elif g == "META_DATA":
            m = {it["path"]: it for it in its}
        else:
            key = {"SELECTOR": "pluginName", "RULE": "selectorId", "PROXY_SELECTOR": "id"}[g]
            m = {}
            for it in its:
                m.setdefault(it[key], []).append(it)
        return "{" + ",".join("%s:%s" % (json.dumps(k), kvpub.gson(v) if isinstance(v, dict)
                                          else "[" + ",".join(kvpub.gson(x) for x in v) + "]")
                              for k, v in m.items()) + "}"

    def published(self, groups):
        return {g: {kvpub.item_key(g, it): kvpub.strip_nulls(it) for it in self.items.get(g, [])}
                for g in groups}


def main():
    """Serve a ShenYu dataset as the admin publishes it to Nacos, for ./dev.sh demo and
    bench/: python3 nacos_emulator.py --port 8848 [--username U --password P] [--namespace
    NS] [--seed N] [--rules N]. POST /_control/edit makes one random admin edit."""
    import argparse
    import signal
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8848)
    ap.add_argument("--username")
    ap.add_argument("--password")
    ap.add_argument("--namespace", default=kvpub.DEFAULT_NAMESPACE)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rules", type=int, default=20)
    ap.add_argument("--empty", action="store_true",
                    help="no dataset: the keys come by POST /_control/publish")
    args = ap.parse_args()
    users = {args.username: args.password} if args.username else None
    emu = NacosEmulator(users=users)
    pub = NodePublisher(emu, args.namespace + ".")
    data = kvpub.RandomData(seed=args.seed, namespace=args.namespace, rules=args.rules)
    if data.items["PROXY_SELECTOR"] or data.items["DISCOVER_UPSTREAM"]:
        data.items["PLUGIN"].append(dict(data.items["PLUGIN"][0], name="tcp", id="99"))
    if not args.empty:
        pub.sync_all(data.items)
    lock = threading.Lock()

    def edit():
        with lock:
            return data.random_edit(pub)
    emu.on_edit = edit
    emu.start(args.port)
    print("nacos emulator on %s: %d keys in namespace %s" % (emu.url(), len(emu.keys()),
                                                            args.namespace), flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    stop.wait()
    emu.stop()


if __name__ == "__main__":
    main()
