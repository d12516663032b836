#!/usr/bin/env python3
"""The man pages cannot drift from the code (issue 15): gwsyncd(8) describes exactly the
options of agent/options.c's getopt table, and gwsync.yaml(5), docs/configuration.md and the
key tables of agent/config/*.c name exactly the same configuration keys. The pages also
render without a warning from man (groff)."""
import glob
import os
import re
import shutil
import subprocess
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def read(*path):
    with open(os.path.join(SRC, *path), encoding="utf-8") as f:
        return f.read()


def code_options():
    """{long name: short letter or None} from the longopts table and the getopt string."""
    text = read("agent", "options.c")
    table = re.search(r"struct option longopts\[\] = \{(.*?)\n\s*\};", text, re.S).group(1)
    shorts = set(re.search(r'getopt_long\([^"]*"([^"]*)"', text).group(1).replace(":", ""))
    out = {}
    for name, val in re.findall(r'\{"([a-z][a-z-]*)",\s*\w+,\s*NULL,\s*\'(.)\'\}', table):
        out[name] = val if val in shorts else None
    return out


def man_options():
    """{long name: short letter or None} from the OPTIONS section of gwsyncd(8)."""
    text = read("man", "gwsyncd.8.in")
    section = text.split("\n.Sh OPTIONS\n", 1)[1].split("\n.Sh ", 1)[0]
    out = {}
    for line in section.splitlines():
        if not line.startswith(".It Fl"):
            continue
        longs = re.findall(r"Fl \\-([a-z][a-z-]*)", line)
        short = re.match(r"\.It Fl ([A-Za-z])\b", line)
        for name in longs:
            out[name] = short.group(1) if short else None
    return out


def code_keys():
    """Every dotted key path the configuration loader accepts, from the tables
    `static const struct key NAME[] = {...}` of agent/config/*.c. An entry's last field names
    its sub-table; a list of maps (subscribers) is linked by name: subscribers -> subscriber_keys."""
    tables = {}
    for path in sorted(glob.glob(os.path.join(SRC, "agent", "config", "*.c"))):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name, body in re.findall(r"static const struct key (\w+)\[\] = \{(.*?)\n\};", text, re.S):
            entries = []
            for m in re.finditer(r'\{"([a-z_]+)",([^{}]*)\}', body):
                sub = m.group(2).strip().split(",")[-1].strip()
                entries.append((m.group(1), sub if sub.endswith("_keys") else None))
            tables[name] = entries
    assert "top_keys" in tables, "no top_keys table in agent/config/*.c"
    keys, used = set(), {"top_keys"}

    def walk(table, prefix):
        for name, sub in tables[table]:
            if sub is None and name.endswith("s") and name[:-1] + "_keys" in tables:
                sub, name = name[:-1] + "_keys", name + "[]"
            if sub:
                used.add(sub)
                walk(sub, prefix + name + ".")
            else:
                keys.add(prefix + name)
    walk("top_keys", "")
    unreached = set(tables) - used
    assert not unreached, ("key tables %s are not reached from top_keys: teach "
                           "tests/docs/test_manpages.py how they are linked" % sorted(unreached))
    return keys


def doc_keys():
    """The keys of the tables under "## Every key" in docs/configuration.md."""
    text = read("docs", "configuration.md")
    section = text.split("\n## Every key\n", 1)[1]
    section = re.split(r"\n## ", section, 1)[0]
    return set(re.findall(r"^\| `([a-z_\[\].]+)` \|", section, re.M))


def man_keys():
    text = read("man", "gwsync.yaml.5.in")
    section = text.split("\n.Sh KEYS\n", 1)[1].split("\n.Sh ", 1)[0]
    return set(re.findall(r"^\.It Cm (\S+)", section, re.M))


class ManPages(unittest.TestCase):

    def test_gwsyncd_8_describes_every_option_of_the_code(self):
        code, man = code_options(), man_options()
        self.assertTrue(code, "no options found in agent/options.c")
        self.assertEqual(sorted(set(code) - set(man)), [],
                         "options of agent/options.c missing from man/gwsyncd.8.in")
        self.assertEqual(sorted(set(man) - set(code)), [],
                         "options in man/gwsyncd.8.in that agent/options.c does not have")
        for name, short in code.items():
            self.assertEqual(man[name], short, "--%s: short option differs" % name)

    def test_the_usage_text_names_every_option(self):
        usage = read("agent", "options.c").split("options_usage(void)", 1)[1].split("}", 1)[0]
        for name in code_options():
            self.assertIn("--" + name, usage)

    def test_gwsync_yaml_5_and_the_reference_name_every_key_of_the_code(self):
        code, doc, man = code_keys(), doc_keys(), man_keys()
        self.assertIn("admin.retry.backoff", code)
        self.assertIn("subscribers[].library", code)
        for name, other in (("docs/configuration.md", doc), ("man/gwsync.yaml.5.in", man)):
            self.assertEqual(sorted(code - other), [], "keys of the code missing from " + name)
            self.assertEqual(sorted(other - code), [], "keys in %s the code does not accept" % name)

    def test_the_pages_render_without_warnings(self):
        if not shutil.which("man") or not shutil.which("groff"):
            self.skipTest("needs man and groff")
        build = os.environ.get("GWSYNC_BUILDDIR")
        for page in ("gwsyncd.8", "gwsync.yaml.5", "gwsync-subscriber.3"):
            path = os.path.join(build, "man", page) if build else None
            if not path or not os.path.exists(path):
                path = os.path.join(SRC, "man", page + ".in")
            r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr.strip(), "", "%s: %s" % (page, r.stderr))


# ---------------------------------------------------------------- the SDK's pages (issue 21)

def sdk_public_names():
    """Every public name a plugin (or its test) uses, from <gwsync/subscriber.h> and
    <gwsync/testing.h>: functions, macros, enum constants, struct names and the members of
    the structs a plugin reads or fills (the typed item views are docs/items.md's, checked
    by tests/docs/test_items.py)."""
    names = set()
    growable = ("gw_subscriber", "gw_host", "gw_change", "gw_item", "gw_version", "gw_update",
                "gw_option")
    for header in ("subscriber.h", "testing.h"):
        text = read("include", "gwsync", header)
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        names |= {m for m in re.findall(r"#define (\w+)", code) if not m.endswith("_H")}
        names |= {m for m in re.findall(r"GWSYNC_EXPORT [^;(]*?\b(\w+)\(", code)
                  if not m.startswith("__")}
        for body in re.findall(r"enum \w+ \{(.*?)\}", code, re.S):
            names |= set(re.findall(r"\b(GW_[A-Z0-9_]+)\b", body))
        names |= set(re.findall(r"struct (\w+) \{", code))
        names |= set(re.findall(r"^struct (\w+);", code, re.M))
        for struct in growable:
            m = re.search(r"struct %s \{(.*?)\n\};" % struct, code, re.S)
            if not m:
                continue
            for line in m.group(1).split(";"):
                fn = re.search(r"\(\*(\w+)\)", line)
                var = re.search(r"(\w+)\s*(\[[^]]*\])?\s*$", line.strip())
                if fn:
                    names.add(fn.group(1))
                elif var:
                    names.add(var.group(1))
    return names


def page_words(page):
    text = read("man", page).replace("\\-", "-").replace("\\&", "")
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)), text


def replay_code_options():
    """{long name: short letter or None} of gwsync-replay's getopt table."""
    text = read("sdk", "replay", "main.c")
    table = re.search(r"struct option longopts\[\] = \{(.*?)\n\s*\};", text, re.S).group(1)
    shorts = set(re.search(r'getopt_long\([^"]*"([^"]*)"', text).group(1).replace(":", ""))
    return {name: (val if val in shorts else None)
            for name, val in re.findall(r'\{"([a-z][a-z-]*)",\s*\w+,\s*NULL,\s*\'(.)\'\}', table)}


class SdkPages(unittest.TestCase):

    def test_gwsync_subscriber_3_names_every_public_name_of_the_sdk(self):
        names = sdk_public_names()
        for want in ("gwsync_subscriber", "gw_host", "group_configured", "configured_groups",
                     "confirmed_only", "config_size", "config_list_item", "GW_HAS",
                     "gwt_version_new", "gwt_tick_until", "GW_GROUP_DISCOVER_UPSTREAM"):
            self.assertIn(want, names, "the header scan lost %s" % want)
        words, text = page_words("gwsync-subscriber.3.in")
        self.assertEqual(sorted(names - words), [],
                         "public names of <gwsync/subscriber.h> and <gwsync/testing.h> that "
                         "man/gwsync-subscriber.3.in does not name")
        self.assertIn("gwsync/testing.h", text)
        self.assertIn("gwsync-testing.pc", text)
        self.assertIn(".Xr gwsync-replay 1", text)

    def test_gwsync_replay_1_describes_every_option_of_the_code(self):
        code = replay_code_options()
        self.assertIn("groups", code)
        text = read("man", "gwsync-replay.1.in")
        section = text.split("\n.Sh DESCRIPTION\n", 1)[1].split("\n.Sh ", 1)[0]
        man = {}
        for line in section.splitlines():
            if line.startswith(".It Fl"):
                short = re.match(r"\.It Fl ([A-Za-z])\b", line)
                for name in re.findall(r"Fl \\-([a-z][a-z-]*)", line):
                    man[name] = short.group(1) if short else None
        self.assertEqual(man, code, "man/gwsync-replay.1.in against sdk/replay/main.c")
        usage = read("sdk", "replay", "main.c").split("usage[] =", 1)[1].split('";\n', 1)[0]
        for name in code:
            self.assertIn("--" + name, usage)

    def test_the_sdk_pages_render_without_warnings(self):
        if not shutil.which("man") or not shutil.which("groff"):
            self.skipTest("needs man and groff")
        build = os.environ.get("GWSYNC_BUILDDIR")
        for page in ("gwsync-subscriber.3", "gwsync-replay.1"):
            path = os.path.join(build, "man", page) if build else None
            if not path or not os.path.exists(path):
                path = os.path.join(SRC, "man", page + ".in")
            r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr.strip(), "", "%s: %s" % (page, r.stderr))


if __name__ == "__main__":
    unittest.main(verbosity=2)
