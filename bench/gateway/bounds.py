#!/usr/bin/env python3
"""Figure 11b: what one request can cost the gateway, whatever the admin wrote and the client
sends (issue 29 part 2; contrib/nginx/README.md, "What a request can cost").

    python3 bench/gateway/bounds.py [--lua DIR] [--label after] [--seconds 1.5]

One real nginx with one worker (contrib/nginx/nginx.conf, debug headers off) reads a cache
written by tests/lua/cachewriter.py. Each case sends requests one after the other, each on a
fresh connection (the issue's measure: connection included), for --seconds, and prints the
worker's CPU (utime + stime from /proc, both ticks) per request beside the floor: an
ordinary routed request (`/a/x`, a 3-token path under `match /a/**`) in the same nginx and
run. The adversarial items sit in the same table as the ordinary selector, as they would in
an admin's:
 - regex: a selector `regex /redos3/(.*a){12}`, requested as /redos3/ + 30 a + b (no match);
 - ant: `match /**/{v}x30/z/**` (30 {v} tokens between two **), requested with an 8 KB path
   of 4,000 tokens;
 - input: an 8 KB path; 100 query arguments, 100 headers and 100 cookies read by query,
   header and cookie conditions (the last of each); `%2F`, `..` and `//` in the path;
 - a selector of 1,000,000 conditions (80 MB of JSON, OR of header conditions) committed
   while ordinary requests run back to back: the longest of them meanwhile, and the ordinary
   request's cost with it in the table;
 - the environment replaced under nginx (removed and written afresh, the same generation):
   the time until the new data routes.
--lua runs another router (e.g. main's, for the "before" column). Prints "ROW|..." lines for
bench/table.py.
"""
import argparse
import grp
import http.client
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "lua"))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import test_lmdb_reader as gw  # noqa: E402  (NginxGateway, NamedUpstream)
from cachewriter import (CacheWriter, discover, divide_plugin, rule, selector,  # noqa: E402
                         uri_cond)

TICK = os.sysconf("SC_CLK_TCK")


def cond(ptype, op, value, name="/"):
    return {"paramType": ptype, "operator": op, "paramName": name, "paramValue": value}


def worker_pid(master):
    for _ in range(500):     # the master listens before it forks its worker
        pid = find_worker(master)
        if pid:
            return pid
        time.sleep(0.01)
    raise RuntimeError("no nginx worker")


def find_worker(master):
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                return int(pid)
    return None


def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def request(port, target, headers=()):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.putrequest("GET", target, skip_accept_encoding=True)
    for k, v in headers:
        c.putheader(k, v)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def per_request(pid, port, target, seconds, headers=()):
    """(worker CPU ms per request, requests, last answer) over `seconds` of sequential
    requests on fresh connections"""
    answer = request(port, target, headers)   # warm: the first of a kind compiles traces
    c0, n, t0 = cpu(pid), 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        answer = request(port, target, headers)
        n += 1
    return (cpu(pid) - c0) * 1000 / n, n, answer


def million_text():
    """a selector of 1,000,000 header conditions (OR: evaluated for every request), 80 MB"""
    one = json.dumps(cond("header", "=", "1", "x-a")) + ","
    return ('{"id":"big","pluginName":"divide","name":"big","type":1,"matchMode":1,'
            '"sort":0,"enabled":true,"logged":false,"continued":true,"handle":"",'
            '"conditionList":[' + (one * 1000000)[:-1] + ']}').encode()


def ordinary(port, seconds, q):
    """ordinary requests back to back for `seconds`: their times, into q"""
    times, t_end = [], time.monotonic() + seconds
    while time.monotonic() < t_end:
        t = time.monotonic()
        request(port, "/a/x")
        times.append(time.monotonic() - t)
    q.put(times)


def fill(writer, up):
    conds_q = [cond("query", "=", "v100", "q100")]
    conds_h = [cond("header", "=", "h100", "x-h100")]
    conds_c = [cond("cookie", "=", "k100", "c100")]
    sels = {
        "s1": selector("s1", "/a"),
        "rx": selector("rx", "/redos3", conditions=[uri_cond("regex", "/redos3/(.*a){12}")]),
        "ant": selector("ant", "/ant", conditions=[
            uri_cond("match", "/**/" + "{v}/" * 30 + "z/**")]),
        "q": selector("q", "/q", conditions=[uri_cond("startsWith", "/q/")] + conds_q),
        "h": selector("h", "/h", conditions=[uri_cond("startsWith", "/h/")] + conds_h),
        "c": selector("c", "/c", conditions=[uri_cond("startsWith", "/c/")] + conds_c),
    }
    rules = {"r-" + k: rule("r-" + k, k, "/", conditions=[uri_cond("match", "/**")]) for k in sels}
    writer.commit("PLUGIN", {"5": divide_plugin()})
    writer.commit("SELECTOR", sels)
    writer.commit("RULE", rules)
    writer.commit("DISCOVER_UPSTREAM", {k: discover(k, [up.url]) for k in sels})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lua", default=os.path.join(SRC, "contrib", "nginx", "lua"))
    ap.add_argument("--label", default="after")
    ap.add_argument("--seconds", type=float, default=1.5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gwsync-bounds-")
    group = None
    if os.geteuid() == 0:      # nginx's workers run as nobody: the test's permission recipe
        os.chmod(tmp, 0o711)
        group = grp.getgrnam("nogroup").gr_gid
    up = gw.NamedUpstream("A")
    stacks = []
    label = args.label

    def row(name, value, floor, target):
        ratio = "%.1fx" % (value / floor) if floor else "-"
        print("ROW|11b. %s (%s)|%.3f ms|%.3f ms|%s|%s|-" % (name, label, value, floor, ratio,
                                                           target), flush=True)

    try:
        cache = os.path.join(tmp, "cache")
        w = CacheWriter(cache, map_size=256 << 20, group=group)
        fill(w, up)
        g = gw.NginxGateway(cache, debug_headers=False, lua_dir=args.lua,
                            edit=lambda c: c.replace("worker_processes 2;", "worker_processes 1;"))
        stacks.append([g, w])
        g.start()
        pid = worker_pid(g.proc.pid)
        gw.harness.wait_until(lambda: b"A /a/x" in request(g.port, "/a/x")[1], timeout=120)
        floor, n, _ = per_request(pid, g.port, "/a/x", args.seconds)
        print("ROW|11b. ordinary routed request (%s)|%.3f ms|-|-|-|-" % (label, floor),
              flush=True)
        cases = [
            ("regex (.*a){12}, /redos3/a*30 b", "/redos3/" + "a" * 30 + "b", ()),
            ("ant 30 {v} between **, 8 KB path", "/ant" + "/a" * 4000, ()),
            ("8 KB path under match /a/**", "/a/" + "b" * 8000, ()),
            ("100 query args", "/q/x?" + "&".join("q%d=v%d" % (i, i) for i in range(1, 101)), ()),
            ("100 headers", "/h/x", [("X-H%d" % i, "h%d" % i) for i in range(1, 101)]),
            ("100 cookies", "/c/x", [("Cookie", "; ".join("c%d=k%d" % (i, i)
                                                          for i in range(1, 101)))]),
            ("%2F, .. and // in the path", "/a/..//b%2Fc/./x", ()),
        ]
        for name, target, headers in cases:
            v, n, ans = per_request(pid, g.port, target, args.seconds, headers)
            row(name, v, floor, "<= 1 ms")
        # a selector of a million conditions arrives while ordinary requests run
        # (the requests from another process: this one holds Python's lock while it writes
        # the 80 MB item, which would stall a thread of its own, not nginx)
        text = million_text()

        def longest_while(group):
            q = multiprocessing.Queue()
            proc = multiprocessing.Process(target=ordinary, args=(g.port, 3.0, q))
            proc.start()
            time.sleep(0.5)
            w.commit(group, {"big": text})
            stalls = sorted(q.get())
            proc.join()
            return stalls[-1] * 1000
        # floor: the same 80 MB committed to a group the router does not read (the writer's
        # and the machine's share of the stall)
        floor_stall = longest_while("APP_AUTH")
        stall = longest_while("SELECTOR")
        print("ROW|11b. a 1,000,000-condition selector committed: longest ordinary request "
              "meanwhile (%s)|%.1f ms|%.1f ms|%.1fx|the others served|-" % (
                  label, stall, floor_stall, stall / floor_stall), flush=True)
        v, n, _ = per_request(pid, g.port, "/a/x", args.seconds)
        row("ordinary request, a 1,000,000-condition selector in the table", v, floor, "<= 1 ms")
        # the environment replaced under nginx: removed, written afresh (same generation)
        w.close()
        shutil.rmtree(cache)
        t0 = time.monotonic()
        w2 = CacheWriter(cache, map_size=256 << 20, group=group)
        stacks[-1][1] = w2
        up_b = gw.NamedUpstream("B")
        fill(w2, up_b)
        try:
            gw.harness.wait_until(lambda: b"B /a/x" in request(g.port, "/a/x")[1], timeout=10)
            took = "%.2f s" % (time.monotonic() - t0)
        except AssertionError:
            took = "not in 10 s"
        up_b.close()
        print("ROW|11b. environment replaced under nginx -> new data routed (%s)|%s|-|-|"
              "<= 1 s|-" % (label, took), flush=True)
    finally:
        for g, w in stacks:
            g.close()
            w.close()
        up.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
