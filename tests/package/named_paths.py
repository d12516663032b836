"""The installed paths the operator's documents name (issue 21, item 3): the systemd unit's
Documentation=, the man pages and the README. After an install every one of them must exist:
a Documentation= line or a FILES section pointing at operations.md while the package holds
operations.md.gz sends the operator nowhere.

Used by tests/package/test_package.py (the Debian packages, installed on the machine) and by
tests/integration/test_installed_paths.py (a `make install DESTDIR=` tree).

Which paths count: those under /usr and /lib, the trees a package or `make install` fills,
and the configuration file itself. Paths under /etc (other than the configuration), /var and
/run in these texts are the operator's own files (a password file, a CA bundle), examples,
or made at run time (state_dir, the control socket, the logs), so they are not looked for.
`<multiarch>` in the README stands for the architecture's directory and matches any."""
import glob
import gzip
import os
import re

# An absolute path under /usr or /lib: not the tail of a longer path (/var/lib/x), ending
# in a word character, '/', '*' or '>' (so "operations.md." and "dir)," lose the stop).
PATH_RE = re.compile(r"(?<![\w./<>@$-])(/(?:usr|lib)/[\w.+/<>*-]*[\w/*>])")
MAN_RE = re.compile(r"^man:([\w.+-]+)\((\d)\)$")


def read_text(path):
    """A file's text, gunzipped when it ends in .gz."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def paths_in(text, config_file=None):
    """The paths a text names that must exist after an install."""
    found = set(PATH_RE.findall(text))
    if config_file and config_file in text:
        found.add(config_file)
    return found


def unit_documentation(text):
    """(paths, man pages) of a unit's Documentation= lines: file:// URLs and man:NAME(N)."""
    paths, pages = set(), set()
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("Documentation="):
            continue
        for uri in line.split("=", 1)[1].split():
            if uri.startswith("file://"):
                paths.add(uri[len("file://"):])
            elif MAN_RE.match(uri):
                pages.add(MAN_RE.match(uri).groups())
            else:
                paths.add(uri)  # anything else cannot be checked here: reported as missing
    return paths, pages


def exists(root, path):
    """Whether `path` (with `<multiarch>` or `*` as wildcards) exists under `root`."""
    pattern = path.replace("<multiarch>", "*")
    full = os.path.join(root, pattern.lstrip("/"))
    return bool(glob.glob(full)) if "*" in pattern else os.path.lexists(full)


def man_page_exists(root, mandir, name, section):
    base = os.path.join(root, mandir.lstrip("/"), "man" + section, "%s.%s" % (name, section))
    return os.path.exists(base) or os.path.exists(base + ".gz")


def missing(root, texts, units=None, mandir="/usr/share/man", under=None, config_file=None):
    """Every named path (and man: page of a unit) that does not exist under `root`, as
    "WHERE: PATH" lines. texts: {name: text} of man pages and READMEs; units: {name: text}
    of unit files. under: only paths below these prefixes are checked (a DESTDIR install
    names the packages' paths too, in the README)."""
    out = []

    def check(where, path):
        if under and not any(path == p or path.startswith(p.rstrip("/") + "/") for p in under):
            return
        if not exists(root, path):
            out.append("%s: %s" % (where, path))

    for where, text in sorted((units or {}).items()):
        paths, pages = unit_documentation(text)
        if not paths and not pages:
            out.append("%s: no Documentation= line" % where)
        for path in sorted(paths):
            if not path.startswith("/"):
                out.append("%s: Documentation=%s is not a file:// or man: URI" % (where, path))
            else:
                check(where + " Documentation=", path)
        for name, section in sorted(pages):
            if not man_page_exists(root, mandir, name, section):
                out.append("%s: Documentation=man:%s(%s)" % (where, name, section))
    for where, text in sorted(texts.items()):
        for path in sorted(paths_in(text, config_file)):
            check(where, path)
    return out
