"""The sync engine's log lines, as regular expressions, for the integration tests, and
the waits on what the agent holds (wait_synced, holds), which read /status instead: a test
waits on a reported fact, and reads log lines only where the line is the behaviour.

These are the exact shapes the engine promises (agent/source/http/poller.h):
  info  store: accepted GROUP version MD5 (lastModifyTime N, K items) from URL
  debug store: ignored GROUP version MD5 from URL: older than held (N <= M)
  debug store: ignored GROUP version MD5 from URL: already held
"""
import re

import harness


def _opt(value, default):
    return re.escape(str(value)) if value is not None else default


def accepted(group=None, md5=None, url=None, items=None, lmt=None):
    return (r"store: accepted %s version %s \(lastModifyTime %s, %s items\) from %s$"
            % (_opt(group, r"[A-Z_]+"), _opt(md5, r"[0-9a-f]+"), _opt(lmt, r"\d+"),
               _opt(items, r"\d+"), _opt(url, r"\S+")))


def ignored_older(group=None, md5=None, url=None):
    return (r"store: ignored %s version %s from %s: older than held \((\d+) <= (\d+)\)$"
            % (_opt(group, r"[A-Z_]+"), _opt(md5, r"[0-9a-f]+"), _opt(url, r"\S+")))


def ignored_same(group=None, url=None):
    return (r"store: ignored %s version [0-9a-f]+ from %s: already held$"
            % (_opt(group, r"[A-Z_]+"), _opt(url, r"\S+")))


ACCEPTED = re.compile(accepted())


def accepted_lines(daemon, since=0, group=None):
    """[(group, md5, lastModifyTime, items, url)] of every 'accepted' line so far."""
    rx = re.compile(r"store: accepted ([A-Z_]+) version ([0-9a-f]+) \(lastModifyTime (\d+), "
                    r"(\d+) items\) from (\S+)$")
    out = []
    for line in daemon.lines(None, since):
        m = rx.search(line)
        if m and (group is None or m.group(1) == group):
            out.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), m.group(5)))
    return out


def wait_synced(daemon, emu, groups=None, timeout=15.0, url=None):
    """Wait until the daemon's /status holds the admin's current version of every group,
    received from an admin (from `url` when given), not loaded from the snapshot."""
    versions = {g: emu.group(g)["md5"] for g in groups or emu.groups}
    return daemon.wait_status(harness.holds_all(versions, source=url, from_snapshot=False),
                              "the admin's versions of %s" % ", ".join(versions), timeout)


def holds(daemon, group, v, url=None, timeout=15.0, items=None):
    """Wait until /status holds version v (an emulator answer: {"md5", ...}) of group,
    from `url` when given; returns the document."""
    return daemon.wait_status(harness.holds(group, v["md5"], url, items),
                              "%s version %s" % (group, v["md5"]), timeout)


def rule(key, name="rule"):
    """A RULE item as the admin sends it."""
    return {"id": key, "name": name, "pluginName": "divide", "selectorId": "1",
            "matchMode": 0, "sort": 1, "enabled": True, "loged": False, "handle": "{}",
            "conditionDataList": [{"paramType": "uri", "operator": "match",
                                   "paramName": "/", "paramValue": "/" + key}]}
