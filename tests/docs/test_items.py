#!/usr/bin/env python3
"""docs/items.md cannot drift (issue 21, item 9): every group has an example that is an item
of the emulator's dataset (tests/admin/dataset.py), every field of an example (and of its
nested lists and JSON texts) is in the group's tables and every documented field is in the
example unless it is documented as possibly absent, the fields documented as JSON text parse,
the typed views' columns are those of the agent's own field tables (agent/model/fields.c)
and name every member of the typed views of <gwsync/subscriber.h>, and the agent itself
(through gwsync-replay) takes each example under the key and display name the page says."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GWSYNC_BUILDDIR", "")
sys.path.insert(0, os.path.join(SRC, "tests", "admin"))
import dataset  # noqa: E402

GROUPS = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR",
          "DISCOVER_UPSTREAM", "AI_PROXY_API_KEY"]
ROW = re.compile(r"^\| `([^`]+)` \| ([^|]*) \| ([^|]*) \| ([^|]*) \|$", re.M)


def read(*path):
    with open(os.path.join(SRC, *path), encoding="utf-8") as f:
        return f.read()


def page():
    """{group: {"text", "example", "key", "tables": {path: {field: (type, c)}}}}; path "" is
    the item itself, "conditionList[]" the elements of a list, "handle[]" the elements of the
    list in a JSON text, "handle" the object in a JSON text."""
    text = read("docs", "items.md")
    out = {}
    for part in re.split(r"\n## ", text)[1:]:
        group = part.split("\n", 1)[0].strip()
        if group not in GROUPS:
            continue
        m = re.search(r"```json\n(.*?)\n```", part, re.S)
        key = re.search(r"Key: `([^`]+)`", part)
        tables = {}
        for i, sub in enumerate(re.split(r"\n### ", part)):
            path = "" if i == 0 else re.match(r"`([^`]+)`", sub).group(1)
            tables[path] = {f: (t.strip(), c.strip()) for f, t, c, _ in ROW.findall(sub)}
        out[group] = {"text": part, "example": json.loads(m.group(1)) if m else None,
                      "key": key.group(1) if key else None, "tables": tables}
    return out


def resolve(item, path):
    """The objects a table's path names in an item (a list for "[]", one object otherwise)."""
    if not path:
        return [item]
    value = item
    for seg in path.split("."):
        many = seg.endswith("[]")
        value = value.get(seg[:-2] if many else seg) if isinstance(value, dict) else None
        if isinstance(value, str):
            value = json.loads(value)
        if value is None:
            return []
        if not many:
            value = [value]
    return value


class ItemsDoc(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.doc = page()
        cls.data = dataset.generate(seed=1, flavour="shenyu")

    def test_every_group_has_an_example_from_the_emulators_dataset(self):
        self.assertEqual(sorted(self.doc), sorted(GROUPS))
        for group, sec in self.doc.items():
            self.assertIsNotNone(sec["example"], "%s: no ```json example" % group)
            self.assertIn(sec["example"], self.data[group],
                          "%s: the example is not an item of dataset.generate(seed=1): it "
                          "drifted from the fixtures" % group)

    def test_examples_and_tables_name_the_same_fields(self):
        for group, sec in self.doc.items():
            for path, table in sec["tables"].items():
                self.assertTrue(table, "%s %s: no table" % (group, path or "item"))
                objects = resolve(sec["example"], path)
                self.assertTrue(objects, "%s: the example has no %s" % (group, path))
                for obj in objects:
                    where = "%s %s" % (group, path or "item")
                    self.assertEqual(sorted(set(obj) - set(table)), [],
                                     "%s: fields of the example that the table lacks" % where)
                    missing = [f for f in table if f not in obj and "absent" not in table[f][0]]
                    self.assertEqual(missing, [], "%s: documented fields missing from the "
                                                  "example (say 'or absent' if they may be)" % where)

    def test_json_text_fields_are_json(self):
        for group, sec in self.doc.items():
            for path, table in sec["tables"].items():
                for obj in resolve(sec["example"], path):
                    for field, (kind, _) in table.items():
                        if "JSON text" in kind and obj.get(field):
                            json.loads(obj[field])

    def test_the_typed_columns_are_the_agents_field_tables(self):
        """agent/model/fields.c maps each JSON field to its member of the typed view."""
        fields = read("agent", "model", "fields.c")
        where = {"plugin_fields": ("PLUGIN", ""), "selector_fields": ("SELECTOR", ""),
                 "rule_fields": ("RULE", ""), "app_auth_fields": ("APP_AUTH", ""),
                 "meta_fields": ("META_DATA", ""),
                 "condition_fields": ("SELECTOR", "conditionList[]"),
                 "param_fields": ("APP_AUTH", "paramDataList[]"),
                 "path_fields": ("APP_AUTH", "pathDataList[]")}
        seen = set()
        for name, body in re.findall(r"static const struct field (\w+)\[\] = \{(.*?)\n\};",
                                     fields, re.S):
            self.assertIn(name, where, "a field table of fields.c this test does not place")
            group, path = where[name]
            table = self.doc[group]["tables"][path]
            seen.add(name)
            for json_name, members in re.findall(r'[FL]\(struct \w+, "(\w+)", \w+, ([\w, ]+)\)',
                                                 body):
                self.assertIn(json_name, table, "%s %s: %s not documented" %
                              (group, path, json_name))
                for member in members.split(","):
                    self.assertIn("`%s`" % member.strip(), table[json_name][1],
                                  "%s.%s: its C member is %s" % (group, json_name, member))
        self.assertEqual(seen, set(where))

    def test_every_typed_member_of_the_header_is_on_the_page(self):
        header = read("include", "gwsync", "subscriber.h")
        text = read("docs", "items.md")
        for struct in ("gw_plugin_data", "gw_selector_data", "gw_rule_data", "gw_app_auth_data",
                       "gw_meta_data", "gw_condition", "gw_auth_param", "gw_auth_path"):
            body = re.search(r"struct %s \{(.*?)\n\};" % struct, header, re.S).group(1)
            body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
            members = re.findall(r"(\w+);", body)
            self.assertTrue(members, struct)
            for member in members:
                self.assertTrue("`%s`" % member in text, "%s.%s is not on docs/items.md" %
                                (struct, member))

    def test_the_page_is_linked_and_installed(self):
        self.assertIn("(items.md)", read("docs", "plugin-guide.md"))
        self.assertIn("(items.md)", read("docs", "keys.md"))
        self.assertRegex(read("Makefile.am"), r"dist_doc_DATA \+=.*docs/items\.md")

    def test_the_agent_takes_each_example_under_the_documented_key_and_name(self):
        replay = os.path.join(BUILD, "gwsync-replay") if BUILD else ""
        if not os.access(replay, os.X_OK):
            self.skipTest("needs GWSYNC_BUILDDIR with gwsync-replay")
        names = {"PLUGIN": "name", "SELECTOR": "name", "RULE": "name", "APP_AUTH": "appKey",
                 "META_DATA": "path", "PROXY_SELECTOR": "name"}
        with tempfile.TemporaryDirectory(prefix="gwsync-items-") as tmp:
            for group, sec in self.doc.items():
                path = os.path.join(tmp, group + ".json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"group": group, "md5": "x1", "lastModifyTime": 1,
                               "data": [sec["example"]]}, f, ensure_ascii=False)
                r = subprocess.run([replay, "log", path], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                key = "::".join(str(sec["example"][f]) for f in sec["key"].split("::"))
                name = sec["example"].get(names.get(group, ""), None)
                want = "  + %s%s" % (key, " (%s)" % name if name else "")
                self.assertIn(want, r.stdout.splitlines(), "%s: %s" % (group, r.stdout))


if __name__ == "__main__":
    unittest.main(verbosity=2)
