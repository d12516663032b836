"""End to end: nginx routes real requests exactly as ShenYu's divide plugin would, from the
LMDB cache gwsyncd's `lmdb` subscriber writes from the admin's data.

admin emulator -> gwsyncd (lmdb subscriber) -> LMDB env -> nginx + contrib/nginx/lua ->
three upstream servers. The table of requests and the dataset are in routes.py, each case
citing the DIVIDE-SEMANTICS.md rule it checks. Two admin generations: ShenYu 2.6+
(upstreams from DISCOVER_UPSTREAM) and 2.4/2.5 (upstreams from the selector handle). A
second nginx on the same cache answers errors as plain HTTP statuses.

One stack per class (setUpClass); data phases are published through the emulator's control
API and every test first puts the base dataset back if a previous test changed it.

Each nginx worker applies a change from a timer, off the request path, so the answer to a
request sent right after the cache changed may still come from the previous table. Every
answer says which cache generation its table reflects (debug header X-Gwsync-Generation): a
check repeats its request until the answer reflects at least the generation the cache had
when the data phase was in place, then asserts on it.

The table asserts ShenYu's own client-address rule (the left-most X-Forwarded-For entry of a
single header line), so nginx runs with client_address = "shenyu"; the gateway's default
(nginx's $remote_addr) is tested in tests/lua/test_lmdb_reader.py.
"""
import hashlib
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway  # noqa: E402
import harness  # noqa: E402
import loadgen  # noqa: E402
import routes  # noqa: E402
from items import plugin  # noqa: E402
from routes import Err, Up  # noqa: E402

# Lua failures nginx logs; none may happen on any request of these tests.
LUA_FAILURE = r"runtime error|lua entry thread aborted|failed to run|attempt to"


class RoutingFromDiscoverUpstream(unittest.TestCase):
    MODE = "shenyu"
    GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM")
    # replace order: upstreams and rules before the selectors that use them
    ORDER = ("DISCOVER_UPSTREAM", "RULE", "SELECTOR", "PLUGIN")
    WITH_PLAIN = True

    @classmethod
    def setUpClass(cls):
        cls.stack = stack = gateway.Stack()
        cls.addClassCleanup(stack.close)
        cls.ups = stack.start_upstreams()
        cls.base = routes.dataset(cls.ups, cls.MODE)
        stack.start_admin(cls.MODE, cls.base)
        stack.start_daemon()
        stack.wait_synced(cls.GROUPS)
        cls.min_gen = stack.cache_state(cls.GROUPS)[1]
        cls.nginx = stack.start_nginx("shenyu", client_address="shenyu")
        cls.client = cls.nginx.client()
        cls.addClassCleanup(cls.client.close)
        if cls.WITH_PLAIN:
            cls.plain = stack.start_nginx("plain", client_address="shenyu")
            cls.plain_client = cls.plain.client()
            cls.addClassCleanup(cls.plain_client.close)

    def setUp(self):
        self.ensure(self.base)

    def tearDown(self):
        for n in self.stack.nginxes:
            bad = [l for l in n.errors_logged() if re.search(LUA_FAILURE, l)]
            self.assertEqual(bad, [], "nginx logged Lua failures (%s)" % n.prefix)

    # -------------------------------------------------------------- helpers
    def ensure(self, data):
        """Publish `data` (only the groups that differ) and wait until the cache has it."""
        versions = []
        current = self.stack.admin_md5s(self.GROUPS)
        for group in self.ORDER:
            items = data.get(group, [])
            if current[group] != harness.md5_of(items):
                versions.append(self.stack.publish("replace", group, items=items))
        if versions:
            _, gen = self.stack.wait_generation(*versions)
            type(self).min_gen = gen

    def fresh(self, client, method, path, headers=(), body=None, timeout=10.0):
        """client.request(...), repeated until the answering table reflects the data phase."""
        deadline = time.monotonic() + timeout
        while True:
            a = client.request(method, path, headers, body=body)
            if a.error or (a.generation or 0) >= self.min_gen or time.monotonic() > deadline:
                return a
            time.sleep(0.005)

    def check(self, client, case, plain=False):
        label, method, path, headers, expected = case
        body = b"hello" if method in ("POST", "PUT") else None
        a = self.fresh(client, method, path, headers, body=body)
        self.assertGreaterEqual(a.generation or 0, self.min_gen, "%s: answered by a table older "
                                "than the data phase: %r" % (label, a))
        where = "%s: %s %s %s -> %r" % (label, method, path, headers, a)
        self.assertIsNone(a.error, where)
        if isinstance(expected, Up):
            self.assertEqual((a.status, a.upstream), (200, expected.upstream), where)
            self.assertEqual(a.selector, expected.selector,
                             where + " (selector; debug header %s)" % loadgen.SELECTOR_HEADER)
            if expected.rule is not None:
                self.assertEqual(a.rule, expected.rule,
                                 where + " (rule; debug header %s)" % loadgen.RULE_HEADER)
            raw_path, _, query = path.partition("?")
            self.assertEqual((a.echo["method"], a.echo["path"], a.echo["query"]),
                             (method, raw_path, query), where + " (request as the upstream saw it)")
            return a
        self.assertIsNone(a.upstream, where)
        if plain:
            self.assertEqual(a.status, routes.PLAIN_STATUS[expected.code], where)
        else:
            self.assertEqual(a.status, 200, where + " (ShenYu answers its errors with HTTP 200)")
            self.assertEqual(a.doc, {"code": expected.code, "message": routes.MESSAGES[expected.code]},
                             where)
            self.assertTrue(a.header("Content-Type").startswith("application/json"), where)
        return a

    def run_cases(self, cases, client=None, plain=False):
        for case in cases:
            with self.subTest(case[0]):
                self.check(client or self.client, case, plain)

    # -------------------------------------------------------------- the table
    def test_requests_route_as_shenyu_divide_does(self):
        self.run_cases(routes.CASES)

    def test_plain_errors_answer_http_statuses(self):
        if not self.WITH_PLAIN:
            self.skipTest("plain errors are checked once, in %s" % RoutingFromDiscoverUpstream.__name__)
        plain_cases = [c for c in routes.CASES if isinstance(c[4], Err)]
        self.assertEqual({c[4].code for c in plain_cases}, {-107, -102, -119})
        self.run_cases(plain_cases, self.plain_client, plain=True)
        # and the same routes: a plain gateway differs in its errors only
        self.run_cases([c for c in routes.CASES if isinstance(c[4], Up)][:10], self.plain_client)

    # -------------------------------------------------------------- load balancing (§6)
    def answers(self, path, n, headers=()):
        out = []
        for _ in range(n):
            a = self.fresh(self.client, "GET", path, headers)
            self.assertEqual(a.status, 200, repr(a))
            out.append(a.upstream)
        return out

    def test_round_robin_takes_each_equal_weight_upstream_in_turn(self):
        got = self.answers("/rr/x", 6)
        self.assertEqual(sorted(got), ["up-a", "up-a", "up-b", "up-b", "up-c", "up-c"], got)
        self.assertEqual(got[:3], got[3:], "smooth weighted round-robin repeats A,B,C: %s" % got)

    def test_weighted_round_robin_follows_the_weights(self):
        got = self.answers("/wrr/x", 6)       # weights 100 (up-b) and 50 (up-c)
        self.assertEqual(sorted(got), ["up-b"] * 4 + ["up-c"] * 2, got)

    def test_hash_picks_shenyus_ring_node_for_the_client_ip(self):
        def h(key):
            d = hashlib.md5(key.encode("utf-8")).digest()
            return d[0] | d[1] << 8 | d[2] << 16 | d[3] << 24
        ring = sorted((h("SHENYU-%s-HASH-%d" % (self.ups.url(n), i)), n)
                      for n in ("up-a", "up-b", "up-c") for i in range(5))
        key = h("127.0.0.1")
        want = next((n for v, n in ring if v >= key), ring[0][1])
        self.assertEqual(self.answers("/hash/x", 4), [want] * 4)

    def test_specify_domain_header_forces_a_healthy_upstream(self):
        b = self.ups.url("up-b")
        self.assertEqual(self.answers("/rr/x", 4, [("specify-domain", b)]), ["up-b"] * 4)

    # -------------------------------------------------------------- errors
    def test_unknown_operator_answers_400_only_where_evaluated(self):
        a = self.fresh(self.client, "GET", "/badop/x")
        self.assertEqual((a.status, a.doc), (400, {"code": 400, "message": "like name is error"}),
                         repr(a))
        self.check(self.client, routes.CASES[0])      # other selectors are unaffected

    # -------------------------------------------------------------- other data phases
    def test_full_flow_selector_and_disabled_plugin(self):
        self.addCleanup(self.ensure, self.base)
        flow = routes.full_flow_dataset(self.ups, self.MODE)
        self.ensure(flow)
        self.run_cases(routes.FULL_FLOW_CASES)
        # §4 step 1 / §5: the divide plugin disabled -> skipped -> -106
        off = dict(flow, PLUGIN=[plugin(False, self.MODE)])
        self.ensure(off)
        self.run_cases([("divide disabled", "GET", "/anything", [], Err(-106)),
                        ("divide disabled (custom)", "GET", "/cust3/x?q=1", [("X-C", "1")],
                         Err(-106))])
        if self.WITH_PLAIN:
            self.run_cases([("divide disabled, plain", "GET", "/anything", [], Err(-106))],
                           self.plain_client, plain=True)
        # enabled again: routes come back without any other change
        self.ensure(flow)
        self.run_cases(routes.FULL_FLOW_CASES[:1])


class RoutingFromSelectorHandle(RoutingFromDiscoverUpstream):
    """ShenYu 2.4/2.5 (emulator mode shenyu-legacy): no DISCOVER_UPSTREAM group, upstreams
    are the selector handle's DivideUpstream list (status false = not offered)."""
    MODE = "shenyu-legacy"
    GROUPS = ("PLUGIN", "SELECTOR", "RULE")
    ORDER = ("RULE", "SELECTOR", "PLUGIN")
    WITH_PLAIN = False


if __name__ == "__main__":
    harness.main()
