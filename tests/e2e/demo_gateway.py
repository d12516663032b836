"""The gateway half of `./dev.sh demo` (tests/admin/demo.sh): three small upstream servers,
a divide route in the emulator pointing at the first, and nginx on 127.0.0.1:PORT routing
from the LMDB cache gwsyncd writes (contrib/nginx, the example configuration itself). On
SIGUSR1 (demo.sh sends it when the operator presses Enter) it moves the route to another
upstream through the emulator, so you see one admin change travel admin -> gwsyncd -> LMDB
-> nginx; it keeps everything up until SIGTERM.

    demo_gateway.py ADMIN_URL CACHE_DIR PORT WORK_DIR

The route is published before gwsyncd starts (WORK_DIR/route-published says it is), so the
agent's first sync already holds it: nothing is replaced under a running agent, and the
log subscriber's first lines are all "added". WORK_DIR/gateway-ready says nginx answers on
the route. The emulator runs as documented, a ShenYu 2.7 admin (eight groups), so the
upstreams come from DISCOVER_UPSTREAM as a 2.6+ admin sends them, and moving the route is
an upsert of that item. The demo's selector and rule replace the dataset's divide ones
(some of the generated ones are full-flow selectors that would win every request); every
other plugin's items stay.
"""
import json
import os
import signal
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gateway  # noqa: E402
import items  # noqa: E402
from upstreams import Upstreams  # noqa: E402

MODE = "shenyu"  # the emulator's default: ShenYu 2.7


def say(msg):
    print("\033[1;35m[gateway] %s\033[0m" % msg, file=sys.stderr, flush=True)


def control(admin, path, body=None):
    req = urllib.request.Request(admin + "/_control/" + path,
                                 data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def publish_route(admin, upstream_url):
    """The demo's divide plugin, selector (uri /demo/**) and rule, replacing the dataset's
    divide items, upstream `upstream_url`."""
    plugins = control(admin, "data?group=PLUGIN")["data"]
    divide = items.plugin(mode=MODE)
    # the dataset's own divide plugin keeps its id; ids are unique within the group
    divide["id"] = next((p["id"] for p in plugins if p.get("name") == "divide"), "gwsync-demo")
    others = [p for p in plugins if p.get("name") != "divide"]
    control(admin, "replace", {"group": "PLUGIN", "items": others + [divide]})
    control(admin, "upsert", {"group": "DISCOVER_UPSTREAM",
                              "item": items.discover("demo-selector", [upstream_url], mode=MODE)})
    sel = items.selector("demo-selector", [items.cond("uri", "match", "/demo/**")], mode=MODE)
    sels = [s for s in control(admin, "data?group=SELECTOR")["data"] if s.get("pluginName") != "divide"]
    control(admin, "replace", {"group": "SELECTOR", "items": sels + [sel]})
    rule = items.rule("demo-rule", "demo-selector", [items.cond("uri", "match", "/demo/**")],
                      mode=MODE)
    rules = [r for r in control(admin, "data?group=RULE")["data"] if r.get("pluginName") != "divide"]
    return control(admin, "replace", {"group": "RULE", "items": rules + [rule]})


def move_route(admin, upstream_url):
    """What a ShenYu 2.7 admin does when an upstream of the selector changes."""
    return control(admin, "upsert", {"group": "DISCOVER_UPSTREAM",
                                     "item": items.discover("demo-selector", [upstream_url],
                                                            mode=MODE)})


def mark(work, name):
    with open(os.path.join(work, name), "w") as f:
        f.write("%d\n" % os.getpid())


def ask(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.headers.get("X-Upstream"), r.read().decode(errors="replace").strip()
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode(errors="replace").strip()
    except OSError as e:
        return None, None, str(e)


def wait_for(port, path, upstream, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, who, _ = ask(port, path)
        if status == 200 and who == upstream:
            return True
        time.sleep(0.05)
    return False


def main():
    admin, cache, port, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    try:
        gateway.require_nginx()
    except Exception as e:  # unittest.SkipTest: say why and keep the rest of the demo
        say("no gateway: %s (./dev.sh deps installs nginx and its Lua module)" % e)
        return 0
    stop, move = [], []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGUSR1, lambda *_: move.append(1))
    ups = Upstreams().start()
    nginx = None
    try:
        publish_route(admin, ups.url("up-a"))
        mark(work, "route-published")  # demo.sh starts gwsyncd now
        nginx = gateway.Nginx(os.path.join(work, "nginx"), cache, port=port,
                              debug_headers=True).start()
        say("nginx on http://127.0.0.1:%d routes /demo/** from the LMDB cache %s" % (port, cache))
        if wait_for(port, "/demo/hello", "up-a", timeout=60):
            say("curl -i localhost:%d/demo/hello  -> answered by up-a" % port)
        else:
            say("nginx has no route yet: %s" % (ask(port, "/demo/hello"),))
        status, _, body = ask(port, "/elsewhere")
        say("curl localhost:%d/elsewhere     -> %s %s (ShenYu's no-selector answer)" % (port, status, body))
        mark(work, "gateway-ready")
        while not stop and not move:
            time.sleep(0.2)
        if move and not stop:
            t0 = time.monotonic()
            move_route(admin, ups.url("up-b"))
            say("moved the route to up-b through the admin (its DISCOVER_UPSTREAM item)...")
            if wait_for(port, "/demo/hello", "up-b"):
                say("curl -i localhost:%d/demo/hello  -> answered by up-b, %.0f ms after the "
                    "admin change" % (port, (time.monotonic() - t0) * 1000))
        say("nginx logs in %s/nginx/error.log" % work)
        while not stop:
            time.sleep(0.2)
    finally:
        if nginx:
            nginx.stop()
        ups.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
