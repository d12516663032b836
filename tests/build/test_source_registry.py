#!/usr/bin/env python3
"""A source type is its folder and one registry line (issue 23, item 1), checked as facts:

  - agent/source/sources.am includes each source folder's source.am, one line each; a folder
    that is a source type declares it in its own source.am (`GW_SOURCE_TYPES += NAME`, NAME
    its folder, for NAME_source_ops defined in its source.c), and a shared part (kv/)
    declares none;
  - every folder under agent/source/ with a source.am is included (a folder left out would
    be built by nothing), and every folder defining a NAME_source_ops declares its type;
  - the registry's table the build generates (agent/source/source_types.c in the build tree)
    lists exactly the declared types, in the include order (the order main asks them in);
  - nothing outside a source's folder names it: no NAME_source_ops in agent/ outside the
    folder, and no build file but sources.am's include line names agent/source/NAME/.

The last check also runs on a small tree with a type named outside its folder, so it is known
to fail when it should."""
import os
import pathlib
import re
import tempfile
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR")

INCLUDE = re.compile(r"^include \$\(srcdir\)/agent/source/([A-Za-z0-9_]+)/source\.am$", re.M)
DECLARE = re.compile(r"^GW_SOURCE_TYPES[ \t]*\+=[ \t]*(.*)$", re.M)
OPS = re.compile(r"\bconst struct source_ops ([A-Za-z0-9_]+)_source_ops\b")
ENTRY = re.compile(r"^\t&([A-Za-z0-9_]+)_source_ops,$", re.M)


def read(*path):
    with open(os.path.join(*path), encoding="utf-8", errors="replace") as f:
        return f.read()


def included(src):
    """The source folders agent/source/sources.am includes, in order."""
    return INCLUDE.findall(read(src, "agent", "source", "sources.am"))


def declared(src, folder):
    """The types a folder's source.am declares."""
    return " ".join(DECLARE.findall(read(src, "agent", "source", folder, "source.am"))).split()


def build_files(src):
    """Makefile.am, configure.ac and every .am under agent/ (relative paths)."""
    out = [f for f in ("Makefile.am", "configure.ac") if os.path.isfile(os.path.join(src, f))]
    for root, _, names in os.walk(os.path.join(src, "agent")):
        out += [os.path.relpath(os.path.join(root, n), src) for n in names if n.endswith(".am")]
    return sorted(p.replace(os.sep, "/") for p in out)


def named_outside(src, types):
    """Every place outside a type's folder that names it, as 'FILE:LINE: why' lines."""
    errors = []
    agent = os.path.join(src, "agent")
    for root, _, names in os.walk(agent):
        for n in sorted(names):
            if not n.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(root, n), src).replace(os.sep, "/")
            text = read(src, rel)
            for m in re.finditer(r"\b([A-Za-z0-9_]+)_source_ops\b", text):
                t = m.group(1)
                if t in types and not rel.startswith("agent/source/%s/" % t):
                    errors.append("%s:%d: names %s_source_ops outside agent/source/%s/" % (
                        rel, text.count("\n", 0, m.start()) + 1, t, t))
    for rel in build_files(src):
        for i, line in enumerate(read(src, rel).split("\n"), 1):
            for t in types:
                if "agent/source/%s/" % t not in line or rel == "agent/source/%s/source.am" % t:
                    continue
                if rel == "agent/source/sources.am" and INCLUDE.fullmatch(line):
                    continue
                errors.append("%s:%d: names agent/source/%s/ (only its include line in "
                              "agent/source/sources.am may)" % (rel, i, t))
    return errors


class SourceRegistry(unittest.TestCase):

    def test_each_included_folder_declares_its_own_type_or_none(self):
        folders = included(SRC)
        self.assertEqual(len(folders), len(set(folders)), "a folder included twice")
        types = []
        for folder in folders:
            got = declared(SRC, folder)
            ops = OPS.findall(read(SRC, "agent", "source", folder, "source.c")) \
                if os.path.isfile(os.path.join(SRC, "agent", "source", folder, "source.c")) \
                else []
            if folder in ("kv", "node"):
                self.assertEqual(got, [], "%s/ is a shared part, not a source type" % folder)
            self.assertIn(got, ([], [folder]),
                          "%s/source.am declares %s: a folder declares itself or nothing"
                          % (folder, got))
            self.assertEqual(ops, got, "%s/: defines %s_source_ops but declares %s" % (
                folder, ops, got))
            types += got
        self.assertEqual(types, ["http", "websocket", "zookeeper", "etcd", "nacos", "apollo",
                                 "consul", "polaris"])

    def test_every_folder_with_a_source_am_is_included(self):
        base = os.path.join(SRC, "agent", "source")
        folders = sorted(d for d in os.listdir(base)
                         if os.path.isfile(os.path.join(base, d, "source.am")))
        self.assertEqual(sorted(included(SRC)), folders)

    @unittest.skipUnless(BUILD, "GWSYNC_BUILDDIR not set (run by make check)")
    def test_the_generated_table_is_the_declared_types_in_include_order(self):
        want = [t for f in included(SRC) for t in declared(SRC, f)]
        table = read(BUILD, "agent", "source", "source_types.c")
        self.assertEqual(ENTRY.findall(table), want)
        self.assertTrue(table.rstrip().endswith("\tNULL,\n};"), table)

    def test_nothing_outside_a_source_folder_names_it(self):
        types = [t for f in included(SRC) for t in declared(SRC, f)]
        errors = named_outside(SRC, types)
        self.assertEqual(errors, [], "\n" + "\n".join(errors))

    def test_the_check_finds_a_type_named_outside_its_folder(self):
        tree = {
            "Makefile.am": "include $(srcdir)/agent/source/sources.am\n"
                           "x_SOURCES = agent/source/foo/extra.c\n",
            "agent/source/sources.am": "GW_SOURCE_TYPES =\n"
                                       "include $(srcdir)/agent/source/foo/source.am\n",
            "agent/source/foo/source.am": "GW_SOURCE_TYPES += foo\n",
            "agent/source/foo/source.c": "const struct source_ops foo_source_ops = {0};\n",
            "agent/source/registry.c": "extern const struct source_ops foo_source_ops;\n",
        }
        with tempfile.TemporaryDirectory() as d:
            for rel, text in tree.items():
                pathlib.Path(d, rel).parent.mkdir(parents=True, exist_ok=True)
                pathlib.Path(d, rel).write_text(text, encoding="utf-8")
            errors = "\n".join(named_outside(d, ["foo"]))
            self.assertIn("agent/source/registry.c:1: names foo_source_ops", errors)
            self.assertIn("Makefile.am:2: names agent/source/foo/", errors)
            self.assertNotIn("agent/source/sources.am:", errors)
            self.assertNotIn("agent/source/foo/source.c", errors)


if __name__ == "__main__":
    unittest.main(verbosity=2)
