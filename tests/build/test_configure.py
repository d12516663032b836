#!/usr/bin/env python3
"""configure in the two situations the default build never meets (issue 21, items 2 and 7):
clang, where -Wno-format-truncation (GCC's) made the fuzz build print "unknown warning
option" for every file, and a machine without the Check library (the Debian nocheck build
profile), where `check <!nocheck>` leaves it out of the build and configure must still work
with --disable-tests. One configure run in a temporary directory covers both: CC=clang,
--disable-tests, and a pkg-config that does not know `check`. Also the build's own flags:
every warning flag configure chose is one its compiler knows."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR")


def make_var(makefile, name):
    with open(makefile, encoding="utf-8") as f:
        m = re.search(r"^%s = (.*)$" % name, f.read(), re.M)
    return m.group(1).split() if m else None


def compile_clean(cc, flags, tmp):
    """stderr of compiling an empty translation unit with `flags` (and -Werror)."""
    src = os.path.join(tmp, "empty.c")
    with open(src, "w") as f:
        f.write("int gw_empty(void);\nint gw_empty(void) { return 0; }\n")
    r = subprocess.run([cc] + flags + ["-Werror", "-c", src, "-o", os.path.join(tmp, "empty.o")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return r.returncode, r.stderr


class Configure(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gwsync-configure-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_the_builds_warning_flags_are_known_to_its_compiler(self):
        if not BUILD:
            self.skipTest("needs GWSYNC_BUILDDIR")
        makefile = os.path.join(BUILD, "Makefile")
        cc = make_var(makefile, "CC")
        flags = [f for f in make_var(makefile, "WARN_CFLAGS") if f != "-Werror"]
        rc, err = compile_clean(cc[0], cc[1:] + flags, self.tmp)
        self.assertEqual((rc, err), (0, ""), "%s %s" % (" ".join(cc), " ".join(flags)))

    def test_clang_without_check_configures_with_disable_tests(self):
        if not os.path.exists(os.path.join(SRC, "configure")):
            self.skipTest("no configure in the source tree (autoreconf -fi)")
        if not shutil.which("clang") or not shutil.which("pkg-config"):
            self.skipTest("needs clang and pkg-config")
        # a pkg-config that has never heard of Check, as on a nocheck build
        wrapper = os.path.join(self.tmp, "pkg-config")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nfor a in \"$@\"; do case $a in check|check\\ *) exit 1;; esac; done\n"
                    "exec %s \"$@\"\n" % shutil.which("pkg-config"))
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
        build = os.path.join(self.tmp, "build")
        os.mkdir(build)
        env = dict(os.environ, PKG_CONFIG=wrapper, CC="clang", CFLAGS="-O0")
        for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            env.pop(k, None)

        def configure(*args):
            return subprocess.run([os.path.join(SRC, "configure"), "-q", "--cache-file=/dev/null"]
                                  + list(args), cwd=build, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=600)
        # without --disable-tests: refused, saying how to go on
        r = configure()
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("--disable-tests", r.stdout)
        # with it: configured, tests off, and only warning flags clang knows
        r = configure("--disable-tests")
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertNotIn("unknown warning option", r.stdout)
        makefile = os.path.join(build, "Makefile")
        flags = make_var(makefile, "WARN_CFLAGS")
        self.assertNotIn("-Wno-format-truncation", flags)
        self.assertIn("-Wall", flags)
        rc, err = compile_clean("clang", flags, self.tmp)
        self.assertEqual((rc, err), (0, ""))
        with open(makefile, encoding="utf-8") as f:
            text = f.read()
        # make check then stops with a sentence instead of a missing <check.h>
        self.assertRegex(text, r"(?m)^tests-disabled:")
        self.assertIn("configured with --disable-tests", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
