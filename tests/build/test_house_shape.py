#!/usr/bin/env python3
"""The house's shape, checked as facts (issue 30, "Done when"):

  - no file in agent/ is over 700 lines;
  - no function in agent/, plugins/ or sdk/ is over 100 lines without a comment right above
    it (the comment says why it is one piece);
  - agent/ has no `(enum sync_fail)` cast (gw_err.kind is typed) and is compiled with
    -Wcast-qual (no cast takes const away: the compiler checks it, not a grep).

Each check also runs on a small planted tree, so it is known to fail when it should."""
import os
import pathlib
import re
import tempfile
import unittest

SRC = pathlib.Path(os.environ.get("GWSYNC_SRCDIR",
                                  os.path.join(os.path.dirname(__file__), "..", "..")))
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 100
SIGNATURE = re.compile(r"^[A-Za-z_][A-Za-z0-9_ \*]*\b[A-Za-z_][A-Za-z0-9_]*\(")


def sources(root, rooms):
    for room in rooms:
        for p in sorted((root / room).rglob("*")):
            if p.suffix in (".c", ".h") and p.is_file():
                yield p


def long_files(root):
    return ["%s: %d lines" % (p.relative_to(root), n)
            for p in sources(root, ["agent"])
            for n in [len(p.read_text(errors="replace").splitlines())] if n > MAX_FILE_LINES]


def uncommented_long_functions(root):
    """Functions (a body from a '{' alone on a line to the '}' alone on a line, the house's
    clang-format style) over the limit whose signature has no comment above it."""
    found = []
    for p in sources(root, ["agent", "plugins", "sdk"]):
        lines = p.read_text(errors="replace").splitlines()
        start = None
        for i, line in enumerate(lines):
            if line == "{":
                start = i
            elif line == "}" and start is not None:
                if i - start > MAX_FUNCTION_LINES:
                    sig = start - 1
                    while sig > 0 and not SIGNATURE.match(lines[sig]):
                        sig -= 1
                    above = lines[sig - 1].strip() if sig > 0 else ""
                    if not (above.endswith("*/") or above.startswith("//")):
                        found.append("%s:%d: %s (%d lines)" % (
                            p.relative_to(root), sig + 1, lines[sig].strip(), i - start))
                start = None
    return found


def sync_fail_casts(root):
    return ["%s:%d" % (p.relative_to(root), n + 1)
            for p in sources(root, ["agent"])
            for n, line in enumerate(p.read_text(errors="replace").splitlines())
            if "(enum sync_fail)" in line]


class HouseShape(unittest.TestCase):
    def test_no_agent_file_is_over_700_lines(self):
        self.assertEqual(long_files(SRC), [])

    def test_no_function_is_over_100_lines_without_a_comment_saying_why(self):
        self.assertEqual(uncommented_long_functions(SRC), [])

    def test_agent_has_no_sync_fail_cast(self):
        self.assertEqual(sync_fail_casts(SRC), [])

    def test_agent_is_compiled_with_cast_qual(self):
        am = (SRC / "Makefile.am").read_text()
        for target in ("libgwagent_la_CFLAGS", "gwsyncd_CFLAGS"):
            line = re.search(r"^%s\s*=(.*)$" % target, am, re.M)
            self.assertIsNotNone(line, target)
            self.assertIn("-Wcast-qual", line.group(1), target)


class PlantedViolations(unittest.TestCase):
    """The checks above fail on a tree that breaks each rule."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name)
        for room in ("agent/core", "plugins/x", "sdk/y"):
            (self.root / room).mkdir(parents=True)

    def tearDown(self):
        self.tmp.cleanup()

    def body(self, n):
        return "{\n" + "".join("\tx += %d;\n" % i for i in range(n)) + "}\n"

    def test_a_long_file_is_found(self):
        (self.root / "agent/core/big.c").write_text("int x;\n" * 701)
        (self.root / "agent/core/ok.c").write_text("int x;\n" * 700)
        self.assertEqual(long_files(self.root), ["agent/core/big.c: 701 lines"])

    def test_a_long_function_without_a_comment_is_found_and_one_with_is_not(self):
        (self.root / "plugins/x/a.c").write_text(
            "static int x;\n\nint bare(int y)\n" + self.body(101) +
            "\n/* One piece: why. */\nint told(int y)\n" + self.body(101) +
            "\nint short_one(void)\n" + self.body(10))
        self.assertEqual(uncommented_long_functions(self.root),
                         ["plugins/x/a.c:3: int bare(int y) (102 lines)"])

    def test_a_multi_line_signature_is_attributed_to_its_first_line(self):
        (self.root / "sdk/y/b.c").write_text(
            "int x;\nstatic int two_lines(int a,\n                     int b)\n" + self.body(120))
        self.assertEqual(len(uncommented_long_functions(self.root)), 1)
        self.assertIn("sdk/y/b.c:2:", uncommented_long_functions(self.root)[0])

    def test_a_sync_fail_cast_is_found(self):
        (self.root / "agent/core/c.c").write_text("int f(int k) { return (enum sync_fail)k; }\n")
        self.assertEqual(sync_fail_casts(self.root), ["agent/core/c.c:1"])


if __name__ == "__main__":
    unittest.main()
