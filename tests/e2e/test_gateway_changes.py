"""End to end under load: nginx keeps routing correctly while the admin changes its routes
100 times, while gwsyncd is killed with SIGKILL, and after it is restarted.

Three keep-alive clients send ~450 requests/s in total (the issue asks for >= 2 clients and
>= 300/s) through nginx for the whole test. The admin's operations come from changes.py;
after each one the test waits until the cache holds it (meta md5, polled every 2 ms, with
the cache generation read in the same transaction) and lets the load run on that version
for a moment. Then every response is judged against the admin version it reflects, named by
oracle.py (not by the router under test): each answer says which cache generation its route
table reflects (X-Gwsync-Generation), which names the version (or, for a generation between
two that the test saw, the one before or the one after: the change in flight). A worker
applies a change off the request path, so an answer may reflect an older version than the
cache holds, but not by more than FRESH seconds. No response may be a 5xx, a transport
error, or an error code: every version of the script routes every request kind.

The figures printed (not thresholds): admin change -> first routed response p50/p99, admin
change -> cache, and how stale answers were (sent after the cache had a newer version).
"""
import bisect
import math
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import changes  # noqa: E402
import gateway  # noqa: E402
import harness  # noqa: E402
import oracle  # noqa: E402

GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM")
CHANGES = 100
DWELL = 0.04          # seconds of load on each version before the next operation
CLIENTS, RATE = 3, 450.0
MIN_RATE = 300.0
FRESH = 1.0           # seconds: a functional bound on how long a worker may answer from an
                      # older table than the cache holds (README: about one request plus the
                      # apply time when busy, the refresh interval when idle)


def percentile(values, p):
    values = sorted(values)
    return values[max(1, math.ceil(p / 100.0 * len(values))) - 1]


class Version:
    """One admin version: its state, its allowed answers per request kind, and the window
    [start, end) in which the gateway may serve it."""

    def __init__(self, state, ups, start, gen=None):
        self.state = state
        self.start = start
        self.end = float("inf")
        self.gen = gen            # the cache generation when the test saw it in the cache
        self.allowed = {kind: oracle.outcomes(state, {"path": path, "headers": headers},
                                              ups.name_of)
                        for kind, path, headers in changes.KINDS}


class GatewayUnderChanges(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = stack = gateway.Stack()
        cls.addClassCleanup(stack.close)
        cls.ups = stack.start_upstreams()
        cls.script = changes.Script(cls.ups)
        stack.start_admin("shenyu", cls.script.initial, hold=30)
        stack.start_daemon()
        stack.wait_synced(GROUPS)
        cls.nginx = stack.start_nginx("shenyu")

    def publish(self, op, group, payload):
        if op == "delete":
            return self.stack.publish(op, group, keys=payload)
        return self.stack.publish(op, group, items=payload)

    def test_routes_stay_correct_through_changes_and_a_killed_daemon(self):
        stack, ups = self.stack, self.ups
        state = oracle.new_state(self.script.initial)
        versions = [Version(state, ups, float("-inf"), stack.cache_state(GROUPS)[1])]
        to_cache = []
        specs = [{"kind": k, "path": p, "headers": h} for k, p, h in changes.KINDS]
        load = gateway.LoadGenerator(self.nginx.port, specs, clients=CLIENTS, rate=RATE)
        self.addCleanup(load.stop)
        load.start()
        time.sleep(0.3)

        # -- 100 admin changes under load
        for op, group, payload in self.script.ops(CHANGES):
            state = oracle.apply(state, op, group, payload)
            v = self.publish(op, group, payload)
            version = Version(state, ups, v["t"])
            t_cache, version.gen = stack.wait_generation(v)
            versions[-1].end = t_cache
            versions.append(version)
            to_cache.append(t_cache - v["t"])
            time.sleep(DWELL)

        # -- kill -9 gwsyncd: nginx keeps serving the last routes, even when the admin
        # changes meanwhile (the cache cannot know)
        time.sleep(0.2)
        stack.daemon.kill()
        t_killed = time.monotonic()
        time.sleep(0.5)
        op, group, payload = self.script.swap_main()
        state = oracle.apply(state, op, group, payload)
        v_dead = self.publish(op, group, payload)
        time.sleep(0.5)
        cache_while_dead = stack.cache.md5s([group])[group]
        t_restart = time.monotonic()
        stack.daemon.start()
        version = Version(state, ups, t_restart)     # cannot be in the cache before this
        t_cache, version.gen = stack.wait_generation(v_dead, timeout=20)
        versions[-1].end = t_cache
        versions.append(version)
        converged_in = t_cache - t_restart
        time.sleep(0.5)
        load.stop()

        # -- judge every response
        answers = load.answers
        self.assertNotEqual(cache_while_dead, v_dead["md5"], "the cache changed with gwsyncd dead?")
        for ver in versions:
            for kind, allowed in ver.allowed.items():
                self.assertTrue(all(o[0] == "up" for o in allowed),
                                "test data: a version without a route for %s: %s" % (kind, allowed))
        gens = [ver.gen for ver in versions]
        wrong, dead_wrong, stale, no_gen = [], [], [], []
        for a in answers:
            obs = oracle.observed(a)
            g = a.generation
            if g is None:
                no_gen.append(a)
                continue
            # the version this generation is: the last one seen at or before it; between two
            # seen generations, the change in flight: the one before or the one after
            i = bisect.bisect_right(gens, g) - 1
            possible = [versions[max(i, 0)]]
            if i + 1 < len(versions) and g != gens[i]:
                possible.append(versions[i + 1])
            if not any(obs in ver.allowed[a.kind] for ver in possible):
                wrong.append((a, obs, [sorted(ver.allowed[a.kind]) for ver in possible]))
            # how stale: sent after a newer version was in the cache
            newest = bisect.bisect_right([ver.end for ver in versions], a.t0)   # versions[:newest] ended
            if newest < len(versions) and g < gens[newest] and newest > i:
                lag = a.t0 - versions[newest - 1].end
                stale.append(lag)
            if t_killed <= a.t0 and a.t1 <= t_restart and obs not in versions[-2].allowed[a.kind]:
                dead_wrong.append((a, obs))
        statuses = {}
        for a in answers:
            statuses[a.status] = statuses.get(a.status, 0) + 1
        codes = [a for a in answers if a.code is not None]

        # -- the figure: change -> first response only the new version allows
        first_routed = []
        for i in range(1, len(versions)):
            prev, ver = versions[i - 1], versions[i]
            new = {k: ver.allowed[k] - prev.allowed[k] for k in ver.allowed}
            if not any(new.values()):
                continue
            hits = [a.t1 - ver.start for a in answers
                    if a.t0 >= ver.start and a.t1 < ver.end and oracle.observed(a) in new[a.kind]]
            if hits:
                first_routed.append(min(hits))
        total, seconds, rate, low, gap = load.rate_report()
        served_dead = [a for a in answers if t_killed <= a.t0 and a.t1 <= t_restart]
        sys.stderr.write(
            "\n  load: %d responses in %.1f s = %.0f/s (lowest whole second %d/s, longest gap "
            "%.0f ms), %d clients, statuses %s\n"
            "  admin change -> cache: p50 %.1f ms, p99 %.1f ms (%d changes)\n"
            "  admin change -> first routed response: p50 %.1f ms, p99 %.1f ms (%d visible changes)\n"
            "  gwsyncd killed: %d responses served from the cache while it was down; restart -> "
            "converged in %.0f ms\n"
            "  answers from an older table than the cache held: %d of %d, lag p99 %.1f ms, "
            "max %.1f ms\n"
            % (total, seconds, rate, low, gap * 1000, CLIENTS, statuses,
               percentile(to_cache, 50) * 1000, percentile(to_cache, 99) * 1000, len(to_cache),
               percentile(first_routed, 50) * 1000 if first_routed else float("nan"),
               percentile(first_routed, 99) * 1000 if first_routed else float("nan"),
               len(first_routed), len(served_dead), converged_in * 1000,
               len(stale), len(answers), percentile(stale, 99) * 1000 if stale else 0.0,
               max(stale) * 1000 if stale else 0.0))

        def show(rows):
            return "\n".join("  %s %s sent at %.3f: %r, allowed: %r" % (
                r[0].kind, r[0].upstream, r[0].t0, r[1], r[2] if len(r) > 2 else "the last routes")
                for r in rows[:15])
        errors = [a for a in answers if a.error]
        if errors:
            self.fail("%d transport errors, first: %r" % (len(errors), errors[:5]))
        self.assertEqual({s: n for s, n in statuses.items() if s is None or s >= 500}, {},
                         "5xx answers")
        if codes:
            self.fail("%d error codes (-107/-102/-119...) while routes exist: %r"
                      % (len(codes), codes[:5]))
        if no_gen:
            self.fail("%d answers without X-Gwsync-Generation: %r" % (len(no_gen), no_gen[:5]))
        if wrong:
            self.fail("%d responses not allowed by the version they reflect:\n%s"
                      % (len(wrong), show(wrong)))
        self.assertLess(max(stale) if stale else 0.0, FRESH,
                        "an answer came from a table older than the cache for too long")
        if dead_wrong:
            self.fail("while gwsyncd was dead, %d responses not from the last routes:\n%s"
                      % (len(dead_wrong), show(dead_wrong)))
        self.assertGreater(len(served_dead), 100, "too little load while gwsyncd was dead")
        self.assertGreaterEqual(rate, MIN_RATE, "load rate")
        self.assertLess(gap, 0.5, "the load stalled")
        self.assertGreaterEqual(len(first_routed), CHANGES // 2,
                                "most visible changes should be seen routed during their dwell")
        bad = [l for l in self.nginx.errors_logged()
               if re.search(r"runtime error|lua entry thread aborted|attempt to", l)]
        self.assertEqual(bad, [], "nginx logged Lua failures")


if __name__ == "__main__":
    harness.main()
