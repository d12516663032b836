"""A test publisher that writes to the Polaris emulator exactly as ShenYu's admin does with
its PolarisDataChangedListener (HEAD; node layout from 2.6.1, PROTOCOL-PUSH.md 4.1), and
reads back what a gateway must hold.

How the admin writes, and so how this writes:
- Files in Polaris namespace `namespace` (default "default"), group `group` (default
  "shenyu"), one per key of ShenYu's node layout (AbstractNodeDataChangedListener), with
  P = "{namespaceId}." (2.7+) or "" (layout "2.6.1"):
    P plugin.list / P plugin.{name}; P selector.{plugin}.list / P selector.{plugin}.{id};
    P rule.{plugin}.{selectorId}.list / ...{id}; P auth.list / P auth.{appKey};
    P meta.list / P meta.{id}; P proxy.selector.{plugin}.list / ...{id};
    P discovery.{plugin}.list / P discovery.{plugin}.{selectorId}.
- doPublishConfig(dataId, data): if the file is released (its content not null), update it
  with Gson's JSON ("" when data is null), else create it with toJson(data) ("null" for
  null); then release it. So every key write is one release (version + 1).
- doDelConfig(dataId) = doPublishConfig(dataId, null): a delete re-publishes "" (or creates
  the file with "null" when it never existed).
- CREATE/UPDATE: item files, then the list file with the new ids merged in.
  DELETE: item files deleted, then the ids removed from the list (a multi-level list left
  empty is itself deleted). REFRESH of PLUGIN/APP_AUTH/META_DATA: every item published,
  the vanished ones deleted by their BARE name (a stray file "waf" holding "null"), the
  list overwritten; REFRESH of the multi-level groups is an UPDATE.
- PLUGIN DELETE: the admin deletes the plugin's rules (RULE/DELETE), its selectors
  (SELECTOR/DELETE), then the plugin, each as its own event.

The 2.6.0 layout (one whole-group document per group, shenyu/plugin.json ...) is written
by WholePublisher below (v2.6.0 AbstractListDataChangedListener: a map per group, every
change re-publishes the whole map).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "kv"))
from publisher import (DEFAULT_NAMESPACE, KV_GROUPS, RandomData, gson,  # noqa: E402,F401
                       item_key, strip_nulls)

NODE_NAMES = {"PLUGIN": "plugin", "SELECTOR": "selector", "RULE": "rule", "APP_AUTH": "auth",
              "META_DATA": "meta", "PROXY_SELECTOR": "proxy.selector",
              "DISCOVER_UPSTREAM": "discovery"}
SINGLE = ("PLUGIN", "APP_AUTH", "META_DATA")
# v2.6.0 PolarisPathConstants (+ NacosPathConstants.DISCOVERY_DATA_ID)
WHOLE_NAMES = {"PLUGIN": "shenyu/plugin.json", "SELECTOR": "shenyu/selector.json",
               "RULE": "shenyu/rule.json", "APP_AUTH": "shenyu/auth.json",
               "META_DATA": "shenyu/meta.json", "PROXY_SELECTOR": "shenyu/proxy/selector.json"}


def with_tcp(data):
    """RandomData's proxy selectors and discovery upstreams are under the plugin "tcp",
    which a gateway reaches only through plugin.list: make it a plugin."""
    if not any(p["name"] == "tcp" for p in data.items["PLUGIN"]):
        data.items["PLUGIN"].append(dict(data.items["PLUGIN"][0], name="tcp", id="37"))
    return data


def _blank(text):
    return text is None or text.strip() == "" or text.strip() == "null"


class Publisher:
    def __init__(self, emu, namespace="default", group="shenyu", shenyu_ns=DEFAULT_NAMESPACE,
                 layout="2.7"):
        self.emu = emu
        self.ns = namespace
        self.group = group
        self.shenyu_ns = shenyu_ns
        self.layout = layout
        self.writes = 0  # releases made

    # -------------------------------------------------------------- the listener's calls
    def get_config(self, data_id):
        """PolarisDataChangedListener.getConfig: the content if it has any, else null."""
        rel = self.emu.released(self.ns, self.group, data_id)
        return rel["content"] if rel and rel["content"].strip() else None

    def publish_config(self, data_id, data):
        """doPublishConfig: update (released) or create, then release."""
        rel = self.emu.released(self.ns, self.group, data_id)
        if rel is not None:
            text = "" if data is None else (data if isinstance(data, str) else gson(data))
            self.emu.update_file(self.ns, self.group, data_id, text)
        else:
            text = "null" if data is None else (data if isinstance(data, str) else gson(data))
            self.emu.create_file(self.ns, self.group, data_id, text)
        self.emu.release_file(self.ns, self.group, data_id)
        self.writes += 1

    def del_config(self, data_id):
        self.publish_config(data_id, None)

    def write_raw(self, data_id, text):
        self.emu.publish(self.ns, self.group, data_id, text)
        self.writes += 1

    # -------------------------------------------------------------- keys
    def prefix(self, group, item=None):
        """P + name + "." (selectors take the item's namespaceId without a default)."""
        if self.layout == "2.7":
            ns = (item or {}).get("namespaceId") if group == "SELECTOR" else None
            ns = ns or (item or {}).get("namespaceId") or self.shenyu_ns
            return "%s.%s." % (ns, NODE_NAMES[group])
        return "%s." % NODE_NAMES[group]

    def list_key(self, group, item):
        p = self.prefix(group, item)
        if group in SINGLE:
            return p + "list"
        return p + self.sub(group, item) + ".list"

    def sub(self, group, item):
        if group == "RULE":
            return "%s.%s" % (item["pluginName"], item["selectorId"])
        return item["pluginName"]

    def ident(self, group, item):
        return {"PLUGIN": item.get("name"), "APP_AUTH": item.get("appKey"),
                "DISCOVER_UPSTREAM": item.get("selectorId")}.get(group, item.get("id"))

    def path(self, group, item):
        p = self.prefix(group, item)
        if group in SINGLE:
            return p + self.ident(group, item)
        return "%s%s.%s" % (p, self.sub(group, item), self.ident(group, item))

    def _list(self, key):
        text = self.get_config(key)
        try:
            v = json.loads(text) if text else []
        except ValueError:
            v = []
        return list(v or [])

    # -------------------------------------------------------------- events
    def write(self, group, item):
        self.write_many(group, [item])

    def write_many(self, group, items):
        """CREATE/UPDATE: the item files, then each list with the new ids merged."""
        if not items:
            return
        for it in items:
            self.publish_config(self.path(group, it), it)
        by_list = {}
        for it in items:
            by_list.setdefault(self.list_key(group, it), []).append(self.ident(group, it))
        for key, ids in by_list.items():
            old = self._list(key)
            old += [i for i in ids if i not in old]
            if old or group in SINGLE:
                self.publish_config(key, old)
            else:
                self.del_config(key)

    def delete(self, group, item):
        self.delete_many(group, [item])

    def delete_many(self, group, items):
        if group == "PLUGIN":
            for p in items:
                self._delete_plugin_children(p["name"])
        for it in items:
            self.del_config(self.path(group, it))
        by_list = {}
        for it in items:
            by_list.setdefault(self.list_key(group, it), []).append(self.ident(group, it))
        for key, ids in by_list.items():
            old = [i for i in self._list(key) if i not in ids]
            if old or group in SINGLE:
                self.publish_config(key, old)
            else:
                self.del_config(key)

    def _delete_plugin_children(self, plugin):
        """What the admin publishes before a PLUGIN DELETE: the rules of each selector, then
        the selectors (items read back from the store)."""
        probe = {"pluginName": plugin, "namespaceId": self.shenyu_ns}
        sel_ids = self._list(self.list_key("SELECTOR", probe))
        for sid in sel_ids:
            rprobe = dict(probe, selectorId=sid)
            rids = self._list(self.list_key("RULE", rprobe))
            rules = [dict(rprobe, id=r) for r in rids]
            if rules:
                self.delete_many("RULE", rules)
        sels = [dict(probe, id=s) for s in sel_ids]
        if sels:
            self.delete_many("SELECTOR", sels)

    def refresh(self, group, items):
        if not items:
            return
        if group not in SINGLE:
            self.write_many(group, items)
            return
        key = self.list_key(group, items[0])
        old = self._list(key) if self.get_config(key) is not None else None
        names = [self.ident(group, it) for it in items]
        for it in items:
            self.publish_config(self.path(group, it), it)
        if old is not None and len(old) > len(items):
            for gone in [o for o in old if o not in names]:
                self.del_config(gone)  # the bare name: ShenYu's bug, kept as it is
        self.publish_config(key, names)

    def sync_all(self, data):
        for group in KV_GROUPS:
            if not data.get(group):
                continue
            if group in SINGLE:
                self.refresh(group, data[group])
            else:
                self.write_many(group, data[group])

    def wipe(self):
        self.emu.wipe()

    # -------------------------------------------------------------- reading back
    def published(self, groups=KV_GROUPS):
        """{GROUP: {key: item}} a gateway must hold: the walk from the root lists, an item
        present only while its id is in its list and its file is not blank."""
        out = {g: {} for g in groups}

        def item(key):
            text = self.get_config(key)
            if _blank(text):
                return None
            return json.loads(text)

        def add(g, key):
            it = item(key)
            if it is not None:
                out[g][item_key(g, it)] = it
        P = "%s." % self.shenyu_ns if self.layout == "2.7" else ""
        plugins = self._list(P + "plugin.list")
        for g in groups:
            name = NODE_NAMES[g]
            if g in SINGLE:
                for i in self._list("%s%s.list" % (P, name)):
                    add(g, "%s%s.%s" % (P, name, i))
                continue
            for pl in plugins:
                ids = self._list("%s%s.%s.list" % (P, name, pl))
                if g == "RULE":
                    for sid in self._list("%sselector.%s.list" % (P, pl)):
                        for rid in self._list("%srule.%s.%s.list" % (P, pl, sid)):
                            add(g, "%srule.%s.%s.%s" % (P, pl, sid, rid))
                    continue
                for i in ids:
                    add(g, "%s%s.%s.%s" % (P, name, pl, i))
        return out
