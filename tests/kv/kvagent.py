"""The agent's side of the path-store tests: its configuration for a zookeeper: or etcd:
source, and readers of what it delivered, to compare with what was published.

What the agent delivered is read three ways, each for what it proves best:
- the `file` subscriber's <dir>/<GROUP>.json (plugins/file/README.md): the complete newest
  version, items as the raw JSON the admin wrote; compared with Publisher.published()
  as parsed JSON, by item key (wait_converged);
- the `recorder` test subscriber (tests/unit/recorder.c): one line per apply() with the
  item count and the delta's keys, so a test sees every change a subscriber was handed
  (a REFRESH must never show up as an empty or partial group; a change arrives once);
- the store's log lines "store: accepted GROUP version MD5 (lastModifyTime N, K items)",
  one per accepted version, the strictest record of what reached the store.
Plus /status and /metrics through the status endpoint (test_status.Endpoint).
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
import harness  # noqa: E402
import test_status  # noqa: E402  (Endpoint, parse_prometheus: no TestCase is imported)

import publisher  # noqa: E402

Endpoint = test_status.Endpoint
FAST_RETRY = {"attempts": 3, "interval": "200ms", "backoff": "1s"}


# ---------------------------------------------------------------------- configuration
def config(kind, servers, root=None, namespace=None, groups=publisher.KV_GROUPS, files=None,
           recorder=None, settle=None, resync_interval=None, retry=FAST_RETRY,
           session_timeout=None, status_port=None, state_dir="@TMP@/state", log_level="debug",
           section_extra=None, extra=None):
    """YAML text for an agent whose source is `kind` ("zookeeper" or "etcd") at `servers`
    (["127.0.0.1:p"] or ["http://127.0.0.1:p"]). files: a file subscriber's dir;
    recorder: the recorder's output file. None leaves a key to its default."""
    sec = {servers_key(kind): servers if isinstance(servers, str) else list(servers)}
    if kind == "consul" and root:
        root = root.lstrip("/")  # a Consul key prefix: the admin's path without its '/'
    for key, value in (("namespace", namespace), ("root", root), ("settle", settle),
                       ("resync_interval", resync_interval), ("retry", retry),
                       ("session_timeout", session_timeout)):
        if value is not None:
            sec[key] = value
    if groups is not None:
        sec["groups"] = list(groups)
    sec.update(section_extra or {})
    doc = {kind: sec}
    if state_dir is not None:
        doc["state_dir"] = state_dir
    if log_level:
        doc["log"] = {"level": log_level}
    if status_port:
        doc["status"] = {"listen": "127.0.0.1:%d" % status_port}
    subs = []
    if files:
        subs.append({"name": "files", "library": "file", "config": {"dir": files}})
    if recorder:
        subs.append({"name": "rec", "library": "recorder", "config": {"out": recorder}})
    if subs:
        doc["subscribers"] = subs
    doc.update(extra or {})
    return harness.to_yaml(doc)


def servers_key(kind):
    """The section's key of its servers: etcd has endpoints, the others servers."""
    return "endpoints" if kind == "etcd" else "servers"


def label(kind, servers, root):
    """cfg->servers[0]: how logs, versions and /status name the store,
    "zookeeper://127.0.0.1:p1,127.0.0.1:p2/ns/shenyu"."""
    if isinstance(servers, str):  # one "h1:p1,h2:p2" string, as zookeeper.servers allows
        servers = servers.split(",")
    hosts = ",".join(s.split("://", 1)[-1] for s in servers)
    return "%s://%s%s" % (kind, hosts, root)


# ---------------------------------------------------------------------- delivered data
def file_items(files, group):
    """{key: item} of the file subscriber's GROUP.json, or None before it exists."""
    try:
        with open(os.path.join(files, group + ".json"), "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return None
    out = {}
    for item in doc["data"]:
        key = publisher.item_key(group, item)
        assert key not in out, "%s.json holds key %s twice" % (group, key)
        out[key] = item
    return out


def differences(want, have):
    """A short text naming what differs between two {key: item} maps ("" if equal)."""
    if have is None:
        return "no file yet"
    missing = sorted(set(want) - set(have))
    extra = sorted(set(have) - set(want))
    changed = sorted(k for k in set(want) & set(have) if want[k] != have[k])
    parts = []
    for name, keys in (("missing", missing), ("extra", extra), ("different", changed)):
        if keys:
            parts.append("%s %d (%s)" % (name, len(keys), ", ".join(keys[:5])))
    return "; ".join(parts)


def wait_converged(files, want, timeout=20.0):
    """Wait until every group of `want` ({GROUP: {key: item}}, e.g. Publisher.published())
    is exactly what the file subscriber holds: same keys, same items as parsed JSON."""
    last = {}

    def check():
        for g, items in want.items():
            diff = differences(items, file_items(files, g))
            if diff:
                last["why"] = "%s: %s" % (g, diff)
                return False
        return True
    try:
        harness.wait_until(check, timeout=timeout, interval=0.05, message="convergence")
    except AssertionError as e:
        raise AssertionError("%s: %s" % (e, last.get("why")))


# ---------------------------------------------------------------------- recorder
_APPLY = re.compile(r"^apply (\S+) md5=(\S+) prev=(\S+) lmt=(-?\d+) items=(\d+) added=(\S*) "
                    r"updated=(\S*) removed=(\S*) stale=(\d)( confirmed)? (ok|fail)$")


class Apply:
    def __init__(self, m):
        self.group, self.md5, self.prev = m.group(1), m.group(2), m.group(3)
        self.lmt, self.items = int(m.group(4)), int(m.group(5))
        self.added = [k for k in m.group(6).split(",") if k]
        self.updated = [k for k in m.group(7).split(",") if k]
        self.removed = [k for k in m.group(8).split(",") if k]
        self.stale = m.group(9) == "1"
        self.confirmed = bool(m.group(10))
        self.ok = m.group(11) == "ok"

    def __repr__(self):
        return "<apply %s items=%d +%d ~%d -%d>" % (self.group, self.items, len(self.added),
                                                   len(self.updated), len(self.removed))


def applies(path, group=None):
    """The recorder's apply() calls, oldest first (optionally of one group).
    Keys that contain a ',' cannot be told apart in the line; tests avoid such keys."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = [l.rstrip("\n") for l in f if l.startswith("apply ")]
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        m = _APPLY.match(line)
        assert m, "recorder line not understood: %r" % line
        a = Apply(m)
        if group is None or a.group == group:
            out.append(a)
    return out


# ---------------------------------------------------------------------- store log
_ACCEPTED = re.compile(r"store: accepted (\S+) version (\S+) \(lastModifyTime (-?\d+), "
                       r"(\d+) items?\)")


def accepted(daemon, group=None, since=0):
    """[(group, md5, lastModifyTime, items)] of the store's "accepted" lines."""
    out = []
    for line in daemon.lines(None, since):
        m = _ACCEPTED.search(line)
        if m and (group is None or m.group(1) == group):
            out.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return out


# ---------------------------------------------------------------------- status
def connection(doc):
    """The one connection row a path-store source shows in /status."""
    conns = doc["source"]["connections"]
    assert len(conns) == 1, conns
    return conns[0]


# ---------------------------------------------------------------------- unittest glue
def main():
    """harness.main(), but a file whose server is missing (setUpClass raised SkipTest, so
    no test even ran) exits 77, which automake reports as SKIP with the reason logged."""
    import unittest
    prog = unittest.main(exit=False, verbosity=2)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped and result.testsRun <= len(result.skipped):
        sys.exit(77)
    sys.exit(0)
