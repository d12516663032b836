"""End to end at scale: a 1,000-selector table changed every 200 ms for 10 s under keep-alive
load, and no request waits for it (issue 19, "Prove it").

admin emulator -> gwsyncd (lmdb) -> LMDB -> nginx (2 workers, contrib/nginx) -> 3 upstreams.
1,000 divide selectors (half `match /sN/**`, half `startsWith /sN/`), one rule and one
DISCOVER_UPSTREAM item each. Three keep-alive clients send ~300 requests/s to 30 of the
selectors' paths while the admin makes one change every 200 ms to those selectors: an upstream
moved, a new winning rule added and the old one removed, a selector's condition switched
between `match` and `startsWith` (so it moves between the index's tries) and its `sort`
changed. Every version routes every path.

Asserted: every response is the one the admin version it reflects allows (oracle.py; the
version from the answer's X-Gwsync-Generation, as in test_gateway_changes.py), answers lag
the cache by less than FRESH seconds, zero failed requests (no transport error, no 5xx, no
error code), no response slower than 250 ms (a functional bound from the issue, not a
benchmark), and each worker applied every change to its table in place (its log says so for
every generation after its first load): nothing was rebuilt.
Printed: the latency p50/p99/max and how stale answers were.
"""
import bisect
import math
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway  # noqa: E402
import harness  # noqa: E402
import oracle  # noqa: E402
from items import cond, discover, plugin, rule, selector  # noqa: E402

GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM")
NSEL = 1000
NAMES = ("up-a", "up-b", "up-c")
HOT = list(range(0, NSEL, NSEL // 30))[:30]    # the selectors the load asks for and changes touch
EVERY, SECONDS = 0.2, 10.0
CLIENTS, RATE = 3, 300.0
BOUND = 0.25          # no response slower than this (issue 19)
FRESH = 1.0           # answers may come from an older table than the cache this long at most


def percentile(values, p):
    values = sorted(values)
    return values[max(1, math.ceil(p / 100.0 * len(values))) - 1]


def sel_id(n):
    return "s%04d" % n


def make_selector(n, kind="match", sort=None):
    c = cond("uri", "match", "/s%d/**" % n) if kind == "match" else cond("uri", "startsWith", "/s%d/" % n)
    return selector(sel_id(n), [c], sort=n + 1 if sort is None else sort)


def make_rule(n, gen, sort=1):
    return rule("r%04d-%d" % (n, gen), sel_id(n), [cond("uri", "match", "/s%d/**" % n)], sort=sort)


class Script:
    """The starting dataset and the changes, with the state every one of them leaves."""

    def __init__(self, ups):
        self.ups = ups
        self.up = {n: n % 3 for n in range(NSEL)}
        self.rule_gen = {n: 0 for n in range(NSEL)}
        self.kind = {n: "match" if n % 2 == 0 else "startsWith" for n in range(NSEL)}
        self.initial = {
            "PLUGIN": [plugin(True)],
            "SELECTOR": [make_selector(n, self.kind[n]) for n in range(NSEL)],
            "RULE": [make_rule(n, 0) for n in range(NSEL)],
            "DISCOVER_UPSTREAM": [self.disc(n) for n in range(NSEL)],
        }

    def disc(self, n):
        return discover(sel_id(n), [self.ups.url(NAMES[self.up[n]])])

    def ops(self):
        """An endless sequence of single admin operations on the HOT selectors."""
        k = 0
        while True:
            n = HOT[k % len(HOT)]
            step = (k // len(HOT)) % 4
            if step == 0:                                   # an upstream moves
                self.up[n] = (self.up[n] + 1) % 3
                yield "upsert", "DISCOVER_UPSTREAM", [self.disc(n)]
            elif step == 1:                                 # a new rule wins (lower sort)
                self.rule_gen[n] += 1
                yield "upsert", "RULE", [make_rule(n, self.rule_gen[n], sort=0)]
            elif step == 2:                                 # the old rule goes
                yield "delete", "RULE", ["r%04d-%d" % (n, self.rule_gen[n] - 1)]
            else:                                           # match <-> startsWith, new sort
                self.kind[n] = "startsWith" if self.kind[n] == "match" else "match"
                yield "upsert", "SELECTOR", [make_selector(n, self.kind[n], sort=NSEL + k)]
            k += 1


def hot_state(state):
    """The part of a version the oracle needs for the load's paths: /sN/x can only match
    selector sN (every selector has its own prefix), so the others are left out (the oracle
    scans every selector it is given)."""
    ids = {sel_id(n) for n in HOT}
    return {"PLUGIN": state["PLUGIN"],
            "SELECTOR": {k: v for k, v in state["SELECTOR"].items() if k in ids},
            "RULE": {k: v for k, v in state["RULE"].items() if v["selectorId"] in ids},
            "DISCOVER_UPSTREAM": {k: v for k, v in state["DISCOVER_UPSTREAM"].items() if k in ids}}


class GatewayAtScale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = stack = gateway.Stack()
        cls.addClassCleanup(stack.close)
        cls.ups = stack.start_upstreams(NAMES)
        cls.script = Script(cls.ups)
        stack.start_admin("shenyu", cls.script.initial, hold=30)
        stack.start_daemon()
        stack.wait_synced(GROUPS, timeout=60)
        cls.nginx = stack.start_nginx("shenyu")

    def publish(self, op, group, payload):
        if op == "delete":
            return self.stack.publish(op, group, keys=payload)
        return self.stack.publish(op, group, items=payload)

    def test_a_change_every_200ms_under_load_is_applied_in_place_and_no_request_waits(self):
        stack, ups = self.stack, self.ups
        state = oracle.new_state(self.script.initial)
        kinds = [("s%d" % n, "/s%d/x" % n) for n in HOT]
        specs = [{"kind": k, "path": p, "headers": []} for k, p in kinds]
        # the first table of both workers, before the load starts
        client = self.nginx.client()
        harness.wait_until(lambda: client.get(kinds[0][1]).status == 200, timeout=60,
                           message="nginx routes the table")
        client.close()
        harness.wait_until(lambda: len(re.findall(r"routes built from generation",
                                                  self.nginx.log_text())) >= 2,
                           timeout=60, message="both workers built their first table")
        log_from = self.nginx.log_size()

        versions = []             # (generation seen, time seen, state); allowed answers later
                                  # (this process also runs the load: keep it idle meanwhile)

        def add_version(state, t_seen, gen):
            versions.append((gen, t_seen, state))

        add_version(state, time.monotonic(), stack.cache_state(GROUPS)[1])
        load = gateway.LoadGenerator(self.nginx.port, specs, clients=CLIENTS, rate=RATE)
        self.addCleanup(load.stop)
        load.start()
        time.sleep(0.5)
        ops = self.script.ops()
        t_end = time.monotonic() + SECONDS
        next_at = time.monotonic()
        changes = 0
        while next_at < t_end:
            now = time.monotonic()
            if next_at > now:
                time.sleep(next_at - now)
            next_at += EVERY
            op, group, payload = next(ops)
            state = oracle.apply(state, op, group, payload)
            v = self.publish(op, group, payload)
            t_seen, gen = stack.wait_generation(v)
            add_version(state, t_seen, gen)
            changes += 1
        time.sleep(0.5)
        load.stop()

        # -- judge every response by the version its generation names
        for i, (gen, t_seen, st) in enumerate(versions):
            hs = hot_state(st)
            versions[i] = (gen, t_seen, {k: oracle.outcomes(hs, {"path": p, "headers": []},
                                                            ups.name_of) for k, p in kinds})
        answers = load.answers
        gens = [v[0] for v in versions]
        seen_at = [v[1] for v in versions]
        failed, wrong, stale, slow = [], [], [], []
        for a in answers:
            if a.error or a.status is None or a.status >= 500 or a.code is not None:
                failed.append(a)
                continue
            g = a.generation
            if g is None:
                failed.append(a)
                continue
            i = max(bisect.bisect_right(gens, g) - 1, 0)
            possible = [versions[i]]
            if i + 1 < len(versions) and g != gens[i]:
                possible.append(versions[i + 1])
            obs = oracle.observed(a)
            if not any(obs in v[2][a.kind] for v in possible):
                wrong.append((a, obs, [sorted(v[2][a.kind]) for v in possible]))
            newest = bisect.bisect_right(seen_at, a.t0) - 1     # the newest version cached at t0
            if newest > i and g < gens[newest]:
                stale.append(a.t0 - seen_at[newest])
            if a.t1 - a.t0 >= BOUND:
                slow.append(a)
        lat = [a.t1 - a.t0 for a in answers]
        total, seconds, rate, low, gap = load.rate_report()
        sys.stderr.write(
            "\n  %d selectors, %d changes in %.0f s; load: %d responses = %.0f/s (lowest whole "
            "second %d/s), latency p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"
            "  answers from an older table than the cache held: %d, lag p99 %.1f ms, max %.1f ms\n"
            % (NSEL, changes, SECONDS, total, rate, low, percentile(lat, 50) * 1000,
               percentile(lat, 99) * 1000, max(lat) * 1000, len(stale),
               percentile(stale, 99) * 1000 if stale else 0.0, max(stale) * 1000 if stale else 0.0))

        self.assertEqual(failed[:5], [], "%d failed requests" % len(failed))
        self.assertEqual(wrong[:5], [], "%d responses not allowed by the version they reflect"
                         % len(wrong))
        self.assertLess(max(stale) if stale else 0.0, FRESH, "an answer lagged the cache too long")
        self.assertEqual([(a.t0, round((a.t1 - a.t0) * 1000)) for a in slow[:5]], [],
                         "%d responses took %d ms or more" % (len(slow), BOUND * 1000))
        self.assertGreaterEqual(changes, 40)
        self.assertGreater(len(answers), 1500, "too little load")
        # every generation after the first load was applied in place, by both workers
        with open(self.nginx.error_log, encoding="utf-8", errors="replace") as f:
            f.seek(log_from)
            built = re.findall(r"routes built from generation \d+ \([^)]*\); (\w+ \w+) from ([^,]+)",
                               f.read())
        self.assertGreaterEqual(len(built), changes, "every change logged by the workers")
        self.assertEqual(sorted({how for how, _ in built}), ["in place"],
                         "a change rebuilt a table: %r" % sorted(set(built)))
        bad = [l for l in self.nginx.errors_logged()
               if re.search(r"runtime error|lua entry thread aborted|attempt to", l)]
        self.assertEqual(bad, [], "nginx logged Lua failures")


if __name__ == "__main__":
    harness.main()
