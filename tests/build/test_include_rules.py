#!/usr/bin/env python3
"""The include rules of docs/architecture.md, checked on the code instead of read (issue 23,
item 5). Every `#include "..."` of agent/ names a file by its path under agent/, and a room
includes only the rooms the picture lets it see:

  core/     core/ only, and of the plugin ABI only <gwsync/log_level.h> (the log's levels)
  model/    core/, model/
  store/    core/, model/, store/
  config/   core/, model/ (the group names), config/
  source/   core/, model/, config/, source/, and of the store store/ingest.h alone, never
            store/store.h, not even through another header; a source's folder sees the
            shared parts beside source.h, its own folder, and kv/ (the path stores' part),
            never another source's folder
  deliver/  core/, model/, config/, store/, deliver/: never source/
  ops/, main.c (and the process shell beside it: options, signals): every room, but of
            source/ only the seam (source.h and the shared parts beside it): no file
            outside source/ includes a source's folder, so a new source is its folder and
            its line in the registry (its include line in source/sources.am)

A rule the code does not keep yet goes in ALLOWED with the reason and who removes it, so the
exception is one named line, not a silent hole. The checker is run on a small tree of
deliberate violations too, so it is known to fail when it should."""
import os
import re
import sys
import tempfile
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))

ROOMS = {
    "core": {"core"},
    "shared": {"core", "shared"},  # built into libgwshared for the agent and the plugins
    "model": {"core", "shared", "model"},
    "store": {"core", "shared", "model", "store"},
    "config": {"core", "shared", "model", "config"},
    "source": {"core", "shared", "model", "config", "source", "store"},
    "deliver": {"core", "shared", "model", "config", "store", "deliver"},
    "ops": None,   # every room
    "main": None,  # agent/main.c, options, signals
}
# <gwsync/...> headers a room may include; None: any.
ABI = {"core": {"gwsync/log_level.h"}}
# The only header of store/ a source may include.
SOURCE_STORE = {"store/ingest.h"}
# Headers a source must never reach, directly or through other headers.
SOURCE_NEVER = {"store/store.h"}

# (includer, included): a rule the code does not keep yet, each with its reason.
ALLOWED = {
    # none today: every rule of docs/architecture.md is kept
}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+([<"])([^>"]+)[>"]', re.M)


# The source folders that are shared parts, not sources: kv/ (the path stores' mirror) and
# node/ (ShenYu's node layout over it, for Nacos, Apollo and Polaris).
SHARED_FOLDERS = ("kv", "node")


def room_of(rel):
    """'source/etcd/client.c' -> 'source'; 'main.c' -> 'main'."""
    return rel.split("/", 1)[0] if "/" in rel else "main"


def source_folder(rel):
    """'source/etcd/client.c' -> 'etcd'; 'source/retry.h' -> None (a shared part)."""
    parts = rel.split("/")
    return parts[1] if parts[0] == "source" and len(parts) > 2 else None


def includes(agent, rel):
    """[(line, '"' or '<', name)] of one file."""
    with open(os.path.join(agent, rel), encoding="utf-8", errors="replace") as f:
        text = f.read()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
            for m in INCLUDE.finditer(text)]


def check(agent, allowed=frozenset(ALLOWED)):
    """Every broken rule under `agent` (the agent/ folder), as 'FILE:LINE: why' lines."""
    files = []
    for root, _, names in os.walk(agent):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(root, n), agent).replace(os.sep, "/"))
    files.sort()
    graph, errors = {}, []
    for rel in files:
        room, folder = room_of(rel), source_folder(rel)
        graph[rel] = []
        for line, kind, name in includes(agent, rel):
            where = "agent/%s:%d" % (rel, line)
            if kind == "<":
                if name.startswith("gwsync/") and room in ABI and name not in ABI[room]:
                    errors.append("%s: %s/ includes <%s>: of the plugin ABI it may include "
                                  "only %s" % (where, room, name, ", ".join(sorted(ABI[room]))))
                continue
            if not os.path.isfile(os.path.join(agent, name)):
                errors.append('%s: "%s" is not a path under agent/ (headers are included by '
                              "their path under agent/)" % (where, name))
                continue
            graph[rel].append(name)
            if (rel, name) in allowed:
                continue
            target = room_of(name)
            seen = ROOMS.get(room)
            if seen is not None and target not in seen:
                errors.append("%s: %s/ includes %s: %s/ sees only %s" % (
                    where, room, name, room, ", ".join(r + "/" for r in sorted(seen))))
            elif room != "source" and source_folder(name):
                errors.append("%s: %s includes %s: outside source/ only the seam is seen "
                              "(source.h and the parts beside it), never a source's folder: "
                              "a source is its folder and its line in the registry" % (
                                  where, rel, name))
            elif room == "source" and target == "store" and name not in SOURCE_STORE:
                errors.append("%s: a source includes %s: of the store it sees only %s" % (
                    where, name, ", ".join(sorted(SOURCE_STORE))))
            elif room == "source" and target == "source":
                other = source_folder(name)
                if folder and other and other not in (folder,) + SHARED_FOLDERS:
                    errors.append("%s: source/%s/ includes %s: a source's folder sees the "
                                  "shared parts beside source.h, its own folder, kv/ and "
                                  "node/, never another source's folder" % (where, folder, name))
                elif not folder and other:
                    errors.append("%s: the shared part %s includes %s: what every source "
                                  "shares depends on no source's folder" % (where, rel, name))
    # a source never reaches store/store.h, not even through the headers it includes
    for rel in files:
        if room_of(rel) != "source":
            continue
        path, todo, reached = {rel: None}, [rel], None
        while todo and not reached:
            cur = todo.pop()
            for nxt in graph.get(cur, []):
                if nxt in path or (cur, nxt) in allowed:
                    continue
                path[nxt] = cur
                if nxt in SOURCE_NEVER:
                    reached = nxt
                    break
                todo.append(nxt)
        if reached:
            chain, cur = [], reached
            while cur:
                chain.append(cur)
                cur = path[cur]
            errors.append("agent/%s: a source reaches %s (%s): a source sees the store "
                          "through store/ingest.h alone" % (rel, reached,
                                                            " <- ".join(chain)))
    return errors


class IncludeRules(unittest.TestCase):

    def test_the_agent_keeps_the_include_rules(self):
        errors = check(os.path.join(SRC, "agent"))
        self.assertEqual(errors, [], "\n" + "\n".join(errors))

    def test_every_allowed_exception_is_still_needed(self):
        """An exception the code no longer needs is deleted, so ALLOWED never grows stale."""
        agent = os.path.join(SRC, "agent")
        for edge in sorted(ALLOWED):
            names = [n for _, kind, n in includes(agent, edge[0]) if kind == '"']
            self.assertIn(edge[1], names, "ALLOWED %s -> %s: no longer included; delete the "
                          "line" % edge)

    def test_the_checker_finds_each_kind_of_violation(self):
        tree = {
            "core/a.h": '#include <gwsync/subscriber.h>\n#include "model/m.h"\n',
            "core/ok.h": '#include <gwsync/log_level.h>\n#include "core/a.h"\n',
            "model/m.h": '#include "store/store.h"\n',
            "store/store.h": "\n",
            "store/ingest.h": '#include "store/store.h"\n',
            "store/snapshot.h": "\n",
            "source/x/a.c": '#include "store/ingest.h"\n#include "store/snapshot.h"\n'
                            '#include "source/y/b.h"\n#include "source/kv/k.h"\n',
            "source/y/b.h": "\n",
            "source/kv/k.h": "\n",
            "source/shared.h": '#include "source/y/b.h"\n',
            "deliver/d.c": '#include "source/shared.h"\n#include "nowhere.h"\n',
            "ops/o.c": '#include "source/shared.h"\n#include "deliver/d.c"\n'
                       '#include "source/x/a.c"\n',
            "main.c": '#include "ops/o.c"\n',
        }
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            errors = "\n".join(check(d, allowed=frozenset()))
            for want in ("agent/core/a.h:1: core/ includes <gwsync/subscriber.h>",
                         "agent/core/a.h:2: core/ includes model/m.h",
                         "agent/model/m.h:1: model/ includes store/store.h",
                         "agent/source/x/a.c:2: a source includes store/snapshot.h",
                         "agent/source/x/a.c:3: source/x/ includes source/y/b.h",
                         "agent/source/shared.h:1: the shared part source/shared.h",
                         "agent/deliver/d.c:1: deliver/ includes source/shared.h",
                         'agent/deliver/d.c:2: "nowhere.h" is not a path under agent/',
                         "agent/ops/o.c:3: ops/o.c includes source/x/a.c: outside source/",
                         "agent/source/x/a.c: a source reaches store/store.h "
                         "(store/store.h <- store/ingest.h <- source/x/a.c)"):
                self.assertIn(want, errors)
            for clean in ("agent/core/ok.h", "agent/ops/o.c:1", "agent/ops/o.c:2",
                          "agent/main.c", "source/kv/k.h:"):
                self.assertNotIn(clean, errors)
            # the same edge, allowed by name, is no longer reported
            allowed = check(d, allowed=frozenset({("store/ingest.h", "store/store.h")}))
            self.assertFalse([e for e in allowed if "reaches store/store.h" in e])


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--list":
        print("\n".join(check(os.path.join(SRC, "agent"))))
        sys.exit(0)
    unittest.main(verbosity=2)
