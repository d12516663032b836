#!/usr/bin/env python3
"""debian/control's Build-Depends is exactly what configure requires (issue 21, item 2): it
once lacked libwebsockets-dev and libssl-dev, and the packages built only because
`./dev.sh deps` had installed them. Every library, header and tool configure.ac requires
(PKG_CHECK_MODULES, AC_CHECK_LIB, AC_SEARCH_LIBS, AC_CHECK_HEADER, AM_PATH_PYTHON,
PKG_PROG_PKG_CONFIG) is traced to the Debian package that provides it on this machine
(pkg-config's .pc file, the linker's library, the preprocessor's header, each owned by a
package per `dpkg -S`), and that package must be in Build-Depends; a library that links with
no -l at all is the C library's (build-essential). The other way round, every Build-Depends
entry must be needed by something configure requires, so a dropped library (libmicrohttpd)
does not linger. Check, needed by `make check` only, is the one <!nocheck> entry, and
configure must then build without it (--disable-tests). dev.sh's BUILD_PACKAGES installs all
of Build-Depends. Skips where dpkg is not (not a Debian system)."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CC = os.environ.get("CC", "cc")
# Packages of the build-essential set that Build-Depends never lists (Debian policy 4.2).
ESSENTIAL = {"libc6-dev", "libc6", "libc-dev-bin", "linux-libc-dev", "gcc", "libgcc-s1"}
# A tool's binary belongs to a package other than the one a build depends on by name.
TOOL_PACKAGES = {"python3-minimal": "python3", "pkgconf-bin": "pkgconf", "pkg-config": "pkgconf"}
# What configure needs only for `make check`: the Debian nocheck profile goes without.
TEST_ONLY = {"check"}


def read(*path):
    with open(os.path.join(SRC, *path), encoding="utf-8") as f:
        return f.read()


def run(*cmd, stdin=None):
    return subprocess.run(list(cmd), input=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def strip_comments(text):
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("dnl"))


def args_of(text, macro):
    """The bracketed arguments of every call of `macro` in configure.ac (first level only)."""
    out = []
    for m in re.finditer(r"\b%s\(" % macro, text):
        i, depth, args, cur = m.end(), 0, [], ""
        while i < len(text):
            c = text[i]
            if c == "[":
                depth += 1
                if depth == 1:
                    i += 1
                    continue
            elif c == "]":
                depth -= 1
                if depth == 0:
                    i += 1
                    continue
            elif c == "," and depth == 0:
                args.append(cur.strip())
                cur = ""
                i += 1
                continue
            elif c == ")" and depth == 0:
                args.append(cur.strip())
                break
            cur += c
            i += 1
        out.append(args)
    return out


def requirements():
    """[(kind, name)] of everything configure.ac requires."""
    text = strip_comments(read("configure.ac"))
    reqs = []
    for args in args_of(text, "PKG_CHECK_MODULES"):
        for tok in args[1].split():
            if re.match(r"^[A-Za-z][\w.+-]*$", tok):
                reqs.append(("pkg-config module", tok))
    for args in args_of(text, "AC_CHECK_LIB"):
        reqs.append(("library", args[0]))
    for args in args_of(text, "AC_SEARCH_LIBS"):
        reqs.append(("function", (args[0], tuple(args[1].split()))))
    for macro in ("AC_CHECK_HEADER", "AC_CHECK_HEADERS"):
        for args in args_of(text, macro):
            reqs += [("header", h) for h in args[0].split()]
    if "AM_PATH_PYTHON" in text:
        reqs.append(("tool", "python3"))
    if "PKG_PROG_PKG_CONFIG" in text:
        reqs.append(("tool", "pkg-config"))
    return reqs


def owner(path):
    """The package that installed `path` (trying the merged-/usr twin too), or None."""
    path = os.path.normpath(path)
    twins = [path]
    if path.startswith("/usr/lib/"):
        twins.append(path[len("/usr"):])
    elif path.startswith("/lib/"):
        twins.append("/usr" + path)
    for p in twins + [os.path.realpath(path)]:
        r = run("dpkg", "-S", p)
        if r.returncode == 0:
            return r.stdout.split(":", 1)[0].split(",")[0].strip()
    return None


def links_bare(function):
    """Whether `function` links with no library at all (the C library has it)."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("char %s(void);\nint main(void) { return %s(); }\n" % (function, function))
        return run(CC, src, "-o", os.path.join(d, "t")).returncode == 0


def provider(kind, name):
    """(package, how it was found) or (None, why not)."""
    if kind == "pkg-config module":
        r = run("pkg-config", "--variable=pcfiledir", name)
        pc = os.path.join(r.stdout.strip(), name + ".pc")
        if r.returncode != 0 or not os.path.exists(pc):
            return None, "pkg-config does not find %s.pc" % name
        return owner(pc), pc
    if kind == "library":
        lib = run(CC, "-print-file-name=lib%s.so" % name).stdout.strip()
        if not os.path.isabs(lib):
            return None, "the linker does not find lib%s.so" % name
        return owner(lib), lib
    if kind == "function":
        function, libs = name
        if links_bare(function):
            return "libc6-dev", "%s() is in the C library" % function
        for lib in libs:
            pkg, how = provider("library", lib)
            if pkg:
                return pkg, how
        return None, "%s() links with none of %s" % (function, ", ".join(libs))
    if kind == "header":
        r = run(CC, "-E", "-x", "c", "-", stdin="#include <%s>\n" % name)
        m = re.search(r'^# \d+ "(/[^"]*%s)"' % re.escape(name), r.stdout, re.M)
        if not m:
            return None, "the preprocessor does not find <%s>" % name
        return owner(m.group(1)), m.group(1)
    if kind == "tool":
        # the first one on PATH that a package installed (not a pyenv's python3)
        dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]
        for d in dirs:
            path = os.path.join(d, name)
            if os.access(path, os.X_OK):
                pkg = owner(path)
                if pkg:
                    return TOOL_PACKAGES.get(pkg, pkg), path
        return None, "no %s on PATH that a package installed" % name
    raise AssertionError(kind)


def build_depends():
    """{package: profiles restriction text or ""} of debian/control's Build-Depends; an
    alternative "a | b" is entered under each name."""
    text = read("debian", "control")
    m = re.search(r"^Build-Depends:(.*?)(?=^\S)", text, re.M | re.S)
    out = {}
    for entry in m.group(1).replace("\n", " ").split(","):
        entry = entry.strip()
        if not entry:
            continue
        for alt in entry.split("|"):
            alt = alt.strip()
            name = re.match(r"^([a-z0-9][a-z0-9.+-]*)", alt).group(1)
            profile = re.search(r"<([^>]*)>", alt)
            out[name] = profile.group(1).strip() if profile else ""
    return out


@unittest.skipUnless(shutil.which("dpkg") and shutil.which("pkg-config"),
                     "needs dpkg and pkg-config (a Debian system)")
class BuildDepends(unittest.TestCase):

    def test_every_library_configure_requires_is_in_build_depends(self):
        deps = build_depends()
        reqs = requirements()
        kinds = {k for k, _ in reqs}
        self.assertTrue({"pkg-config module", "function", "header", "tool"} <= kinds, reqs)
        problems, used = [], set()
        for kind, name in reqs:
            pkg, how = provider(kind, name)
            shown = name if isinstance(name, str) else "%s() in %s" % (name[0], "/".join(name[1]))
            if not pkg:
                problems.append("configure requires %s %s, which nothing installed here "
                                "provides (%s): install it, then add its package to "
                                "Build-Depends" % (kind, shown, how))
            elif pkg in ESSENTIAL:
                continue
            elif pkg not in deps:
                problems.append("configure requires %s %s (%s, package %s): %s is missing "
                                "from debian/control's Build-Depends" % (kind, shown, how, pkg, pkg))
            else:
                used.add(pkg)
                test_only = pkg in TEST_ONLY
                if test_only and deps[pkg] != "!nocheck":
                    problems.append("%s is needed by make check only: mark it <!nocheck>" % pkg)
                if not test_only and deps[pkg]:
                    problems.append("%s is needed to build, not only to test, but is marked "
                                    "<%s>" % (pkg, deps[pkg]))
        unused = sorted(set(deps) - used - {"debhelper-compat"})
        if unused:
            problems.append("Build-Depends has %s, which nothing configure requires needs "
                            "(a library dropped from configure.ac?)" % ", ".join(unused))
        self.assertEqual(problems, [])

    def test_the_nocheck_entries_are_what_configure_can_do_without(self):
        # check <!nocheck> is only honest if configure builds without Check: it does with
        # --disable-tests, which debian/rules passes under nocheck
        self.assertIn("--disable-tests", read("configure.ac"))
        rules = read("debian", "rules")
        self.assertRegex(rules, r"NOCHECK = \$\(filter nocheck,\$\(DEB_BUILD_OPTIONS\) "
                                r"\$\(DEB_BUILD_PROFILES\)\)")
        self.assertIn("$(if $(NOCHECK),--disable-tests)", rules)
        for pkg, profile in build_depends().items():
            if profile == "!nocheck":
                self.assertIn(pkg, TEST_ONLY, "%s is <!nocheck> but configure needs it" % pkg)

    def test_dev_sh_installs_every_build_dependency(self):
        text = read("dev.sh")
        m = re.search(r"^BUILD_PACKAGES=\((.*?)\)", text, re.M | re.S)
        listed = set(m.group(1).split())
        if "pkg-config" in listed:
            listed.add("pkgconf")  # the transitional name installs pkgconf
        missing = sorted(set(build_depends()) - listed - {"debhelper-compat"})
        self.assertEqual(missing, [], "dev.sh's BUILD_PACKAGES lacks Build-Depends entries")


if __name__ == "__main__":
    unittest.main(verbosity=2)
