"""End to end: the apps the admin publishes (APP_AUTH) protect routes through ShenYu's sign
plugin in nginx, as gwsyncd writes them.

admin emulator -> gwsyncd (lmdb subscriber) -> LMDB env -> nginx + contrib/nginx/lua -> an
upstream. tests/lua/test_sign_nginx.py runs ShenYu's sign test cases against a cache written by
Python; this test proves the same plugin reads what the real agent writes (the admin's PLUGIN,
SELECTOR and RULE items of the sign plugin, and APP_AUTH), and that an admin's change to an app
(disabled, secret rotated, deleted) is refused by the gateway once it reaches the cache,
without a reload. Every answer says which cache generation its table reflects
(X-Gwsync-Generation): a check repeats its request until the answer reflects the generation
the cache had after the change (contrib/nginx/README.md, "How fresh a worker's view is").
"""
import json
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "lua"))
import gateway  # noqa: E402
from items import cond, discover, plugin, rule, selector  # noqa: E402
from test_sign_nginx import (APP_KEY, SECRET, app, now_ms, refusal, sign_plugin,  # noqa: E402
                             sign_rule, sign_selector, sign_v1, v1)

GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM", "APP_AUTH")
PATH = "/signed/x"
APP = app(APP_KEY, SECRET, ["/signed/**"])


class SignFromTheAgent(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = stack = gateway.Stack()
        cls.addClassCleanup(stack.close)
        ups = stack.start_upstreams(("up-a",))
        data = {
            "PLUGIN": [plugin(True), dict(sign_plugin(), namespaceId=plugin(True)["namespaceId"])],
            "SELECTOR": [selector("d1", [cond("uri", "startsWith", "/")]),
                         sign_selector("s1", "startsWith", "/signed/")],
            "RULE": [rule("dr1", "d1", [cond("uri", "startsWith", "/")]),
                     sign_rule("r1", "s1", "startsWith", "/signed/", False)],
            "DISCOVER_UPSTREAM": [discover("d1", [ups.url("up-a")])],
            "APP_AUTH": [APP],
        }
        stack.start_admin("shenyu", data)
        stack.start_daemon()
        stack.wait_synced(GROUPS)
        cls.gen = stack.cache_state(GROUPS)[1]
        cls.nginx = stack.start_nginx("shenyu")
        cls.client = cls.nginx.client()
        cls.addClassCleanup(cls.client.close)

    def answer(self, secret, timeout=15.0):
        """A request signed with `secret`, repeated until its table reflects self.gen."""
        deadline = time.monotonic() + timeout
        while True:
            ts = now_ms()
            a = self.client.get(PATH, list(v1(ts, APP_KEY, sign_v1(secret, ts, PATH)).items()))
            if a.error or (a.generation or 0) >= self.gen or time.monotonic() > deadline:
                return a
            time.sleep(0.005)

    def change(self, op, **kw):
        v = self.stack.publish(op, "APP_AUTH", **kw)
        type(self).gen = self.stack.wait_generation(v)[1]

    def assertRefused(self, a, message):
        self.assertGreaterEqual(a.generation or 0, self.gen, a)
        self.assertEqual((a.status, a.body), (200, refusal(message)), a)

    def test_the_agents_apps_protect_the_route_and_changes_revoke_them(self):
        a = self.answer(SECRET)
        self.assertEqual((a.status, a.upstream), (200, "up-a"), a)
        a = self.client.get(PATH)
        self.assertEqual(a.body, refusal("sign version does not exist or is wrong!"), a)
        # an unprotected path is routed unchecked
        self.assertEqual(self.client.get("/open").upstream, "up-a")
        try:
            self.change("upsert", item=dict(APP, enabled=False))
            self.assertRefused(self.answer(SECRET), "sign appKey does not exist.")
            new = "ROTATED1111111111111111111111111"
            self.change("upsert", item=dict(APP, appSecret=new))
            self.assertRefused(self.answer(SECRET), "signature value is error!")
            self.assertEqual(self.answer(new).upstream, "up-a")
            self.change("delete", key=APP_KEY)
            self.assertRefused(self.answer(new), "sign appKey does not exist.")
        finally:
            self.change("upsert", item=APP)
        self.assertEqual(self.answer(SECRET).upstream, "up-a")
        log = "\n".join(n.log_text() for n in self.stack.nginxes)
        self.assertNotIn(SECRET, log)
        self.assertNotIn("ROTATED1111111111111111111111111", log)
        self.assertEqual(json.loads(self.client.get("/signed/y", [("version", "1.0.0")]).body)["code"], 401)


if __name__ == "__main__":
    unittest.main()
