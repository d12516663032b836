"""bench_nginx_memory: a worker's memory after 1,000 changes against a freshly built one, in a
real nginx (indicative figures, not a test).

    GWSYNC_SRCDIR=$PWD TMPDIR=... /usr/bin/python3 tests/lua/bench_nginx_memory.py [SELECTORS [RULES]]

Writes a cache with the change log (cachewriter.py): SELECTORS selectors (half `match /sN/**`,
half `startsWith /sN/`) with RULES rules each and one DISCOVER_UPSTREAM item each, starts the
example nginx with one worker (plus a test-only location that answers the worker's Lua heap
after a full collection), then makes 1,000 changes (500 rule changes and 500 upstream moves,
spread over the table), waiting after each until the worker's answers reflect it. It prints the
worker's Lua heap (collectgarbage("count")) and RSS after the first build, after the 1,000
changes, and in a fresh nginx started on the final cache.
"""
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import harness  # noqa: E402
import test_lmdb_reader as T  # noqa: E402
from cachewriter import CacheWriter, discover, divide_plugin, rule, selector, uri_cond  # noqa: E402


def edit(conf):
    conf = conf.replace("worker_processes 2;", "worker_processes 1;")
    return conf.replace("        location / {\n", "        location = /_gc {\n"
                        "            content_by_lua_block { collectgarbage(\"collect\")\n"
                        "                ngx.say(collectgarbage(\"count\")) }\n        }\n"
                        "        location / {\n", 1)


def worker_rss_kb(gw):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid) as f:
                cmd = f.read()
            with open("/proc/%s/status" % pid) as f:
                status = f.read()
        except OSError:
            continue
        ppid = int(re.search(r"PPid:\s+(\d+)", status).group(1))
        if "nginx: worker" in cmd and gw.proc and ppid == gw.proc.pid:
            return int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    return None


def heap_kb(gw):
    return float(gw.get("/_gc")[2])


def main():
    ns = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    nr = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tmp = harness._own_tmpdir("gwsync-mem-") if hasattr(harness, "_own_tmpdir") else None
    import tempfile
    import grp
    tmp = tmp or tempfile.mkdtemp(prefix="gwsync-mem-")
    group = None
    if os.geteuid() == 0:
        os.chmod(tmp, 0o711)
        group = grp.getgrnam("nogroup").gr_gid
    cache = os.path.join(tmp, "cache")
    w = CacheWriter(cache, map_size=1 << 30, log=True, group=group)
    w.commit("PLUGIN", {"5": divide_plugin()})
    sels, rules, discs = {}, {}, {}
    for i in range(ns):
        sid = "s%05d" % i
        c = uri_cond("match", "/s%d/**" % i) if i % 2 == 0 else uri_cond("startsWith", "/s%d/" % i)
        sels[sid] = selector(sid, "/s%d" % i, sort=i + 1, conditions=[c])
        discs[sid] = discover(sid, ["127.0.0.1:8081", "127.0.0.1:8082"])
        for k in range(nr):
            rules["%s-r%d" % (sid, k)] = rule("%s-r%d" % (sid, k), sid, "/s%d/v%d" % (i, k), sort=k + 1)
    w.commit("DISCOVER_UPSTREAM", discs)
    w.commit("RULE", rules)
    w.commit("SELECTOR", sels)
    gws = []
    try:
        gw = T.NginxGateway(cache, edit=edit).start()
        gws.append(gw)
        last = "/s%d/v1/x" % (ns - 1)

        def at(gen):
            def check():
                try:
                    return int(gw.get(last)[1].get("X-Gwsync-Generation") or 0) >= gen
                except OSError:       # the first request waits for the first build
                    return False
            return check
        harness.wait_until(at(w.generation()), timeout=600, interval=0.2, message="first build")
        built = (heap_kb(gw), worker_rss_kb(gw))
        t0 = time.monotonic()
        for n in range(500):
            i = (n * 7919) % ns
            sid = "s%05d" % i
            w.commit("RULE", {"%s-r%d" % (sid, n % nr): rule("%s-r%d" % (sid, n % nr), sid,
                                                             "/s%d/v%d" % (i, n % nr), sort=n % 3)})
            gen = w.commit("DISCOVER_UPSTREAM", {sid: discover(sid, ["127.0.0.1:%d" % (9000 + n % 5)])})
            harness.wait_until(at(gen), timeout=30, interval=0.002, message="change %d" % n)
        changed = (heap_kb(gw), worker_rss_kb(gw))
        secs = time.monotonic() - t0
        applied = len(re.findall(r"in place from change log", gw.log()))
        gw.close()
        gw = T.NginxGateway(cache, edit=edit).start()
        gws.append(gw)
        harness.wait_until(at(w.generation()), timeout=600, interval=0.2, message="fresh build")
        fresh = (heap_kb(gw), worker_rss_kb(gw))
        print("%d x %d, %d items; 1,000 changes in %.1f s (%d applied in place from the change log)"
              % (ns, nr, 1 + ns * (nr + 2), secs, applied))
        for label, (h, r) in (("first build", built), ("after 1,000 changes", changed),
                              ("fresh nginx on the final cache", fresh)):
            print("  %-32s Lua heap %8.1f MB   worker RSS %8.1f MB" % (label, h / 1024, r / 1024))
        print("  after changes / fresh: heap %.3f, RSS %.3f" % (changed[0] / fresh[0], changed[1] / fresh[1]))
    finally:
        for gw in gws:
            gw.close()
        w.close()
        harness._cleanup_dir(tmp)


if __name__ == "__main__":
    main()
