#!/usr/bin/env python3
"""The plugin author's path (issues 4 and 14): `make install` into a temporary prefix, then
build the plugin guide's example out of tree with nothing but what was installed: the header
and `pkg-config --cflags gwsync` for the plugin, and the installed example's own Makefile,
whose `make check` builds its unit test against the installed testing library and replays
recorded data through the installed gwsync-replay. Also: the documents a plugin author needs
are installed, none of their links points at a file the install does not have, and
gwsync.pc's docdir is a real path (issue 21, item 11)."""
import os
import re
import shutil
import subprocess
import sys

import harness

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR")


class Install(harness.IntegrationTest):

    def test_example_builds_out_of_tree_against_the_installed_header(self):
        if not BUILD or not shutil.which("pkg-config") or not shutil.which("cc"):
            self.skipTest("needs GWSYNC_BUILDDIR, cc and pkg-config")
        dest = self.tmpdir()
        r = subprocess.run(["make", "-s", "-C", BUILD, "install", "DESTDIR=" + dest],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        pcs = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
               if f == "gwsync.pc"]
        self.assertEqual(len(pcs), 1, pcs)
        headers = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
                   if f == "subscriber.h"]
        self.assertEqual(len(headers), 1, headers)
        plugins = sorted(f for root, _, files in os.walk(dest) for f in files if f.endswith(".so"))
        self.assertIn("file.so", plugins)
        self.assertIn("log.so", plugins)
        self.assertIn("libgwsync-testing.so", plugins)
        installed = {os.path.relpath(os.path.join(root, f), dest)
                     for root, _, files in os.walk(dest) for f in files}
        names = {os.path.basename(p) for p in installed}
        for want in ("testing.h", "gwsync-testing.pc", "gwsync-replay", "plugin-guide.md",
                     "configuration.md", "plugin-log.md", "plugin-file.md", "plugin-lmdb.md"):
            self.assertIn(want, names)
        examples = [p for p in installed if p.endswith("/example/Makefile")]
        self.assertEqual(len(examples), 1, sorted(installed))
        example = os.path.join(dest, os.path.dirname(examples[0]))

        # Out of tree: a copy of the example in an empty directory, the installed pc file
        # relocated to where it was installed (pkgconf's --define-prefix).
        work = self.tmpdir()
        shutil.copy(os.path.join(SRC, "docs", "example", "counter.c"), work)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
        cflags = subprocess.run(["pkg-config", "--define-prefix", "--cflags", "gwsync"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, check=True).stdout.split()
        self.assertTrue(any(f.startswith("-I" + dest) for f in cflags), cflags)
        so = os.path.join(work, "counter.so")
        r = subprocess.run(["cc", "-std=c11", "-shared", "-fPIC", "-fvisibility=hidden",
                            "-Wall", "-Wextra", "-Werror"] + cflags +
                           ["-o", so, os.path.join(work, "counter.c")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           cwd=work, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)

        d = self.daemon(harness.make_config(["http://127.0.0.1:9"],
                                            subscribers=[{"name": "counted", "library": so}]))
        r = d.run_check()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 subscriber(s) loaded", r.stdout)

        # The installed example, copied elsewhere, tested with its own Makefile against the
        # installed SDK only (pkg-config relocated to the staging directory).
        kit = os.path.join(self.tmpdir(), "example")
        shutil.copytree(example, kit)
        make = ["make", "-C", kit, "check", "PKG_CONFIG=pkg-config --define-prefix"]
        # A sanitizer build's testing library needs its runtime loaded first: build the
        # example's test with the same sanitizer then (the plugin itself stays plain).
        lib = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
               if f == "libgwsync-testing.so"][0]
        with open(lib, "rb") as f:
            image = f.read()
        for runtime, flag in ((b"libasan.so", "address,undefined"), (b"libtsan.so", "thread")):
            if runtime in image:
                make.append("CFLAGS=-O1 -g -Wall -Wextra -fsanitize=" + flag)
        # the example's own make, not a child of ours: `make -s check` would pass -s down
        # through MAKEFLAGS and hide the command lines checked below
        make_env = {k: v for k, v in env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        r = subprocess.run(make,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=make_env, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("test_counter: all checks passed", r.stdout)
        self.assertIn("counter: all tests passed", r.stdout)
        self.assertIn(dest, r.stdout)  # the installed gwsync-replay ran, not the build's

    def test_installed_documents_link_only_to_installed_files(self):
        if not BUILD or not shutil.which("pkg-config"):
            self.skipTest("needs GWSYNC_BUILDDIR and pkg-config")
        dest = self.tmpdir()
        r = subprocess.run(["make", "-s", "-C", BUILD, "install", "DESTDIR=" + dest],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)
        guides = [root for root, _, files in os.walk(dest) for f in files
                  if f == "plugin-guide.md"]
        self.assertEqual(len(guides), 1, guides)
        docdir = guides[0]
        docs = sorted(os.path.join(root, f) for root, _, files in os.walk(docdir)
                      for f in files if f.endswith(".md"))
        for want in ("README.md", "plugin-guide.md", "items.md", "keys.md", "plugin-lmdb.md"):
            self.assertIn(os.path.join(docdir, want), docs)
        links = 0
        for doc in docs:
            with open(doc, encoding="utf-8") as f:
                text = f.read()
            self.assertNotIn("@KEEP@", text, doc)
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue  # a URL or an anchor of the same page
                links += 1
                path = os.path.normpath(os.path.join(os.path.dirname(doc),
                                                     target.split("#", 1)[0]))
                self.assertTrue(os.path.exists(path), "%s links %s, which is not installed"
                                % (os.path.relpath(doc, dest), target))
        self.assertGreater(links, 10)  # the valid links stayed links
        self.named_paths_are_installed(dest, [d for d in docs
                                               if os.path.dirname(d) == docdir])
        # the admin emulator the guide tells authors to run, as a command
        emulator = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files
                    if f == "gwsync-admin-emulator"]
        self.assertEqual(len(emulator), 1, emulator)
        with open(emulator[0]) as f:
            target = re.search(r"exec python3 (\S+)", f.read()).group(1)
        r = subprocess.run([sys.executable, dest + target, "--help"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("--port", r.stdout)
        # gwsync.pc's docdir is that directory (no ${PACKAGE_TARNAME} left unexpanded)
        pc = [root for root, _, files in os.walk(dest) for f in files if f == "gwsync.pc"][0]
        got = subprocess.run(["pkg-config", "--define-prefix", "--variable=docdir", "gwsync"],
                             stdout=subprocess.PIPE, text=True, check=True,
                             env=dict(os.environ, PKG_CONFIG_PATH=pc)).stdout.strip()
        self.assertEqual(os.path.normpath(got), os.path.normpath(docdir))


    # Paths of the source tree that are installed under another name: an installed document
    # must name them as installed (issue 31, item 6). Paths of the source tree's own tests
    # and benchmark tools stay: they say where a behaviour is proven or a figure measured.
    SOURCE_ONLY = re.compile(r"(?<![\w/.-])(docs/[\w-]+\.md|plugins/\w+/README\.md|contrib/"
                             r"|etc/gwsync\.production\.yaml|tests/admin/|include/gwsync/"
                             r"|man -l build/)")

    def named_paths_are_installed(self, dest, docs):
        docdir = os.path.dirname(docs[0])[len(dest):]  # PREFIX/share/doc/gwsync
        prefix = docdir[:-len("/share/doc/gwsync")]
        named = 0
        for doc in docs:
            with open(doc, encoding="utf-8") as f:
                text = f.read()
            left = self.SOURCE_ONLY.findall(text)
            self.assertEqual(left, [], "%s names source-tree paths that are installed "
                             "elsewhere" % os.path.relpath(doc, dest))
            # every absolute path under the prefix it names exists in the installed tree
            for path in re.findall(r"(?<![\w.])(%s/[\w./+-]*[\w/])" % re.escape(prefix), text):
                path = path.rstrip("/")
                if re.search(r"[A-Z]{3,}", path):
                    continue  # a placeholder such as STATE_DIR or GROUP
                named += 1
                # what the package installs (share/, a document) exists itself; a file an
                # operator creates (etc/gwsync/admin-password) in a directory that does
                shipped = path.endswith(".md") or "/share/" in path
                self.assertTrue(os.path.lexists(dest + path) or
                                (not shipped and os.path.lexists(dest + os.path.dirname(path))),
                                "%s names %s, which is not installed"
                                % (os.path.relpath(doc, dest), path))
        self.assertGreater(named, 3)


if __name__ == "__main__":
    harness.main()
