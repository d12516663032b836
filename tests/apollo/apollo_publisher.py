"""A test publisher writing to the Apollo emulator exactly as ShenYu's admin does
(ApolloDataChangedListener over AbstractNodeDataChangedListener, apache/shenyu HEAD and
2.6.1; PROTOCOL-PUSH.md 4.1):

- every key write is ApolloClient.createOrUpdateItem then publishNamespace: one release per
  key; every key delete is removeItem then publishNamespace (doDelConfig);
- keys: {ns}.plugin.{name}, {ns}.selector.{plugin}.{id}, {ns}.rule.{plugin}.{selectorId}.{id},
  {ns}.auth.{appKey}, {ns}.meta.{id}, {ns}.proxy.selector.{plugin}.{id},
  {ns}.discovery.{plugin}.{selectorId}, and the list keys {prefix}list / {prefix}{k}.list
  holding the ids as a JSON array; 2.6.1 writes them without "{ns}.";
- CREATE/UPDATE: the item keys, then the ids merged into the list key (read back with
  getItem); DELETE: the item keys removed, then the list rewritten without them (a
  multi-level list left empty is removed);
- REFRESH of PLUGIN/APP_AUTH/META_DATA: every item written, then when the old list is
  longer the vanished ids are deleted by their BARE name (delConfig("waf")): Apollo's
  removeItem of an absent key throws, the listener catches it and stops, so the list key is
  not rewritten (the list keeps the vanished names, and does not gain new ones);
- REFRESH of the multi-level groups is an UPDATE;
- a PLUGIN delete in the admin deletes the plugin's selectors first (RULE/DELETE of their
  rules, then SELECTOR/DELETE), then PLUGIN/DELETE.

Values are Gson text (tests/kv/publisher.gson). The interface is tests/kv/publisher.Publisher's
(write, delete, refresh, path, published), so tests/kv/publisher.RandomData drives it.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "kv"))
import publisher as kvpub  # noqa: E402  (gson, item_key, RandomData, the group lists)

GROUPS = kvpub.KV_GROUPS
DATA_IDS = {"PLUGIN": "plugin", "SELECTOR": "selector", "RULE": "rule", "APP_AUTH": "auth",
            "META_DATA": "meta", "PROXY_SELECTOR": "proxy.selector",
            "DISCOVER_UPSTREAM": "discovery"}  # ApolloPathConstants (HEAD)
gson = kvpub.gson
item_key = kvpub.item_key
RandomData = kvpub.RandomData


_ID_FIELD = {"PLUGIN": "name", "APP_AUTH": "appKey", "DISCOVER_UPSTREAM": "selectorId"}


def node_id(group, item):
    """The id a list key holds: PLUGIN name, APP_AUTH appKey, DISCOVER_UPSTREAM selectorId,
    the rest id (AbstractNodeDataChangedListener's mapperToKey / mappingValue)."""
    return item[_ID_FIELD.get(group, "id")]


class Publisher:
    def __init__(self, emulator, namespace=kvpub.DEFAULT_NAMESPACE, cluster="default",
                 apollo_namespace="application"):
        """namespace: ShenYu's namespace id ("{ns}." before every key), None for 2.6.1."""
        self.emu = emulator
        self.namespace = namespace
        self.cluster = cluster
        self.apollo_namespace = apollo_namespace
        self.writes = 0     # releases made
        self.aborted = 0    # events that stopped on a removeItem of an absent key

    # -------------------------------------------------------------- keys
    def prefix(self, group):
        base = DATA_IDS[group] + "."
        return "%s.%s" % (self.namespace, base) if self.namespace else base

    def multi(self, group, item):
        """The middle part of a multi-level group's keys ("{plugin}" or "{plugin}.{sid}")."""
        if group == "RULE":
            return "%s.%s" % (item["pluginName"], item["selectorId"])
        return item["pluginName"]

    def list_key(self, group, item=None):
        if group in ("PLUGIN", "APP_AUTH", "META_DATA"):
            return self.prefix(group) + "list"
        return self.prefix(group) + self.multi(group, item) + ".list"

    def path(self, group, item):
        if group in ("PLUGIN", "APP_AUTH", "META_DATA"):
            return self.prefix(group) + node_id(group, item)
        return "%s%s.%s" % (self.prefix(group), self.multi(group, item), node_id(group, item))

    # -------------------------------------------------------------- Apollo calls
    def _kw(self):
        return {"cluster": self.cluster, "namespace": self.apollo_namespace}

    def publish_config(self, key, value_text):
        """doPublishConfig: createOrUpdateItem + publishNamespace."""
        self.emu.create_or_update_item(key, value_text, **self._kw())
        self.emu.publish_namespace(**self._kw())
        self.writes += 1

    def del_config(self, key):
        """doDelConfig: removeItem (KeyError when absent) + publishNamespace."""
        self.emu.remove_item(key, **self._kw())
        self.emu.publish_namespace(**self._kw())
        self.writes += 1

    def get_list(self, key):
        text = self.emu.item(key, **self._kw())
        return json.loads(text) if text else []

    def write_raw(self, key, text):
        self.publish_config(key, text)

    # -------------------------------------------------------------- events
    def event(self, group, event_type, items):
        """One DataChangedEvent through the listener; an exception stops it (caught and
        logged by the listener, as onCommonChanged's catch does)."""
        if not items:
            return
        try:
            if group in ("PLUGIN", "APP_AUTH", "META_DATA"):
                self._common(group, event_type, items)
            else:
                self._multi(group, event_type, items)
        except KeyError:
            self.aborted += 1

    def _common(self, group, event_type, items):
        prefix, lkey = self.prefix(group), self.list_key(group)
        names = [node_id(group, it) for it in items]
        if event_type == "DELETE":
            for n in names:
                self.del_config(prefix + n)
            old = [x for x in self.get_list(lkey) if x not in names]
            self.publish_config(lkey, gson(old))
        elif event_type == "REFRESH":
            old = self.get_list(lkey)
            for it in items:
                self.publish_config(prefix + node_id(group, it), gson(it))
            if len(old) > len(items):
                for n in [x for x in old if x not in names]:
                    self.del_config(n)  # the bare name: absent in Apollo, so this throws
            self.publish_config(lkey, gson(names))
        else:
            for it in items:
                self.publish_config(prefix + node_id(group, it), gson(it))
            old = self.get_list(lkey)
            self.publish_config(lkey, gson(old + [n for n in names if n not in old]))

    def _multi(self, group, event_type, items):
        by = {}
        for it in items:
            by.setdefault(self.multi(group, it), []).append(node_id(group, it))
        prefix = self.prefix(group)
        if event_type == "DELETE":
            for it in items:
                self.del_config(self.path(group, it))
            for mid, ids in by.items():
                lkey = prefix + mid + ".list"
                left = [x for x in self.get_list(lkey) if x not in ids]
                if left:
                    self.publish_config(lkey, gson(left))
                else:
                    self.del_config(lkey)
        else:
            for it in items:
                self.publish_config(self.path(group, it), gson(it))
            for mid, ids in by.items():
                lkey = prefix + mid + ".list"
                old = self.get_list(lkey)
                merged = old + [x for x in ids if x not in old]
                if merged:
                    self.publish_config(lkey, gson(merged))
                else:
                    self.del_config(lkey)

    # the kv Publisher's interface, for RandomData
    def write(self, group, item):
        self.event(group, "UPDATE", [item])

    def write_many(self, group, items):
        self.event(group, "UPDATE", list(items))

    def refresh(self, group, items):
        self.event(group, "REFRESH", list(items))

    def delete(self, group, item):
        if group == "PLUGIN":
            name = item["name"]
            for sid in self.get_list(self.prefix("SELECTOR") + name + ".list"):
                rl = self.prefix("RULE") + "%s.%s.list" % (name, sid)
                rules = [{"id": r, "pluginName": name, "selectorId": sid}
                         for r in self.get_list(rl)]
                self.event("RULE", "DELETE", rules)
                self.event("SELECTOR", "DELETE", [{"id": sid, "pluginName": name}])
        self.event(group, "DELETE", [item])

    # -------------------------------------------------------------- reading back
    def published(self, groups=GROUPS):
        """{GROUP: {key: item}} of the current release, as the list keys decide: a plugin is
        in {ns}.plugin.list; its selectors in {ns}.selector.{plugin}.list, their rules in
        {ns}.rule.{plugin}.{sid}.list; proxy selectors and discovery upstreams under a
        a listed plugin's lists; apps and meta in their lists (the gateway's walk,
        AbstractNodeDataSyncService). An id without its item key holds nothing."""
        rel = self.emu.released(**self._kw())
        out = {g: {} for g in groups}

        def lst(key):
            try:
                v = json.loads(rel.get(key) or "[]")
            except ValueError:
                return []
            return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []

        def put(group, key):
            if group in out and key in rel:
                try:
                    item = json.loads(rel[key])
                except ValueError:
                    return
                if isinstance(item, dict):
                    out[group][item_key(group, item)] = item

        for g in ("APP_AUTH", "META_DATA"):
            for i in lst(self.prefix(g) + "list"):
                put(g, self.prefix(g) + i)
        for p in lst(self.prefix("PLUGIN") + "list"):
            put("PLUGIN", self.prefix("PLUGIN") + p)
            for s in lst("%s%s.list" % (self.prefix("SELECTOR"), p)):
                put("SELECTOR", "%s%s.%s" % (self.prefix("SELECTOR"), p, s))
                for r in lst("%s%s.%s.list" % (self.prefix("RULE"), p, s)):
                    put("RULE", "%s%s.%s.%s" % (self.prefix("RULE"), p, s, r))
            for g in ("PROXY_SELECTOR", "DISCOVER_UPSTREAM"):
                for i in lst("%s%s.list" % (self.prefix(g), p)):
                    put(g, "%s%s.%s" % (self.prefix(g), p, i))
        return out


def random_data(seed=1, namespace=kvpub.DEFAULT_NAMESPACE, **kw):
    """RandomData whose plugins include "tcp", the plugin its proxy selectors and discovery
    upstreams belong to: in the node layout they are read under a listed plugin only."""
    d = RandomData(seed=seed, namespace=namespace, **kw)
    if not any(p["name"] == "tcp" for p in d.items["PLUGIN"]):
        tcp = dict(d.items["PLUGIN"][0], name="tcp", id="40", config="{}")
        d.items["PLUGIN"].append(d._ns(tcp))
    return d
