"""ShenYu's `sign` plugin through a real nginx (contrib/nginx, gwsync.sign), from an LMDB cache
written here in the documented layout (cachewriter.py, with the change log).

The vectors are ShenYu's own sign test cases (shenyu-plugin-sign: SignServiceVersionOneTest,
SignServiceVersionTwoTest, DefaultSignProviderTest; shenyu-integrated-test-http:
SignPluginVersionOneTest), sent as HTTP requests; each answer is compared with what ShenYu's
gateway sends (contrib/nginx/SIGN-SEMANTICS.md): the upstream's answer for a request that
passes (with the app's `appParam` header), `{"code":401,"message":<reason>}` with HTTP 200 for a
refusal, HTTP 400/500 where ShenYu throws. The fixed-timestamp vectors of
DefaultSignProviderTest (signed in 2023) run on a second nginx whose window
(`GWSYNC_SIGN_DELAY`, ShenYu's shenyu.sign.delay) reaches back to them.

It also proves the sync's security properties: an app disabled or whose secret is rotated in
the cache is refused by every worker once the change is committed (no reload), and no app
secret appears in nginx's error.log or in any answer's headers (debug headers on).
"""
import base64
import grp
import hashlib
import hmac
import json
import os
import socket
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from cachewriter import CacheWriter, discover, divide_plugin, rule, selector, uri_cond  # noqa: E402
from test_lmdb_reader import NginxGateway, require_nginx  # noqa: E402

APP_KEY = "D1DFC83F3BC64FABB89DFBD54E5A28C8"        # SignServiceVersionOneTest
SECRET = "692C479F98C841FCBEB444B7CA775F63"
IT_KEY = "108C27175A2C43C1BC29B1E483D57E3D"          # SignPluginVersionOneTest, DefaultSignProviderTest
IT_SECRET = "061521A73DD94A3FA873C25D050685BB"
PATH = "/test-api/demo/test"
APP_PARAM = '{"tenant":"t1"}'
NOT_CONFIGURED = "/http/test/notConfiguredPath"


# ---------------------------------------------------------------------- signing (the tests' own)
def md5_sign(secret, data):
    return hashlib.md5((data + secret).encode()).hexdigest().upper()


def alg_sign(alg, secret, data):
    if alg == "MD5":
        return md5_sign(secret, data)
    digest = {"HMD5": hashlib.md5, "HS256": hashlib.sha256, "HS512": hashlib.sha512}[alg]
    return hmac.new(secret.encode(), data.encode(), digest).hexdigest().upper()


def sign_v1(secret, ts, path, body=None, query=None):
    """SignServiceVersionOneTest.buildSign"""
    params = dict(body or {})
    params.update(query or {})
    params.update({"timestamp": ts, "path": path, "version": "1.0.0"})
    data = "".join(k + params[k] for k in sorted(params) if k != "sign").strip()
    return md5_sign(secret, data)


def v1(ts, key, sg):
    h = {"version": "1.0.0"}
    for name, value in (("timestamp", ts), ("appKey", key), ("sign", sg)):
        if value is not None:
            h[name] = value
    return h


def params_v2(ts, key, alg="MD5"):
    m = {}
    if ts is not None:
        m["timestamp"] = ts
    if key is not None:
        m["appKey"] = key
    m["alg"] = alg
    return base64.b64encode(json.dumps(m, separators=(",", ":")).encode()).decode()


def v2(params, sg, header="Authorization"):
    return {"version": "2.0.0", header: params if sg is None else params + "." + sg}


def now_ms():
    return str(int(time.time() * 1000))


def refusal(message, code=401):
    return json.dumps({"code": code, "message": message}, separators=(",", ":")).encode()


# ---------------------------------------------------------------------- the cache
def sign_plugin(enabled=True):
    return {"id": "20", "name": "sign", "enabled": enabled, "role": "Authentication", "sort": 20,
            "config": None}


def sign_selector(sid, op, value, sort=1):
    return {"id": sid, "pluginId": "20", "pluginName": "sign", "name": sid, "matchMode": 0,
            "type": 1, "sort": sort, "enabled": True, "logged": False, "continued": True,
            "handle": None, "conditionList": [uri_cond(op, value)]}


def sign_rule(rid, sid, op, value, body):
    return {"id": rid, "selectorId": sid, "pluginName": "sign", "name": rid, "matchMode": 0,
            "sort": 1, "enabled": True, "loged": False,
            "handle": json.dumps({"signRequestBody": body}),
            "conditionDataList": [uri_cond(op, value)]}


def app(key, secret, paths, enabled=True, open_=True, params=None):
    return {"appKey": key, "appSecret": secret, "enabled": enabled, "open": open_,
            "paramDataList": params or [],
            "pathDataList": [{"appName": "a", "path": p, "enabled": True} for p in paths],
            "namespaceId": "649330b6-c2d7-4edc-be8e-8a54df9eb385"}


MAIN_APP = app(APP_KEY, SECRET, ["/test-api/**", "/body/**"],
               params=[{"appName": "test-api", "appParam": APP_PARAM}])
IT_APP = app(IT_KEY, IT_SECRET, ["/http/test/path/456", "/http/test/payment"])


# ---------------------------------------------------------------------- the upstream
class Echo:
    """An upstream answering JSON {method, path, appParam, body} (keep-alive)."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode() if n else ""
                out = json.dumps({"method": self.command, "path": self.path,
                                  "appParam": self.headers.get("appParam"), "body": body}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _delay_edit(minutes):
    return lambda conf: conf.replace('os.getenv("GWSYNC_SIGN_DELAY") or "5"', '"%d"' % minutes)


class SignThroughNginx(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_nginx()
        cls.tmp = tempfile.mkdtemp(prefix="gwsync-sign-")
        group = None
        if os.geteuid() == 0:
            os.chmod(cls.tmp, 0o711)
            group = grp.getgrnam("nogroup").gr_gid
        cls.cache = os.path.join(cls.tmp, "cache")
        cls.echo = Echo()
        w = cls.writer = CacheWriter(cls.cache, group=group, log=True)
        w.commit("PLUGIN", {"5": divide_plugin(), "20": sign_plugin()})
        w.commit("SELECTOR", {
            "d1": selector("d1", "/", conditions=[uri_cond("startsWith", "/")]),
            "s1": sign_selector("s1", "startsWith", "/test-api/"),
            "s2": sign_selector("s2", "startsWith", "/body/"),
            "s3": sign_selector("s3", "=", "/http/test/path/456"),
            "s4": sign_selector("s4", "=", "/http/test/payment"),
            "s5": sign_selector("s5", "=", NOT_CONFIGURED)})
        w.commit("RULE", {
            "dr1": rule("dr1", "d1", "/", conditions=[uri_cond("startsWith", "/")]),
            "r1": sign_rule("r1", "s1", "startsWith", "/test-api/", False),
            "r2": sign_rule("r2", "s2", "startsWith", "/body/", True),
            "r3": sign_rule("r3", "s3", "=", "/http/test/path/456", False),
            "r4": sign_rule("r4", "s4", "=", "/http/test/payment", True),
            "r5": sign_rule("r5", "s5", "=", NOT_CONFIGURED, False)})
        w.commit("DISCOVER_UPSTREAM", {"d1": discover("d1", [cls.echo.url])})
        w.commit("APP_AUTH", {APP_KEY: MAIN_APP, IT_KEY: IT_APP})
        cls.gw = NginxGateway(cls.cache).start()
        # a window back to 2023 (DefaultSignProviderTest's fixed timestamps)
        cls.old = NginxGateway(cls.cache, edit=_delay_edit(10 ** 7)).start()
        for gw in (cls.gw, cls.old):
            gw.eventually("/none", lambda s, h, b: s == 200 and b"/none" in b)

    @classmethod
    def tearDownClass(cls):
        for name in ("gw", "old"):
            gw = getattr(cls, name, None)
            if gw:
                gw.close()
        if getattr(cls, "writer", None):
            cls.writer.close()
        if getattr(cls, "echo", None):
            cls.echo.close()
        harness._cleanup_dir(cls.tmp)

    def send(self, path, headers=None, body=None, gw=None):
        gw = gw or self.gw
        method = "POST" if body is not None else "GET"
        h = dict(headers or {})
        if body is not None:
            h.setdefault("Content-Type", "application/json")
        status, hdrs, data = harness.http_request(method, "http://127.0.0.1:%d%s" % (gw.port, path),
                                                  body=body, headers=h, timeout=30)
        self.seen_headers.append(hdrs)
        return status, hdrs, data

    def setUp(self):
        self.seen_headers = []

    def assertPassed(self, answer, path, app_param=None, body=""):
        status, _, data = answer
        self.assertEqual(status, 200, data)
        got = json.loads(data)
        self.assertEqual((got["path"], got["appParam"], got["body"]), (path, app_param, body), data)

    def assertRefused(self, answer, message, code=401, status=200):
        st, hdrs, data = answer
        self.assertEqual((st, data), (status, refusal(message, code)))
        self.assertEqual(hdrs.get("Content-Type"), "application/json")

    # ------------------------------------------------------------------ version 1
    def test_v1_shenyu_service_cases(self):
        ts = now_ms()
        good = sign_v1(SECRET, ts, PATH)
        self.assertPassed(self.send(PATH, v1(ts, APP_KEY, good)), PATH, APP_PARAM)
        old = str(int(ts) - 60000)
        self.assertPassed(self.send(PATH, v1(old, APP_KEY, sign_v1(SECRET, old, PATH))), PATH, APP_PARAM)
        for headers in (v1(None, APP_KEY, good), v1(ts, APP_KEY, None), v1(ts, None, good)):
            self.assertRefused(self.send(PATH, headers), "sign parameters are incomplete!")
        late = str(int(ts) - 6 * 60000)
        self.assertRefused(self.send(PATH, v1(late, APP_KEY, sign_v1(SECRET, late, PATH))),
                           "The signature timestamp has exceeded 5 minutes!")
        self.assertRefused(self.send(PATH, v1(ts, "errorKey", good)), "sign appKey does not exist.")
        self.assertRefused(self.send(PATH, v1(ts, APP_KEY, "errorSign")), "signature value is error!")
        self.assertRefused(self.send("/test-api/x", {"version": "1.0.2"}),
                           "sign version does not exist or is wrong!")
        self.assertRefused(self.send("/test-api/x", {"timestamp": ts}),
                           "sign version does not exist or is wrong!")

    def test_v1_body_and_query(self):
        ts = now_ms()
        body = json.dumps({"data": "data"})
        sg = sign_v1(SECRET, ts, "/body/x", {"data": "data"}, {"data2": "data"})
        self.assertPassed(self.send("/body/x?data2=data", v1(ts, APP_KEY, sg), body=body),
                          "/body/x?data2=data", None, body)
        # tampered body; a GET without body signs "" (and the query)
        self.assertRefused(self.send("/body/x?data2=data", v1(ts, APP_KEY, sg), body=json.dumps({"data": "x"})),
                           "signature value is error!")
        sg = sign_v1(SECRET, ts, "/body/y", None, {"q": "1"})
        self.assertPassed(self.send("/body/y?q=1", v1(ts, APP_KEY, sg)), "/body/y?q=1")

    def test_v1_integrated_test_cases(self):
        """SignPluginVersionOneTest, against its app and paths."""
        ts = now_ms()
        get_path, get_url = "/http/test/path/456", "/http/test/path/456?name=Lee&data=3"
        self.assertPassed(self.send(get_url, v1(ts, IT_KEY, sign_v1(IT_SECRET, ts, get_path))), get_url)
        self.assertRefused(self.send(get_url, v1(ts, IT_KEY, sign_v1(IT_SECRET, ts, "wrong_path"))),
                           "signature value is error!")
        late = str(int(ts) - 360000)
        self.assertRefused(self.send(get_url, v1(late, IT_KEY, sign_v1(IT_SECRET, late, get_path))),
                           "The signature timestamp has exceeded 5 minutes!")
        self.assertRefused(self.send(get_url, {"version": "1.0.0"}), "sign parameters are incomplete!")
        body = {"userName": "Lee", "userId": "3"}
        post_url = "/http/test/payment?id=3"
        sg = sign_v1(IT_SECRET, ts, "/http/test/payment", body, {"id": "3"})
        self.assertPassed(self.send(post_url, v1(ts, IT_KEY, sg), body=json.dumps(body)), post_url, None,
                          json.dumps(body))
        sg = sign_v1(IT_SECRET, ts, "/http/test/payment", body, {"userId": "1234"})
        self.assertRefused(self.send(post_url, v1(ts, IT_KEY, sg), body=json.dumps(body)),
                           "signature value is error!")

        self.assertRefused(self.send(NOT_CONFIGURED, v1(ts, IT_KEY, sign_v1(IT_SECRET, ts, NOT_CONFIGURED))),
                           "you have not configured the sign path.")

    # ------------------------------------------------------------------ version 2
    def test_v2_integrated_test_cases(self):
        """SignPluginVersionTwoTest, against its app and paths."""
        ts = now_ms()

        def token(url, ts=ts, key=IT_KEY, body=None):
            p = params_v2(ts, key)
            return v2(p, md5_sign(IT_SECRET, p + url + (body or "")))
        get_url = "/http/test/path/456?name=Lee&data=3"
        self.assertPassed(self.send(get_url, token(get_url)), get_url)
        self.assertRefused(self.send(get_url, token("/wrong_path")), "signature value is error!")
        self.assertRefused(self.send(get_url, token(get_url, key="ERRORKEY")), "sign appKey does not exist.")
        self.assertRefused(self.send(get_url, token(get_url, ts=str(int(ts) - 360000))),
                           "The signature timestamp has exceeded 5 minutes!")
        post_url = "/http/test/payment?userName=Lee&userId=3"
        body = json.dumps({"userName": "Lee", "userId": "3"}, separators=(",", ":"))
        self.assertPassed(self.send(post_url, token(post_url, body=body), body=body), post_url, None, body)
        self.assertRefused(self.send(post_url, token(post_url, body=json.dumps({"userId": "1234"})), body=body),
                           "signature value is error!")
        self.assertRefused(self.send(get_url, token(post_url, ts=None)), "sign parameters are incomplete!")
        self.assertRefused(self.send(NOT_CONFIGURED, token(NOT_CONFIGURED)), "you have not configured the sign path.")

    def test_v2_shenyu_service_cases(self):
        ts = now_ms()
        p = params_v2(ts, APP_KEY)
        self.assertPassed(self.send(PATH, v2(p, md5_sign(SECRET, p + PATH))), PATH, APP_PARAM)
        for q in (params_v2(None, APP_KEY), params_v2(ts, None)):
            self.assertRefused(self.send(PATH, v2(q, md5_sign(SECRET, q + PATH))), "sign parameters are incomplete!")
        self.assertRefused(self.send(PATH, v2(p, None)), "sign parameters are incomplete!")
        late = params_v2(str(int(ts) - 6 * 60000), APP_KEY)
        self.assertRefused(self.send(PATH, v2(late, md5_sign(SECRET, late + PATH))),
                           "The signature timestamp has exceeded 5 minutes!")
        bad = params_v2(ts, "errorKey")
        self.assertRefused(self.send(PATH, v2(bad, md5_sign("errorKey", bad + PATH))), "sign appKey does not exist.")
        self.assertRefused(self.send(PATH, v2(p, "errorSign")), "signature value is error!")
        # the body and the query (%-decoded, as URI.getQuery) are signed on a body rule
        body = json.dumps({"data": "data"})
        sg = md5_sign(SECRET, p + "/body/x?data2=a b" + body)
        self.assertPassed(self.send("/body/x?data2=a%20b", v2(p, sg), body=body), "/body/x?data2=a%20b", None, body)
        self.assertRefused(self.send("/body/x?data2=a%20b", v2(p, sg), body=json.dumps({"data": "data2"})),
                           "signature value is error!")
        # HMAC algorithms, ShenYu-Authorization before Authorization
        for alg in ("HMD5", "HS256", "HS512"):
            q = params_v2(ts, APP_KEY, alg)
            h = v2(q, alg_sign(alg, SECRET, q + PATH), header="ShenYu-Authorization")
            h["Authorization"] = "x.y"
            self.assertPassed(self.send(PATH, h), PATH, APP_PARAM)

    def test_default_sign_provider_vectors(self):
        """DefaultSignProviderTest's fixed signatures, on the nginx whose window reaches 2023."""
        token = json.dumps({"alg": "MD5", "appKey": IT_KEY, "timestamp": "1673093719090"}, separators=(",", ":"))
        p = base64.b64encode(token.encode()).decode()
        url = "/http/test/path/456?name=Lee&data=3"
        self.assertPassed(self.send(url, v2(p, "4892285C655127FE0B05BCAA4A47B093"), gw=self.old), url)
        url = "/http/test/payment?userName=Lee&userId=3"
        body = json.dumps({"userName": "Lee", "userId": "3"}, separators=(",", ":"))
        self.assertPassed(self.send(url, v2(p, "61A097079016A18B1246A375482BEDBC"), body=body, gw=self.old),
                          url, None, body)
        # the default window refuses the same request
        self.assertRefused(self.send(url, v2(p, "61A097079016A18B1246A375482BEDBC"), body=body),
                           "The signature timestamp has exceeded 5 minutes!")

    # ------------------------------------------------------------------ what ShenYu throws, what it skips
    def test_exceptions_and_unprotected_paths(self):
        self.assertRefused(self.send(PATH, v1("12a", APP_KEY, "X")), 'For input string: "12a"', 400, 400)
        self.assertRefused(self.send(PATH, v2("ab!c", "X")), "Illegal base64 character 21", 400, 400)
        self.assertRefused(self.send(PATH, {"version": "2.0.0", "Authorization": "abc."}),
                           "Internal Server Error", 500, 500)
        # no sign selector for the path: divide routes it unchecked
        self.assertPassed(self.send("/open/x"), "/open/x")

    # ------------------------------------------------------------------ changes, every worker
    def test_revocation_rotation_and_plugin_switch_reach_every_worker(self):
        w, gw = self.writer, self.gw
        path = "/test-api/rev"

        def signed(secret):
            ts = now_ms()
            return v1(ts, APP_KEY, sign_v1(secret, ts, path))

        def answer_is(secret, message):
            return lambda: self._answer(path, signed(secret)) == message
        try:
            w.commit("APP_AUTH", {APP_KEY: dict(MAIN_APP, enabled=False)})
            gw.eventually(path, lambda s, h, b: b == refusal("sign appKey does not exist."),
                          headers=signed(SECRET), streak=12)
            w.commit("APP_AUTH", {APP_KEY: dict(MAIN_APP, appSecret="ROTATED0000000000000000000000000")})
            harness.wait_until(lambda: all(answer_is(SECRET, "signature value is error!")() for _ in range(12)),
                               timeout=30, message="the old secret refused by every worker")
            self.assertPassed(self.send(path, signed("ROTATED0000000000000000000000000")), path, APP_PARAM)
            # the group rewritten whole without the app (a `replace`: read whole, compared)
            w.commit("APP_AUTH", {IT_KEY: IT_APP}, replace=True)
            harness.wait_until(lambda: all(answer_is("ROTATED0000000000000000000000000",
                                                     "sign appKey does not exist.")() for _ in range(12)),
                               timeout=30, message="a deleted app refused by every worker")
            w.commit("PLUGIN", {"20": sign_plugin(False)})
            gw.eventually(path, lambda s, h, b: s == 200 and b'"path": "/test-api/rev"' in b,
                          headers=signed("nothing"), streak=12)
            # changed while the plugin is off (its selectors are not followed then), in force
            # once it is on again: the selectors are read whole
            w.commit("SELECTOR", {"s1": sign_selector("s1", "startsWith", "/test-api/only/")})
            # idle workers take a commit in within refresh_interval (0.1 s): the selector's
            # change is read (and passed over) while the plugin is off, not with the next one
            time.sleep(0.5)
            w.commit("PLUGIN", {"20": sign_plugin(True)})
            gw.eventually("/test-api/only/x", lambda s, h, b: b == refusal("sign version does not exist or is wrong!"),
                          streak=12)
            self.assertPassed(self.send(path), path)   # no longer protected: no rule for it
        finally:
            w.commit("SELECTOR", {"s1": sign_selector("s1", "startsWith", "/test-api/")})
            w.commit("PLUGIN", {"20": sign_plugin(True)})
            w.commit("APP_AUTH", {APP_KEY: MAIN_APP})
            gw.eventually(path, lambda s, h, b: b == refusal("sign version does not exist or is wrong!"), streak=12)
            gw.eventually(path, lambda s, h, b: s == 200, headers=signed(SECRET), streak=12)

    def test_the_first_request_after_a_revocation_is_refused(self):
        """A small change is applied by the request that notices it (signcache.catch_up): no
        request after the commit is let through with the revoked app, on any worker."""
        w, gw = self.writer, self.gw
        path = "/test-api/first"

        def signed(secret=SECRET):
            ts = now_ms()
            return v1(ts, APP_KEY, sign_v1(secret, ts, path))
        gw.eventually(path, lambda s, h, b: s == 200 and b'"path": "/test-api/first"' in b,
                      headers=signed(), streak=12)
        try:
            for change, message in ((dict(MAIN_APP, enabled=False), "sign appKey does not exist."),
                                    (dict(MAIN_APP, appSecret="ROTATED2222222222222222222222222"),
                                     "signature value is error!")):
                w.commit("APP_AUTH", {APP_KEY: change})
                for _ in range(20):   # fresh connections: both workers
                    self.assertRefused(self.send(path, signed()), message)
                w.commit("APP_AUTH", {APP_KEY: MAIN_APP})
                for _ in range(6):
                    self.assertPassed(self.send(path, signed()), path, APP_PARAM)
        finally:
            w.commit("APP_AUTH", {APP_KEY: MAIN_APP})

    def _answer(self, path, headers):
        status, _, data = self.send(path, headers)
        if status != 200:
            return None
        try:
            return json.loads(data).get("message")
        except ValueError:
            return None

    # ------------------------------------------------------------------ secrets
    def test_zz_no_secret_in_logs_or_headers(self):
        """After every other case (and its refusals and 400/500s): no secret anywhere."""
        ts = now_ms()
        self.send(PATH, v1(ts, APP_KEY, "errorSign"))
        self.send(PATH, v1(ts, APP_KEY, sign_v1(SECRET, ts, PATH)))
        for gw in (self.gw, self.old):
            log = gw.log()
            self.assertIn("gwsync sign table from generation", log)
            for secret in (SECRET, IT_SECRET, "ROTATED0000000000000000000000000"):
                self.assertNotIn(secret, log)
        for hdrs in self.seen_headers:
            for name, value in hdrs.items():
                for secret in (SECRET, IT_SECRET):
                    self.assertNotIn(secret, value, name)
        self.assertTrue(any("X-Gwsync-Generation" in h for h in self.seen_headers), "debug headers on")


if __name__ == "__main__":
    unittest.main()
