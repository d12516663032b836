#!/usr/bin/env python3
"""Every path the installed unit (Documentation=), man pages and README name exists after
`make install` (issue 21, item 3), checked in a DESTDIR tree: the same check the package
pass makes on the installed Debian packages (tests/package/named_paths.py), here for the
paths of this build's own prefix."""
import glob
import os
import re
import subprocess
import sys

import harness

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR")
sys.path.insert(0, os.path.join(SRC, "tests", "package"))
import named_paths  # noqa: E402


def make_vars(makefile):
    """The build's installation directories, fully expanded (`docdir = ${datarootdir}/...`)."""
    raw = {}
    with open(makefile, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([A-Za-z_]\w*) = (.*)$", line.rstrip("\n"))
            if m:
                raw.setdefault(m.group(1), m.group(2).strip())

    def expand(value, depth=0):
        if depth > 20:
            raise AssertionError("cannot expand %r" % value)
        return re.sub(r"\$[({](\w+)[)}]",
                      lambda m: expand(raw.get(m.group(1), ""), depth + 1), value)
    return {k: expand(v) for k, v in raw.items()}


class InstalledPaths(harness.IntegrationTest):

    def test_every_path_the_unit_man_pages_and_readme_name_is_installed(self):
        if not BUILD:
            self.skipTest("needs GWSYNC_BUILDDIR")
        v = make_vars(os.path.join(BUILD, "Makefile"))
        dest = self.tmpdir()
        r = subprocess.run(["make", "-s", "-C", BUILD, "install", "DESTDIR=" + dest],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout)

        def installed(path):
            return os.path.join(dest, path.lstrip("/"))
        unit = installed(os.path.join(v["systemdsystemunitdir"], "gwsync.service"))
        readme = installed(os.path.join(v["docdir"], "README.md"))
        pages = sorted(glob.glob(installed(os.path.join(v["mandir"], "man*", "*"))))
        self.assertEqual(sorted(os.path.basename(p) for p in pages),
                         ["gwsync-replay.1", "gwsync-subscriber.3", "gwsync.yaml.5", "gwsyncd.8"])
        texts = {os.path.basename(p): named_paths.read_text(p) for p in pages}
        texts["README.md"] = named_paths.read_text(readme)
        config = os.path.join(v["sysconfdir"], "gwsync", "gwsync.yaml")
        under = [v["prefix"], v["sysconfdir"], v["systemdsystemunitdir"]]
        bad = named_paths.missing(dest, texts, units={"gwsync.service": named_paths.read_text(unit)},
                                  mandir=v["mandir"], under=under, config_file=config)
        self.assertEqual(bad, [], "named but not installed under DESTDIR %s" % dest)
        # the check itself sees what it must: the unit's guide and the man pages' FILES
        doc, man = named_paths.unit_documentation(named_paths.read_text(unit))
        self.assertIn(os.path.join(v["docdir"], "operations.md"), doc)
        self.assertIn(("gwsyncd", "8"), man)
        self.assertIn(os.path.join(v["docdir"], "operations.md"),
                      named_paths.paths_in(texts["gwsyncd.8"]))
        self.assertTrue(named_paths.missing(dest, {"x": os.path.join(v["docdir"], "operations.md.gz")},
                                            under=under),
                        "a path that is not installed is reported")


if __name__ == "__main__":
    harness.main()
