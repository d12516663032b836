#!/usr/bin/env python3
"""The plugin author's path (issue 4): `make install` into a temporary prefix, then build the
plugin guide's example out of tree with nothing but the installed header and
`pkg-config --cflags gwsync`, and have gwsyncd --check load it."""
import os
import shutil
import subprocess

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


if __name__ == "__main__":
    harness.main()
