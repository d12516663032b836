#!/usr/bin/env python3
"""The man pages cannot drift from the code (issues 15 and 21): gwsyncd(8) describes exactly the
options of agent/options.c's getopt table and of `gwsyncd --help`, and its synopsis shows
every one; gwsync.yaml(5), docs/configuration.md and the key tables of agent/config/*.c name
exactly the same configuration keys, each under its own section's heading; every source
the agent has (agent/source/*/source.c) is named by gwsyncd(8) and by the package's
description, and every server URL scheme the configuration accepts by admin.servers. The
pages also render without a warning from man (groff).

The SDK's half (gwsync-subscriber(3) against include/gwsync/*.h) is the plugin SDK's work:
it goes in a class of its own at the end of this file."""
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


def c_fields(entry):
    """The fields of one C initializer `{"a", f, 0, ...}`, split at the commas outside strings
    and parentheses."""
    fields, cur, depth, quoted = [], "", 0, False
    for i, ch in enumerate(entry):
        if ch == '"' and (i == 0 or entry[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            fields.append(cur.strip())
            cur = ""
            continue
        cur += ch
    fields.append(cur.strip())
    return fields


def code_keys():
    """Every dotted key path the configuration loader accepts, from the tables
    `const struct key NAME[] = {...}` of agent/config/*.c and of the sources' own sections
    (agent/source/**/config.c, each declared by a `struct cfg_section` naming its key, its
    parent section and its table). An entry's sixth field names its sub-table; a list of maps
    (subscribers) is linked by name: subscribers -> subscriber_keys."""
    tables, sections = {}, []
    paths = sorted(glob.glob(os.path.join(SRC, "agent", "config", "*.c")) +
                   glob.glob(os.path.join(SRC, "agent", "source", "**", "*.c"), recursive=True))
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for name, body in re.findall(r"(?:static )?const struct key (\w+)\[\] = \{(.*?)\n\};",
                                     text, re.S):
            entries = []
            for m in re.finditer(r'\{("[a-z_]+",(?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}', body):
                fields = c_fields(m.group(1))
                sub = fields[5] if len(fields) > 5 else ""
                entries.append((fields[0].strip('"'), sub if sub.endswith("_keys") else None))
            tables[name] = entries
        for body in re.findall(r"const struct cfg_section \w+ = \{(.*?)\n\};", text, re.S):
            fields = dict(re.findall(r"\.(\w+) = ([^,\n]+),", body))
            sections.append((fields["name"].strip('"'),
                             fields["parent"].strip('"') if "parent" in fields else None,
                             fields["keys"]))
    assert "top_keys" in tables, "no top_keys table in agent/config/*.c"
    assert sections, "no struct cfg_section in agent/source/"
    for name, parent, keys in sections:
        tables["top_keys" if parent is None else parent + "_keys"].append((name, keys))
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


def help_options():
    """{long name: short letter or None} from the running binary's `gwsyncd --help`."""
    binary = os.environ.get("GWSYNCD")
    if not binary or not os.access(binary, os.X_OK):
        raise unittest.SkipTest("needs the built gwsyncd (GWSYNCD)")
    r = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s+(?:-([A-Za-z]), )?--([a-z][a-z-]*)\b", line)
        if m:
            out[m.group(2)] = m.group(1)
    return out


def man_section(page, name):
    text = read("man", page)
    return text.split("\n.Sh %s\n" % name, 1)[1].split("\n.Sh ", 1)[0]


def synopsis_options():
    """(long names, short letters) shown in gwsyncd(8)'s SYNOPSIS."""
    text = man_section("gwsyncd.8.in", "SYNOPSIS")
    longs = set(re.findall(r"\\-([a-z][a-z-]*)", text))
    shorts = set(re.findall(r"(?:\bFl|\|) ([A-Za-z])(?=\s|$)", text))
    return longs, shorts


# How the documents name each source of agent/source/*/source.c (its `.type`).
SOURCE_WORDS = {"http": "long-polling", "websocket": "WebSocket", "zookeeper": "ZooKeeper",
                "etcd": "etcd", "nacos": "Nacos",
                "apollo": "Apollo", "consul": "Consul", "polaris": "Polaris"}


def code_sources():
    types = set()
    for path in glob.glob(os.path.join(SRC, "agent", "source", "*", "source.c")):
        with open(path, encoding="utf-8") as f:
            types |= set(re.findall(r'^\s*\.type = "([a-z]+)",', f.read(), re.M))
    return types


def code_schemes():
    """The URL schemes agent/source/admin/config.c accepts for admin.servers."""
    text = read("agent", "source", "admin", "config.c")
    return set(re.findall(r'strncasecmp\(url, "([a-z]+)://"', text))


def man_key_sections():
    """{key: the .Ss heading it is listed under} in gwsync.yaml(5)'s KEYS."""
    section, out = None, {}
    for line in man_section("gwsync.yaml.5.in", "KEYS").splitlines():
        if line.startswith(".Ss "):
            section = line[4:].strip()
        m = re.match(r"^\.It Cm (\S+)", line)
        if m:
            out[m.group(1)] = section
    return out


# Keys listed under another key's heading, and why: the control socket lives in state_dir.
KEY_SECTION_EXCEPTIONS = {"control_socket": "state_dir"}


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

    def test_gwsyncd_8_describes_every_option_of_gwsyncd_help(self):
        helped, man = help_options(), man_options()
        self.assertIn("dry-run", helped)
        self.assertEqual(sorted(set(helped) - set(man)), [],
                         "options of `gwsyncd --help` missing from gwsyncd(8)'s OPTIONS")
        self.assertEqual(sorted(set(man) - set(helped)), [],
                         "options in gwsyncd(8) that `gwsyncd --help` does not show")
        for name, short in helped.items():
            self.assertEqual(man[name], short, "--%s: short option differs" % name)

    def test_gwsyncd_8_synopsis_shows_every_option(self):
        longs, shorts = synopsis_options()
        missing = sorted(n for n, short in help_options().items()
                         if n not in longs and (short is None or short not in shorts))
        self.assertEqual(missing, [], "options missing from gwsyncd(8)'s SYNOPSIS")

    def test_every_source_is_named_by_gwsyncd_8_and_the_package(self):
        sources = code_sources()
        self.assertTrue({"http", "websocket"} <= sources, sources)
        unknown = sorted(sources - set(SOURCE_WORDS))
        self.assertEqual(unknown, [], "a new source: say in SOURCE_WORDS how the documents "
                                      "name it, and describe it in gwsyncd(8)")
        description = man_section("gwsyncd.8.in", "DESCRIPTION")
        control = read("debian", "control")
        package = control.split("\nPackage: gwsync\n", 1)[1].split("\nPackage:", 1)[0]
        for t in sorted(sources):
            self.assertIn(SOURCE_WORDS[t], description, "gwsyncd(8) DESCRIPTION: %s" % t)
            self.assertIn(SOURCE_WORDS[t], package, "debian/control's gwsync: %s" % t)

    def test_admin_servers_names_every_url_scheme(self):
        schemes = code_schemes()
        self.assertEqual(schemes, {"http", "https", "ws", "wss"})
        keys = read("man", "gwsync.yaml.5.in").split("\n.It Cm admin.servers ", 1)[1]
        item = keys.split("\n.It ", 1)[0]
        for scheme in sorted(schemes):
            self.assertIn("%s://" % scheme, item, "gwsync.yaml(5) admin.servers")

    def test_each_key_is_under_its_own_section(self):
        wrong = []
        for key, section in sorted(man_key_sections().items()):
            top = key.split(".", 1)[0].replace("[]", "")
            want = KEY_SECTION_EXCEPTIONS.get(key, top)
            if section != want:
                wrong.append("%s is under '%s', not '%s'" % (key, section, want))
        self.assertEqual(wrong, [], "gwsync.yaml(5) KEYS")

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
    for header in ("subscriber.h", "log_level.h", "testing.h"):
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
