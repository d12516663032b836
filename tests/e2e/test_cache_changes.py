"""The cache's change log and long keys, end to end: admin emulator -> gwsyncd (lmdb
subscriber) -> the LMDB cache, read by the incremental reader docs/lmdb-cache.md shows. The
reader's code is taken from that page and run here, so the documented example is the tested
one.

- A selector whose id is 600 characters and an AI proxy API key whose proxyApiKey is 600
  characters reach the cache under their derived keys, and later changes of both groups keep
  flowing (issue 20 item 5: one such key used to fail every commit of its group, for ever).
- After every change the reader polls: it must follow the change log (never a full read,
  across a restart of gwsyncd too) and hold exactly what a full read of the cache holds,
  which is exactly what the admin published.

Needs no nginx: the admin emulator, gwsyncd and Python's lmdb binding.
"""
import os
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway  # noqa: E402
import harness  # noqa: E402
from items import compact, rule, selector  # noqa: E402

GROUPS = ("SELECTOR", "RULE", "AI_PROXY_API_KEY")
LONG_SELECTOR = "s" * 600
LONG_API_KEY = "k" * 600
CHANGES = 40


def documented_reader():
    """The first Python block of docs/lmdb-cache.md's "An incremental reader in Python"."""
    with open(os.path.join(harness.SRCDIR, "docs", "lmdb-cache.md"), encoding="utf-8") as f:
        page = f.read()
    section = page.split("### An incremental reader in Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {}
    exec(compile(code, "docs/lmdb-cache.md", "exec"), scope)
    return scope["Reader"], scope["stored_key"]


def ai_key(selector_id, api_key, rev=0):
    return {"id": "ak-%s-%d" % (api_key[:8], len(api_key)), "selectorId": selector_id,
            "proxyApiKey": api_key, "realApiKey": "sk-real-%d" % rev, "description": None,
            "enabled": True, "namespaceId": "649330b6-c2d7-4edc-be8e-8a54df9eb385"}


def key_of(group, item):
    if group == "AI_PROXY_API_KEY":
        return "%s::%s" % (item["selectorId"], item["proxyApiKey"])
    return item["id"]


class CacheChangesEndToEnd(unittest.TestCase):
    def test_long_keys_flow_and_the_documented_reader_follows_the_log(self):
        Reader, stored_key = documented_reader()
        stack = gateway.Stack(nginx=False)
        self.addCleanup(stack.close)
        rng = random.Random(19)
        held = {
            "SELECTOR": {s["id"]: s for s in [selector("s-%d" % i) for i in range(4)] +
                         [selector(LONG_SELECTOR)]},
            "RULE": {r["id"]: r for r in [rule("r-%d" % i, "s-0") for i in range(3)]},
            "AI_PROXY_API_KEY": {key_of("AI_PROXY_API_KEY", a): a
                                 for a in (ai_key("s-0", LONG_API_KEY), ai_key("s-0", "short"))},
        }
        stack.start_admin("shenyu", {g: list(v.values()) for g, v in held.items()}, hold=30)
        stack.start_daemon()
        stack.wait_synced(GROUPS)

        def published(group):
            return {stored_key(k.encode()): compact(v).encode()
                    for k, v in held[group].items()}

        # the long keys are stored under their digests, the values unchanged
        cached = stack.cache.items("SELECTOR")
        self.assertIn(stored_key(LONG_SELECTOR.encode()).decode(), cached)
        self.assertTrue(stored_key(LONG_SELECTOR.encode()).startswith(b"#sha256:"))
        self.assertEqual(len(stored_key(LONG_SELECTOR.encode())), 72)

        reader = Reader(stack.cache._open(), GROUPS)
        self.assertEqual(reader.poll(), "full")

        def check(step):
            for g in GROUPS:
                full = {k.encode(): v for k, v in stack.cache.items(g).items()}
                self.assertEqual(reader.items.get(g), full,
                                 "step %s: the reader differs from a full read of %s" % (step, g))
                self.assertEqual(full, published(g),
                                 "step %s: the cache differs from the admin's %s" % (step, g))
        check("start")

        for n in range(CHANGES):
            if n == CHANGES // 2:
                # a restart: each group's first change is a whole rewrite ("replace");
                # the log goes on, so the reader still follows it
                stack.daemon.restart()
            group = rng.choice(GROUPS)
            kind = rng.random()
            if group == "SELECTOR":
                sid = rng.choice([LONG_SELECTOR, "s-1", "s-2", "x" * 520 + str(n % 3)])
                if kind < 0.3 and sid in held[group]:
                    del held[group][sid]
                    v = stack.publish("delete", group, key=sid)
                else:
                    item = selector(sid, sort=n)
                    held[group][sid] = item
                    v = stack.publish("upsert", group, item=item)
            elif group == "RULE":
                rid = "r-%d" % rng.randrange(5)
                if kind < 0.3 and rid in held[group]:
                    del held[group][rid]
                    v = stack.publish("delete", group, key=rid)
                else:
                    item = rule(rid, "s-0", sort=n)
                    held[group][rid] = item
                    v = stack.publish("upsert", group, item=item)
            else:
                item = ai_key("s-0", rng.choice([LONG_API_KEY, "short", "m" * 700]), rev=n)
                k = key_of(group, item)
                if kind < 0.3 and k in held[group]:
                    del held[group][k]
                    v = stack.publish("delete", group, key=k)
                else:
                    held[group][k] = item
                    v = stack.publish("upsert", group, item=item)
            self.assertEqual(v["md5"], harness.md5_of(list(held[group].values())),
                             "the test's model of the admin")
            try:
                stack.wait_cache(v, timeout=30)
            except AssertionError as e:
                raise AssertionError("%s\n---- gwsyncd\n%s" % (e, stack.daemon.tail()))
            self.assertEqual(reader.poll(), "changes", "step %d: a full read" % n)
            check(n)


if __name__ == "__main__":
    harness.main()
