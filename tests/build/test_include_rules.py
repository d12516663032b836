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
            shared parts beside source.h, its own folder, kv/ (the path stores' part), node/
            (ShenYu's node layout, over kv/) and admin/ (admin:'s), never another source's folder
  deliver/  core/, model/, config/, store/, deliver/: never source/
  ops/, main.c (and the process shell beside it: options, signals): every room, but of
            source/ only the seam (source.h and the shared parts beside it): no file
            outside source/ includes a source's folder, so a new source is its folder and
            its line in the registry (its include line in source/sources.am)

Beside agent/, the two other trees built from the agent's code keep rules of their own:

  plugins/  the public ABI, their own folder, and of the agent only what libgwshared
            carries: shared/ and core/error.h (its error vocabulary, built into it)
  sdk/      the plugin author's kit: its own folder and core/, shared/, model/, config/
            and deliver/ (the rooms it is built from), never source/ or ops/; store/ only
            for gwsync-replay (sdk/replay/), which reads an agent's state_dir (the group
            file and its journal) with the store's own code, as the cold start reads it

And what an #include check cannot see, the link: a call from one room to a function defined
in a room it may not include (config/ calling the source registry, say) is an edge of the
same graph. The built objects are read with `nm` (the build tree, GWSYNC_BUILDDIR), each
global symbol a room uses is found where it is defined, and the same rules apply.

A rule the code does not keep yet goes in ALLOWED with the reason and who removes it, so the
exception is one named line, not a silent hole. The checker is run on small trees of
deliberate violations too (includes and compiled objects), so it is known to fail when it
should."""
import os
import re
import shutil
import subprocess
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
# The folders under source/ that are parts several sources share, not sources: kv/ (the
# path stores' mirror: ZooKeeper, etcd, Consul), node/ (ShenYu's node layout over it: Nacos,
# Apollo, Polaris) and admin/ (ShenYu's admin: long-polling and WebSocket).
SHARED_FOLDERS = ("kv", "node", "admin")
# The only header of store/ a source may include.
SOURCE_STORE = {"store/ingest.h"}
# Headers a source must never reach, directly or through other headers.
SOURCE_NEVER = {"store/store.h"}

# (includer, included): a rule the code does not keep yet, each with its reason.
ALLOWED = {
    # none today: every rule of docs/architecture.md is kept
}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+([<"])([^>"]+)[>"]', re.M)



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
                if folder and other and other != folder and other not in SHARED_FOLDERS:
                    errors.append("%s: source/%s/ includes %s: a source's folder sees the "
                                  "shared parts beside source.h, its own folder, kv/, "
                                  "node/ and admin/, never another source's folder" % (where, folder, name))
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


# plugins/ may include of the agent only what libgwshared carries.
PLUGIN_SEES = {"shared"}
PLUGIN_HEADERS = {"core/error.h"}
# sdk/ is built from these rooms of the agent; gwsync-replay also reads a state_dir as the
# agent's cold start does, with the store's snapshot and journal code (issue 31, item 4).
SDK_SEES = {"core", "shared", "model", "config", "deliver"}
SDK_FOLDER_SEES = {"replay": {"store"}}


def sdk_sees(folder):
    return SDK_SEES | SDK_FOLDER_SEES.get(folder, set())


def check_outside(top, tree):
    """The include rules of plugins/ or sdk/ (`tree`), under the source root `top`, as
    'FILE:LINE: why' lines."""
    errors = []
    base = os.path.join(top, tree)
    for root, _, names in os.walk(base):
        for n in sorted(names):
            if not n.endswith((".c", ".h")):
                continue
            path = os.path.join(root, n)
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                if m.group(1) == "<":
                    continue
                name, line = m.group(2), text.count("\n", 0, m.start()) + 1
                where = "%s:%d" % (rel, line)
                if "/" not in name:
                    if not os.path.isfile(os.path.join(root, name)):
                        errors.append('%s: "%s" is not a file of its own folder' % (where, name))
                    continue
                room = room_of(name)
                if tree == "plugins":
                    ok = room in PLUGIN_SEES or name in PLUGIN_HEADERS
                    why = "a plugin sees of the agent only shared/ and core/error.h"
                else:
                    sees = sdk_sees(os.path.relpath(path, base).split(os.sep)[0])
                    ok = room in sees
                    why = "sdk/ sees only %s" % ", ".join(r + "/" for r in sorted(sees))
                if not ok:
                    errors.append("%s: %s/ includes %s: %s" % (where, tree, name, why))
                elif not os.path.isfile(os.path.join(top, "agent", name)):
                    errors.append('%s: "%s" is not a path under agent/' % (where, name))
    return errors


def object_room(rel):
    """The room of a built object (a path under the build tree), and its source folder:
    ('config', None), ('source', 'http'), ('plugins', 'file'), ('sdk', 'replay'), or None
    for an object no rule is about (tests, stale objects of another product, the
    generated registry table, which lists every source's folder by design)."""
    parts = rel.split("/")
    name = parts[-1]
    if parts[0] == "agent":
        if not re.match(r"(libgwagent_la|libgwshared_la|gwsyncd)-", name):
            return None
        if name.startswith("libgwagent_la-source_types"):
            return None
        dirs = [p for p in parts[1:-1] if p != ".libs"]
        if not dirs:
            return ("main", None)
        return (dirs[0], dirs[1] if dirs[0] == "source" and len(dirs) > 1 else None)
    if parts[0] == "plugins" and len(parts) > 2 and not name.startswith("tests_"):
        return ("plugins", parts[1])
    if parts[0] == "sdk" and len(parts) > 2 and re.match(r"(libgwsync_testing_la|gwsync_replay)-",
                                                         name):
        return ("sdk", parts[1])
    return None


def may_call(caller, callee, home):
    """None if room `caller` may call a function defined in room `callee` (in the object
    `home`), else why not."""
    (room, folder), (target, tfolder) = caller, callee
    if room == "plugins":
        if (target == "plugins" and tfolder == folder) or target == "shared" or \
                home.endswith("libgwshared_la-error.o"):
            return None
        return "a plugin calls of the agent only what libgwshared carries (shared/, core/error.c)"
    if room == "sdk":
        if target == "sdk" and tfolder == folder:
            return None
        sees = sdk_sees(folder)
        return None if target in sees else "sdk/ sees only %s" % ", ".join(
            r + "/" for r in sorted(sees))
    if target in ("plugins", "sdk"):
        return "the agent calls nothing of %s/" % target
    seen = ROOMS.get(room)
    if seen is not None and target not in seen:
        return "%s/ sees only %s" % (room, ", ".join(r + "/" for r in sorted(seen)))
    if room != "source" and tfolder:
        return "outside source/ only the seam is seen, never a source's folder"
    if room == "source" and folder and tfolder and tfolder != folder and \
            tfolder not in SHARED_FOLDERS:
        return "a source's folder calls no other source's folder"
    if room == "source" and not folder and tfolder:
        return "what every source shares depends on no source's folder"
    return None


def check_links(build):
    """Every call across rooms that the rules forbid, from the objects of the build tree
    `build`, as 'OBJECT: calls SYMBOL (defined in OBJECT): why' lines. [] when nothing is
    built (a clean tree)."""
    objects = []
    for tree in ("agent", "plugins", "sdk"):
        for root, _, names in os.walk(os.path.join(build, tree)):
            for n in names:
                if n.endswith(".o"):
                    rel = os.path.relpath(os.path.join(root, n), build).replace(os.sep, "/")
                    if object_room(rel):
                        objects.append(rel)
    if not objects:
        return []
    # PIC and non-PIC copies of one object define the same symbols: the .libs one is kept
    def twin(o):
        return os.path.join(build, os.path.dirname(o), ".libs", os.path.basename(o))
    objects = sorted(o for o in objects if "/.libs/" in o or not os.path.exists(twin(o)))
    out = subprocess.run(["nm", "-A"] + objects, cwd=build, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, check=True).stdout
    defined, used = {}, []
    for line in out.splitlines():
        m = re.match(r"^(.+?):\s*(?:[0-9a-fA-F]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        if kind == "U":
            used.append((obj, sym))
        elif kind in "TDBRCVWG" and sym not in defined:
            defined[sym] = obj
    errors = []
    for obj, sym in used:
        home = defined.get(sym)
        if not home or home == obj:
            continue
        caller, callee = object_room(obj), object_room(home)
        why = may_call(caller, callee, home)
        if why and (caller, callee) not in ALLOWED_LINKS:
            errors.append("%s: calls %s (defined in %s): %s" % (obj, sym, home, why))
    return sorted(set(errors))


# ((room, folder), (room, folder)): a call the code makes that the rules do not allow yet,
# each with its reason. None today.
ALLOWED_LINKS = {}


class IncludeRules(unittest.TestCase):

    def test_the_agent_keeps_the_include_rules(self):
        errors = check(os.path.join(SRC, "agent"))
        self.assertEqual(errors, [], "\n" + "\n".join(errors))

    def test_plugins_and_sdk_keep_their_include_rules(self):
        errors = check_outside(SRC, "plugins") + check_outside(SRC, "sdk")
        self.assertEqual(errors, [], "\n" + "\n".join(errors))

    def test_no_room_calls_a_function_of_a_room_it_may_not_see(self):
        build = os.environ.get("GWSYNC_BUILDDIR")
        if not build or not shutil.which("nm"):
            self.skipTest("needs the build tree (GWSYNC_BUILDDIR) and nm")
        errors = check_links(build)
        self.assertEqual(errors, [], "\n" + "\n".join(errors))

    def test_the_link_check_finds_each_kind_of_forbidden_call(self):
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if not cc or not shutil.which("nm"):
            self.skipTest("needs a C compiler and nm")
        objects = {  # object -> its C text
            "agent/source/.libs/libgwagent_la-registry.o": "int reg(void) { return 1; }\n",
            "agent/config/.libs/libgwagent_la-config.o":
                "int reg(void);\nint cfg(void) { return reg(); }\n",
            "agent/source/http/.libs/libgwagent_la-a.o": "int http_fn(void) { return 2; }\n",
            "agent/source/etcd/.libs/libgwagent_la-b.o":
                "int http_fn(void);\nint etcd_fn(void) { return http_fn(); }\n",
            "agent/source/kv/.libs/libgwagent_la-k.o": "int kv_fn(void) { return 3; }\n",
            "agent/source/zookeeper/.libs/libgwagent_la-z.o":
                "int kv_fn(void);\nint zk_fn(void) { return kv_fn(); }\n",
            "agent/model/.libs/libgwagent_la-m.o": "int model_fn(void) { return 4; }\n",
            "agent/core/.libs/libgwshared_la-error.o": "int err_fn(void) { return 5; }\n",
            "plugins/p/.libs/p_la-p.o": "int model_fn(void);\nint err_fn(void);\n"
                                        "int p_fn(void) { return model_fn() + err_fn(); }\n",
            "sdk/replay/gwsync_replay-main.o": "int reg(void);\nint model_fn(void);\n"
                                               "int main(void) { return reg() + model_fn(); }\n",
            "agent/ops/.libs/libgwagent_la-o.o": "int reg(void);\nint model_fn(void);\n"
                                                 "int o_fn(void) { return reg() + model_fn(); }\n",
        }
        with tempfile.TemporaryDirectory() as d:
            for rel, text in objects.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                src = os.path.join(d, rel[:-2] + ".c")
                with open(src, "w", encoding="utf-8") as f:
                    f.write(text)
                subprocess.run([cc, "-c", "-o", os.path.join(d, rel), src], check=True)
            errors = "\n".join(check_links(d))
            for want in ("agent/config/.libs/libgwagent_la-config.o: calls reg "
                         "(defined in agent/source/.libs/libgwagent_la-registry.o): config/ "
                         "sees only",
                         "agent/source/etcd/.libs/libgwagent_la-b.o: calls http_fn",
                         "plugins/p/.libs/p_la-p.o: calls model_fn",
                         "sdk/replay/gwsync_replay-main.o: calls reg"):
                self.assertIn(want, errors)
            for clean in ("calls kv_fn", "calls err_fn", "agent/ops/",
                          "sdk/replay/gwsync_replay-main.o: calls model_fn"):
                self.assertNotIn(clean, errors)

    def test_the_checker_finds_plugin_and_sdk_include_violations(self):
        tree = {
            "agent/core/error.h": "\n",
            "agent/model/model.h": "\n",
            "agent/store/store.h": "\n",
            "agent/shared/strbuf.h": "\n",
            "plugins/p/p.c": '#include "core/error.h"\n#include "shared/strbuf.h"\n'
                             '#include "model/model.h"\n#include "own.h"\n#include "gone.h"\n',
            "plugins/p/own.h": "\n",
            "sdk/x/x.c": '#include "model/model.h"\n#include "store/store.h"\n',
        }
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                    f.write(text)
            errors = "\n".join(check_outside(d, "plugins") + check_outside(d, "sdk"))
            for want in ("plugins/p/p.c:3: plugins/ includes model/model.h",
                         'plugins/p/p.c:5: "gone.h" is not a file of its own folder',
                         "sdk/x/x.c:2: sdk/ includes store/store.h"):
                self.assertIn(want, errors)
            for clean in ("p.c:1", "p.c:2", "p.c:4", "sdk/x/x.c:1"):
                self.assertNotIn(clean, errors)

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
