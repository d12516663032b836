#!/usr/bin/env python3
"""Figure 13: revoking an app, end to end (issue 29 part 3, the sign plugin).

    python3 bench/gateway/revoke.py BUILD_DIR [--size 10000x10] [--workers 2] [--apps 1000]

The admin disables an app or rotates its secret; how long until the first request signed
with the old credentials is refused by every nginx worker? Measured under 70 % load, with
figure 11's route table (scaledata.py: --size selectors x rules, nginx with --workers
workers, the example nginx.conf and this tree's contrib/nginx/lua) plus ShenYu's sign plugin
enabled, one sign selector and rule protecting /s0/r0/ (a path the load never sends), and
--apps apps (APP_AUTH, `open: true`, /s0/** granted).

 1. bench/cachewriter fills the cache with the route table (as figure 11), nginx starts; its
    routed maximum is measured (pacedload, --rounds x --max-seconds) for the 70 % load.
 2. gwsyncd (lmdb subscriber, then bench_sub.so, which reports each apply()) follows the admin
    emulator (tests/admin) by WebSocket; the emulator holds the table plus the sign plugin's
    items and the apps; PLUGIN, SELECTOR, RULE and APP_AUTH are synced (DISCOVER_UPSTREAM stays
    as written in 1, as figure 11's end-to-end row does).
 3. Under paced load at 70 % of the maximum: --changes rounds, each on an app not touched
    before, alternately disabling it (`enabled: false`) and rotating its secret. One pinned
    keep-alive connection per worker sends, every 5 ms, a request freshly signed (version
    1.0.0, timestamp now) with the app's old credentials, from before the admin pushes the
    APP_AUTH UPDATE event until that worker refuses it (HTTP 401 with the example's plain
    errors: "sign appKey does not exist." / "signature value is error!"). Value: from the
    push to the slowest worker's first refusal; floor: the same push to gwsyncd's cache
    commit (bench_sub's report of the APP_AUTH apply).

Output: "ROW|..." lines for bench/table.py (figure 13), progress on stderr, raw figures in
BUILD_DIR/bench-run/gatewayscale/raw.jsonl.
"""
import argparse
import hashlib
import os
import socket
import statistics
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scale  # noqa: E402
import scaledata  # noqa: E402
import scalestack as st  # noqa: E402

scale.FIGURE = "13"
PROBE = "/s0/r0/item"
SIGN_PLUGIN = {"id": "20", "name": "sign", "config": None, "role": "Authentication",
               "enabled": True, "sort": 20, "pluginJar": None}
POLL = 0.005


def log(msg):
    print("bench-revoke: " + msg, file=sys.stderr, flush=True)


def sign_items(ns):
    cond = {"paramType": "uri", "operator": "startsWith", "paramName": "/", "paramValue": "/s0/r0/"}
    sel = {"id": "sign-s0", "pluginId": "20", "pluginName": "sign", "name": "sign-s0",
           "matchMode": 0, "type": 1, "sort": 1, "enabled": True, "logged": False,
           "continued": True, "handle": None, "conditionList": [cond], "namespaceId": ns}
    rule = {"id": "sign-r0", "name": "sign-r0", "pluginName": "sign", "selectorId": "sign-s0",
            "matchMode": 0, "sort": 1, "enabled": True, "loged": False,
            "handle": '{"signRequestBody":false}', "conditionDataList": [cond],
            "matchRestful": False, "namespaceId": ns}
    return sel, rule


def app(i, secret, ns, enabled=True):
    return {"appKey": "APP%029d" % i, "appSecret": secret, "enabled": enabled, "open": True,
            "paramDataList": [], "namespaceId": ns,
            "pathDataList": [{"appName": "bench", "path": "/s0/**", "enabled": True}]}


def secret_of(i, gen=0):
    return hashlib.md5(("secret-%d-%d" % (i, gen)).encode()).hexdigest().upper()


def signed_headers(key, secret, path):
    ts = str(int(time.time() * 1000))
    data = "path%stimestamp%sversion1.0.0" % (path, ts)
    sg = hashlib.md5((data + secret).encode()).hexdigest().upper()
    return {"version": "1.0.0", "appKey": key, "timestamp": ts, "sign": sg}


def signed_get(c, path, headers, timeout):
    """st.Pinned.get with request headers: (status, body, t0_ns, t1_ns)."""
    deadline = time.monotonic() + timeout
    while c.owed:
        c._answer(deadline)
        c.owed -= 1
    t0 = time.monotonic_ns()
    head = "".join("%s: %s\r\n" % kv for kv in headers.items())
    c.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n" % (path, c.port, head)).encode())
    c.owed = 1
    status, body = c._answer(deadline)
    c.owed = 0
    return status, body, t0, time.monotonic_ns()


class Revoke(scale.Config):
    """One route table and nginx (scale.Config), gwsyncd over WebSocket, the rounds."""

    def apps_dataset(self):
        import items as e2e_items
        ns = e2e_items.NAMESPACE
        data = self.table.dataset()
        sel, rule = sign_items(ns)
        data["PLUGIN"] = data["PLUGIN"] + [dict(SIGN_PLUGIN, namespaceId=ns)]
        data["SELECTOR"] = data["SELECTOR"] + [sel]
        data["RULE"] = data["RULE"] + [rule]
        self.secrets = [secret_of(i) for i in range(self.args.apps)]
        data["APP_AUTH"] = [app(i, self.secrets[i], ns) for i in range(self.args.apps)]
        self.ns = ns
        return data

    def wait_routed(self, timeout=300):
        res = st.concurrently([lambda c=self.conns[p]: c.get(self.table.steady_path(1), timeout=timeout)
                               for p in self.pids], timeout + 5)
        self.check_conns(res)

    def run(self):
        import harness
        import ws_messages
        self.wait_routed()
        self.wait_idle("before the maximum")
        self.maximum()
        self.writer.close()
        self.writer = None
        data = self.apps_dataset()
        sock_path = os.path.join(self.dir, "reports.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(sock_path)
        os.chmod(sock_path, 0o777)
        admin = harness.Emulator(mode="shenyu", hold=60, dataset=data)
        admin.start(timeout=300)
        groups = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH"]
        subs = [{"name": "cache", "library": self.ctx.lmdb_so,
                 "config": {"path": self.cache, "map_size": "1GiB"}},
                {"name": "bench", "library": os.path.join(self.ctx.tools, "bench_sub.so"),
                 "config": {"report": sock_path}}]
        cfg = harness.make_config(servers=["ws://127.0.0.1:%d/websocket" % admin.port],
                                  subscribers=subs, log_level="warn", max_response="512MiB",
                                  state_dir=os.path.join(self.dir, "state"),
                                  extra={"control_socket": ""}, groups=groups, username=None,
                                  password=None, admin_extra={"websocket": {"resync_interval": 0}})
        tmp = os.path.join(self.dir, "daemon")
        os.makedirs(tmp)
        daemon = harness.Daemon(cfg, binary=self.ctx.gwsyncd, tmp=tmp)
        try:
            t = time.monotonic()
            daemon.start()
            want = {g: len(data[g]) for g in groups}
            have = {}
            sock.settimeout(5)
            while any(have.get(g) != n for g, n in want.items()):
                if time.monotonic() - t > self.args.sync_timeout or not daemon.alive():
                    raise RuntimeError("gwsyncd did not deliver the table in %g s: %s of %s\n%s" % (
                        self.args.sync_timeout, have, want, daemon.tail()))
                try:
                    f = sock.recv(512).decode().split()
                    have[f[2]] = int(f[5])
                except socket.timeout:
                    pass
            self.say("gwsyncd delivered the table and %d apps in %.1f s" % (self.args.apps,
                                                                              time.monotonic() - t))
            self.wait_routed()
            self.wait_idle("after gwsyncd's first delivery", 300)

            def tell(item, group="APP_AUTH"):
                t = time.monotonic_ns()
                admin.control("ws-send", {"text": ws_messages.envelope(group, "UPDATE", [item])})
                return t
            self.plugin_cost(tell)
            self.rounds(tell, sock)
        finally:
            daemon.close()
            admin.close()
            sock.close()

    def probe_all(self, want, timeout=30):
        """Until every worker answers an unsigned PROBE with status `want`."""
        deadline = time.monotonic() + timeout
        res = st.concurrently([lambda c=self.conns[p]: self.until(c, "none", "none", lambda s: s == want,
                                                                deadline, time.monotonic_ns())
                               for p in self.pids], timeout + 5)
        if not all(isinstance(r, float) for r in res):
            raise RuntimeError("the workers did not answer the probe with %d: %s" % (want, res))

    def plugin_cost(self, tell):
        """The routed maximum with the sign plugin on and off (the admin switching it),
        interleaved, as the workers' CPU per request (steadier than requests/s on a shared
        machine) and requests/s: what the plugin's hook costs a request it does not protect."""
        load = os.path.join(self.ctx.tools, "pacedload")
        on, off = [], []

        def cpu():
            return sum(st.cpu_seconds(p) for p in self.pids)
        for r in range(self.args.rounds):
            for state, out in ((True, on), (False, off)):
                tell(dict(SIGN_PLUGIN, enabled=state, namespaceId=self.ns), "PLUGIN")
                self.probe_all(401 if state else 200)
                self.wait_idle("sign plugin %s" % ("on" if state else "off"))
                c0 = cpu()
                res = st.load(load, self.nginx.port, 0, self.args.max_seconds, self.paths, timeout=30)
                out.append(((cpu() - c0) * 1e6 / max(1, res["done"]), res["rate"]))
            self.say("maximum, round %d: sign plugin on %.1f us/request (%.0f/s), off %.1f us (%.0f/s)"
                     % (r + 1, on[-1][0], on[-1][1], off[-1][0], off[-1][1]))
        tell(dict(SIGN_PLUGIN, namespaceId=self.ns), "PLUGIN")
        self.probe_all(401)
        a = statistics.median(x[0] for x in on)
        b = statistics.median(x[0] for x in off)
        self.ctx.record("revoke-plugin-cost", config=self.name, on=on, off=off)
        scale.row(self.fig("nginx CPU per routed request with the sign plugin on (1 sign selector, "
                           "%d apps), unprotected paths" % self.args.apps),
                  "%.1f us (%.0f/s)" % (a, statistics.median(x[1] for x in on)),
                  "sign plugin off %.1f us (%.0f/s)" % (b, statistics.median(x[1] for x in off)),
                  a / b if b else None, "<= 1.05x", "met" if b and a <= 1.05 * b else "NOT met")

    def until(self, c, key, secret, refused, deadline, t_ref):
        """Poll c every 5 ms with a request signed by (key, secret) until refused(status) is
        true: ms from t_ref, or None at the deadline."""
        nxt = time.monotonic()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            status, _, _, t1 = signed_get(c, PROBE, signed_headers(key, secret, PROBE), left)
            if refused(status):
                return scale.ms(t1 - t_ref)
            nxt += POLL
            now = time.monotonic()
            time.sleep(max(0.0, nxt - now))
            if nxt < now:
                nxt = now

    def rounds(self, tell, sock):
        a = self.args
        load = os.path.join(self.ctx.tools, "pacedload")
        ld = st.Load(load, self.nginx.port, self.rate70, a.budget + 60, self.paths,
                     timeout=a.load_timeout).start()
        time.sleep(0.5)
        # every worker lets the first app through before anything is revoked
        key0 = "APP%029d" % 0
        ok = st.concurrently([lambda c=self.conns[p]: signed_get(c, PROBE, signed_headers(
            key0, self.secrets[0], PROBE), 30)[0] for p in self.pids], 35)
        if any(s != 200 for s in ok):
            ld.stop()
            raise RuntimeError("a signed request was not let through before any change: %s" % ok)
        t_end = time.monotonic() + a.budget
        e2e, prop, missed, kinds, gw = [], [], 0, [], []
        sock.settimeout(0)
        for k in range(min(a.changes, a.apps)):
            if time.monotonic() > t_end:
                break
            try:
                while True:
                    sock.recv(512)
            except (BlockingIOError, socket.timeout):
                pass
            key, old = "APP%029d" % k, self.secrets[k]
            if k % 2 == 0:
                kind, item = "disable", app(k, old, self.ns, enabled=False)
            else:
                self.secrets[k] = secret_of(k, 1)
                kind, item = "rotate", app(k, self.secrets[k], self.ns)
            told = {}
            deadline = time.monotonic() + a.reflect_timeout
            t0 = time.monotonic_ns()
            pollers = [lambda c=self.conns[p]: self.until(c, key, old, lambda s: s == 401, deadline, t0)
                       for p in self.pids]
            teller = threading.Thread(target=lambda: told.update(t=tell(item)), daemon=True)
            teller.start()
            res = st.concurrently(pollers, a.reflect_timeout + 5)
            self.check_conns(res)
            teller.join(35)
            t_ann = told.get("t")
            applied = None
            sock.settimeout(max(0.1, min(10.0, t_end - time.monotonic())))
            try:
                while applied is None:
                    f = sock.recv(512).decode().split()
                    if f[2] == "APP_AUTH" and int(f[4]) > t0:
                        applied = int(f[4])
            except socket.timeout:
                pass
            sock.settimeout(0)
            if t_ann is not None and applied is not None:
                prop.append(scale.ms(applied - t_ann))
            if t_ann is not None and all(isinstance(r, float) for r in res):
                e2e.append(max(res) - scale.ms(t_ann - t0))
                kinds.append(kind)
                if applied is not None:      # the gateway's part: cache commit -> refused
                    gw.append(max(res) - scale.ms(applied - t0))
            else:
                missed += 1
            time.sleep(0.05)
        r = ld.stop()
        tried = len(e2e) + missed
        self.ctx.record("revoke", config=self.name, e2e=e2e, kinds=kinds, prop=prop, gateway=gw,
                        missed=missed, load=r, apps=a.apps)
        self.say("admin -> refused by every worker %s ms; admin -> cache %s ms; %d not reached; "
                 "load %.0f/s p99 %.2f ms" % (" ".join("%.0f" % x for x in e2e),
                                              " ".join("%.0f" % x for x in prop), missed, r["rate"], r["p99"]))
        what = self.fig("admin disables an app or rotates its secret -> old credentials refused by "
                        "every worker, WebSocket, %d apps, p99 (70%% load)" % a.apps)
        target = "<= 50 ms"
        if not prop:
            scale.row(what, "not reached: no change reached the cache", "-", None, target, "NOT met")
            return
        floor = scale.pct(prop, 99)
        floor_text = "propagation, admin -> cache commit, p99 %.1f ms (p50 %.1f)" % (floor, scale.pct(prop, 50))
        if not e2e or missed > tried // 100:
            scale.row(what, "not reached: %d of %d changes within %g s" % (missed, tried, a.reflect_timeout),
                      floor_text, None, target, "NOT met")
            return
        if gw:
            scale.row(self.fig("the gateway's part: cache commit -> old credentials refused by every "
                               "worker, p99 (70% load)"), "%.1f ms (p50 %.1f)" % (
                          scale.pct(gw, 99), scale.pct(gw, 50)),
                      "refresh_interval 100 ms (an idle worker's bound)", scale.pct(gw, 99) / 100.0,
                      "-", "-")
        p99 = scale.pct(e2e, 99)
        scale.row(what, "%.1f ms (p50 %.1f, %d changes: %d disabled, %d rotated)" % (
            p99, scale.pct(e2e, 50), tried, kinds.count("disable"), kinds.count("rotate")),
            floor_text, p99 / floor if floor else None, target, "met" if p99 <= 50 else "NOT met")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--lua", help="the Lua directory nginx runs (default: contrib/nginx/lua)")
    ap.add_argument("--writer", help="build dir whose lmdb plugin and gwsyncd write the cache")
    ap.add_argument("--label", default="")
    ap.add_argument("--size", default="10000x10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--apps", type=int, default=1000)
    ap.add_argument("--changes", type=int, default=100)
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--max-seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reflect-timeout", type=float, default=10)
    ap.add_argument("--load-timeout", type=float, default=10)
    ap.add_argument("--sync-timeout", type=float, default=600)
    args = ap.parse_args()
    missing = [t for t in ("cachewriter", "pacedload", "bench_sub.so")
               if not os.path.exists(os.path.join(args.build, "bench", t))]
    if missing:
        log("missing tools in %s/bench: %s (bench/build.sh)" % (args.build, ", ".join(missing)))
        scale.row("13. sign revocation", "not run: tools missing", "-", None, "-", "not run")
        return 1
    import unittest
    try:
        st.gateway.require_nginx()
        st.gateway.cachemod.require_lmdb()
    except unittest.SkipTest as e:
        scale.row("13. sign revocation", "not run: %s" % e, "-", None, "-", "not run")
        return 1
    ctx = scale.Ctx(args)
    os.environ["GWSYNC_BUILDDIR"] = ctx.writer_build
    c = Revoke(ctx, scaledata.parse_size(args.size), args.workers)
    t = time.monotonic()
    try:
        c.start()
        c.run()
    except Exception as e:
        c.say("failed: %s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
        scale.row(c.fig("sign revocation"), "failed: %s" % type(e).__name__, "-", None, "-", "not run")
    finally:
        c.close()
        ctx.close()
    log("figure 13 took %.0f s" % (time.monotonic() - t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
