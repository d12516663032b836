"""A test publisher that writes to ZooKeeper or etcd exactly as ShenYu's admin does
(PROTOCOL-PUSH.md 0.4-0.6, 2.1, 2.2, 3.1), and a random dataset to publish.

How the admin writes, and so how this writes:
- One node/key per item: ROOT/plugin/{name}, ROOT/selector/{plugin}/{id},
  ROOT/rule/{plugin}/{selectorId}-{ruleId}, ROOT/auth/{appKey}, ROOT/metaData/{path}
  (2.7: the item's path without its leading '/', each '/' a level; 2.5/2.6 with root
  /shenyu: one flat node, the path URL-encoded as Java's URLEncoder does),
  ROOT/proxySelectorData/{plugin}/{id}, ROOT/discoveryUpstream/{plugin}/{selectorId}.
- The value is Gson's JSON of the one item: nulls omitted, compact, < > & = ' escaped as
  \\u003c \\u003e \\u0026 \\u003d \\u0027, other characters as they are (UTF-8).
- ZooKeeper parents are created with empty data (Curator's creatingParentsIfNeeded); etcd
  has leaf keys only.
- CREATE/UPDATE: one createOrUpdate per item. DELETE: the item's node (ZooKeeper: recursive;
  etcd: the one key). PLUGIN DELETE also removes ROOT/selector/{name} and ROOT/rule/{name}
  (ZooKeeper recursively, etcd as a prefix delete without a trailing '/', as ShenYu does).
  REFRESH of SELECTOR/RULE: delete the FIRST item's plugin subtree, then write every item,
  one at a time; REFRESH of other groups only overwrites. No transactions anywhere.

Two stores behind one interface (put, delete, delete_tree, read_tree): ZkStore (kazoo) and
EtcdStore (the v3 JSON gateway, urllib + base64). Publisher.published() reads the store
back and is what the agent must hold: {GROUP: {key: item}}.
"""
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "admin"))
import dataset  # noqa: E402  (realistic item shapes, the item keys)

import servers  # noqa: E402

DEFAULT_NAMESPACE = dataset.DEFAULT_NAMESPACE
# the groups a path store holds (AI_PROXY_API_KEY is never written to one)
KV_GROUPS = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR",
             "DISCOVER_UPSTREAM"]
LEGACY_GROUPS = ["PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"]
DIRS = {"PLUGIN": "plugin", "SELECTOR": "selector", "RULE": "rule", "APP_AUTH": "auth",
        "META_DATA": "metaData", "PROXY_SELECTOR": "proxySelectorData",
        "DISCOVER_UPSTREAM": "discoveryUpstream"}
GROUP_OF_DIR = {v: k for k, v in DIRS.items()}



def item_key(group, item):
    """An item's key in its group, as the agent keys it (docs/keys.md): PLUGIN by name,
    APP_AUTH by appKey, DISCOVER_UPSTREAM by selectorId, the rest by id."""
    if group == "PLUGIN":
        return item.get("name") if isinstance(item, dict) else None
    return dataset.item_key(group, item)


# ---------------------------------------------------------------------- values
_GSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "=": "\\u003d",
                 "'": "\\u0027", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def strip_nulls(v):
    """What Gson drops: null object members (nested too)."""
    if isinstance(v, dict):
        return {k: strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [strip_nulls(x) for x in v]
    return v


def gson(item):
    """The admin's GsonUtils.toJson(item): compact, nulls omitted, HTML characters escaped.
    (Those characters never occur in JSON's own syntax, so escaping the text is exact.)"""
    text = json.dumps(strip_nulls(item), separators=(",", ":"), ensure_ascii=False)
    return "".join(_GSON_ESCAPES.get(c, c) for c in text)


def java_url_encode(s):
    """java.net.URLEncoder.encode(s, "UTF-8"): alphanumerics and . - * _ kept, space as +,
    everything else %XX of its UTF-8 bytes (upper-case hex)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        if c.isascii() and (c.isalnum() or c in ".-*_"):
            out.append(c)
        elif c == " ":
            out.append("+")
        else:
            out.append("%%%02X" % b)
    return "".join(out)


# ---------------------------------------------------------------------- stores
class ZkStore:
    """ZooKeeper through kazoo, with Curator's write semantics."""

    kind = "zookeeper"

    def __init__(self, client):
        self.c = client

    def _retry(self, fn, *args, **kw):
        """Curator retries an operation cut by a connection loss (a leader election, a
        member restart); kazoo's own retry helper does the same, up to 60 s."""
        from kazoo.retry import KazooRetry
        return KazooRetry(max_tries=-1, delay=0.05, max_delay=0.5, deadline=60)(fn, *args, **kw)

    def put(self, path, value):
        from kazoo.exceptions import NodeExistsError
        data = value.encode("utf-8") if isinstance(value, str) else value

        def once():
            if self.c.exists(path):
                self.c.set(path, data)
                return
            try:
                self.c.create(path, data, makepath=True)  # parents with empty data
            except NodeExistsError:  # created meanwhile: createOrUpdate sets it then
                self.c.set(path, data)
        self._retry(once)

    def delete(self, path):
        """delete().guaranteed().deletingChildrenIfNeeded(): recursive, absent is fine."""
        from kazoo.exceptions import NoNodeError

        def once():
            try:
                self.c.delete(path, recursive=True)
            except NoNodeError:
                pass
        self._retry(once)

    delete_tree = delete

    def read_tree(self, root):
        """{path: bytes} of every node below root that holds data."""
        from kazoo.exceptions import NoNodeError
        out = {}

        def walk(path):
            try:
                data, _ = self._retry(self.c.get, path)
                children = self._retry(self.c.get_children, path)
            except NoNodeError:
                return
            if data and path != root:
                out[path] = data
            for ch in children:
                walk(path.rstrip("/") + "/" + ch)
        walk(root)
        return out

    def ensure_empty(self, path):
        """A node without data (what Curator leaves as a parent)."""
        self._retry(self.c.ensure_path, path)


class EtcdStore:
    """etcd through the v3 JSON gateway, with jetcd's write semantics as ShenYu uses them."""

    kind = "etcd"

    def __init__(self, cluster):
        self.cluster = cluster  # a servers.Etcd (any live member answers)

    def call(self, path, body):
        return self.cluster.call(path, body)

    def put(self, path, value):
        data = value.encode("utf-8") if isinstance(value, str) else value
        self.call("/v3/kv/put", {"key": servers.b64(path), "value": servers.b64(data)})

    def delete(self, path):
        """deleteNode: KV.delete(key), the one key."""
        self.call("/v3/kv/deleterange", {"key": servers.b64(path)})

    def delete_tree(self, path):
        """deletePathRecursive: KV.delete(key, withPrefix(key)); no trailing '/' added."""
        self.call("/v3/kv/deleterange", {"key": servers.b64(path),
                                         "range_end": servers.b64(servers.prefix_end(path))})

    def read_tree(self, root):
        prefix = root.rstrip("/") + "/"
        r = self.call("/v3/kv/range", {"key": servers.b64(prefix),
                                       "range_end": servers.b64(servers.prefix_end(prefix))})
        out = {}
        for kv in r.get("kvs", []):
            value = servers.unb64(kv.get("value"))
            if value:
                out[servers.unb64(kv["key"]).decode("utf-8")] = value
        return out

    def ensure_empty(self, path):
        self.put(path, b"")


# ---------------------------------------------------------------------- the admin
class Publisher:
    """Writes items under `root` as ShenYu's admin does. layout "2.7" (root
    /{namespace}/shenyu, nested metaData) or "2.6" (root /shenyu, URL-encoded metaData)."""

    def __init__(self, store, root, layout="2.7"):
        self.store = store
        self.root = root.rstrip("/")
        self.layout = layout
        self.writes = 0  # node writes and deletes done, for tests that count them

    # -------------------------------------------------------------- paths
    def dir(self, group):
        return "%s/%s" % (self.root, DIRS[group])

    def path(self, group, item):
        d = self.dir(group)
        if group == "PLUGIN":
            return "%s/%s" % (d, item["name"])
        if group == "SELECTOR":
            return "%s/%s/%s" % (d, item["pluginName"], item["id"])
        if group == "RULE":
            return "%s/%s/%s-%s" % (d, item["pluginName"], item["selectorId"], item["id"])
        if group == "APP_AUTH":
            return "%s/%s" % (d, item["appKey"])
        if group == "META_DATA":
            if self.layout == "2.6":
                return "%s/%s" % (d, java_url_encode(item["path"]))
            # "/" + ... + "/" + path, then replaceAll("//", "/")
            return ("%s/%s" % (d, item["path"])).replace("//", "/")
        if group == "PROXY_SELECTOR":
            return "%s/%s/%s" % (d, item["pluginName"], item["id"])
        if group == "DISCOVER_UPSTREAM":
            return "%s/%s/%s" % (d, item["pluginName"], item["selectorId"])
        raise ValueError("the admin writes no %s to a path store" % group)

    # -------------------------------------------------------------- events
    def write(self, group, item):
        """CREATE or UPDATE of one item: createOrUpdate(path, gson(item))."""
        self.store.put(self.path(group, item), gson(item))
        self.writes += 1

    def write_many(self, group, items):
        for item in items:
            self.write(group, item)

    def write_raw(self, path, text):
        """Any bytes at any path (a malformed value, a foreign node)."""
        self.store.put(path, text)
        self.writes += 1

    def delete(self, group, item):
        """DELETE of one item; a PLUGIN's selectors and rules go with it."""
        if group == "PLUGIN":
            name = item["name"]
            self.store.delete_tree("%s/%s" % (self.dir("PLUGIN"), name))
            self.store.delete_tree("%s/%s" % (self.dir("SELECTOR"), name))
            self.store.delete_tree("%s/%s" % (self.dir("RULE"), name))
            self.writes += 3
            return
        self.store.delete(self.path(group, item))
        self.writes += 1

    def refresh(self, group, items):
        """REFRESH: SELECTOR/RULE first delete the FIRST item's plugin subtree, then every
        item is written one at a time; other groups are only overwritten."""
        if not items:
            return
        if group in ("SELECTOR", "RULE"):
            self.store.delete_tree("%s/%s" % (self.dir(group), items[0]["pluginName"]))
            self.writes += 1
        self.write_many(group, items)

    def sync_all(self, data):
        """The admin's syncAll(REFRESH): every group of `data` ({GROUP: [items]}), in the
        order the admin publishes them."""
        for group in ("PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA", "PROXY_SELECTOR",
                      "DISCOVER_UPSTREAM"):
            if data.get(group):
                if group in ("SELECTOR", "RULE"):
                    # one REFRESH per plugin, as a per-plugin sync publishes them
                    by_plugin = {}
                    for it in data[group]:
                        by_plugin.setdefault(it["pluginName"], []).append(it)
                    for items in by_plugin.values():
                        self.refresh(group, items)
                else:
                    self.refresh(group, data[group])

    def wipe(self):
        """Remove everything under the root (between tests sharing a server)."""
        self.store.delete_tree(self.root)
        if self.store.kind == "etcd":
            self.store.delete_tree(self.root + "/")

    # -------------------------------------------------------------- reading back
    def group_of(self, path):
        rest = path[len(self.root) + 1:] if path.startswith(self.root + "/") else None
        if rest is None or "/" not in rest:
            return None
        return GROUP_OF_DIR.get(rest.split("/", 1)[0])

    def nodes(self, group=None):
        """{path: text} of item nodes (with data) now in the store, of one group or all."""
        out = {}
        for path, value in self.store.read_tree(self.root).items():
            g = self.group_of(path)
            if g and (group is None or g == group):
                out[path] = value.decode("utf-8")
        return out

    def published(self, groups=KV_GROUPS):
        """{GROUP: {key: item}} read back from the store: what the agent must hold."""
        out = {g: {} for g in groups}
        for path, text in self.nodes().items():
            g = self.group_of(path)
            if g not in out:
                continue
            item = json.loads(text)
            out[g][item_key(g, item)] = item
        return out


# ---------------------------------------------------------------------- data
class RandomData:
    """Random but realistic items (the emulator's dataset shapes): numeric-string ids,
    rules that reference existing selectors, nested metaData paths. `namespace` None makes
    2.5/2.6 items (no namespaceId). The current state is kept in self.items, so a test can
    edit it and publish the same edits."""

    def __init__(self, seed=1, namespace=DEFAULT_NAMESPACE, groups=KV_GROUPS, plugins=6,
                 selectors=10, rules=20, app_auth=3, metadata=6, proxy_selectors=2,
                 discover_upstreams=2):
        self.rng = random.Random(seed)
        self.namespace = namespace
        self.gen = dataset._Gen(seed, "shenyu" if namespace else "shenyu-legacy",
                                namespace or DEFAULT_NAMESPACE)
        self.next_id = 1529402613195784000 + seed * 1000000
        self.groups = list(groups)
        self.items = {g: [] for g in KV_GROUPS}
        for _ in range(plugins):
            self.items["PLUGIN"].append(self.new_plugin())
        for _ in range(selectors):
            self.items["SELECTOR"].append(self.new_selector())
        for _ in range(rules):
            self.items["RULE"].append(self.new_rule())
        for _ in range(app_auth):
            self.items["APP_AUTH"].append(self.new_app_auth())
        for _ in range(metadata):
            self.items["META_DATA"].append(self.new_meta())
        for _ in range(proxy_selectors):
            self.items["PROXY_SELECTOR"].append(self.new_proxy_selector())
        for _ in range(discover_upstreams):
            self.items["DISCOVER_UPSTREAM"].append(self.new_discover_upstream())
        for g in KV_GROUPS:
            if g not in self.groups:
                self.items[g] = []

    def ident(self):
        self.next_id += self.rng.randint(1, 97)
        return str(self.next_id)

    def _ns(self, item):
        if self.namespace:
            item["namespaceId"] = self.namespace
        else:
            item.pop("namespaceId", None)
        return item

    # -------------------------------------------------------------- item makers
    def new_plugin(self):
        taken = {p["name"] for p in self.items["PLUGIN"]}
        every = self.gen.plugins(len(dataset.PLUGINS))
        free = [p for p in every if p["name"] not in taken]
        if free:
            item = dict(free[0])  # its id is the plugin's own small number, as in ShenYu
        else:
            n = self.rng.randint(100, 10 ** 6)
            item = dict(every[0], name="custom%d" % n, id=str(n))
        item["pluginJar"] = ""  # PluginTransfer: always present, "" without a jar
        return self._ns(item)

    def new_selector(self, plugin=None):
        plugin = plugin or self.rng.choice(self.items["PLUGIN"])
        i = self.rng.randint(0, 500)
        item = dict(self.gen.selectors(i + 1, [plugin])[i])
        item["id"] = self.ident()
        item["pluginId"], item["pluginName"] = plugin["id"], plugin["name"]
        # HTML-sensitive characters the admin escapes (= < > & ')
        item["conditionList"] = [{"paramType": "uri", "operator": "=", "paramName": "/",
                                  "paramValue": "/svc-%d?a=1&b='x'<y>" % i}] + \
            item.get("conditionList", [])[:1]
        return self._ns(item)

    def new_rule(self, selector=None):
        selector = selector or self.rng.choice(self.items["SELECTOR"])
        i = self.rng.randint(0, 500)
        item = dict(self.gen.rules(i + 1, [selector])[i])
        item["id"] = self.ident()
        item["selectorId"], item["pluginName"] = selector["id"], selector["pluginName"]
        return self._ns(item)

    def new_app_auth(self):
        item = dict(self.gen.app_auths(self.rng.randint(1, 4))[-1])
        item["appKey"] = "%032X" % self.rng.getrandbits(128)
        return self._ns(item)

    def new_meta(self):
        item = dict(self.gen.metadata(self.rng.randint(1, 12))[-1])
        item["id"] = self.ident()
        item["path"] = "/%s/%s/%s" % (self.rng.choice(dataset.SERVICES),
                                      self.rng.choice(dataset.METHODS), item["id"][-6:])
        return self._ns(item)

    def new_proxy_selector(self):
        k = self.rng.randint(1, 3)
        item = dict(self.gen.proxy_selectors(k)[-1])
        item["id"] = self.ident()
        item["name"] = "tcp-proxy-%s" % item["id"][-5:]
        return self._ns(item)

    def new_discover_upstream(self):
        k = self.rng.randint(1, 3)
        item = dict(self.gen.discover_upstreams(k)[-1])
        item["selectorId"] = self.ident()
        item["proxySelectorData"] = dict(item["proxySelectorData"], id=item["selectorId"])
        if not self.namespace:
            item["proxySelectorData"].pop("namespaceId", None)
            item["upstreamDataList"] = [{k2: v for k2, v in u.items() if k2 != "namespaceId"}
                                        for u in item["upstreamDataList"]]
        return self._ns(item)

    def new_item(self, group):
        return {"PLUGIN": self.new_plugin, "SELECTOR": self.new_selector,
                "RULE": self.new_rule, "APP_AUTH": self.new_app_auth,
                "META_DATA": self.new_meta, "PROXY_SELECTOR": self.new_proxy_selector,
                "DISCOVER_UPSTREAM": self.new_discover_upstream}[group]()

    def changed(self, group, item):
        """A copy of item with a field changed as an edit in the admin would."""
        item = json.loads(json.dumps(item))
        n = self.rng.randint(1, 10 ** 6)
        if group in ("PLUGIN", "SELECTOR", "RULE"):
            item["enabled"] = not item.get("enabled", False)
            item["sort"] = n
        elif group == "APP_AUTH":
            item["appSecret"] = "%032x" % self.rng.getrandbits(128)
        elif group == "META_DATA":
            item["methodName"] = "m%d" % n
        elif group == "PROXY_SELECTOR":
            item["forwardPort"] = 9000 + n % 1000
        elif group == "DISCOVER_UPSTREAM":
            item["upstreamDataList"][0]["weight"] = n % 100
        return item

    # -------------------------------------------------------------- random edits
    def random_edit(self, pub):
        """One admin edit, published through `pub` and applied to self.items: a create,
        update or delete of a random configured group, now and then a per-plugin REFRESH
        of selectors or rules or a PLUGIN delete. Returns a short description."""
        roll = self.rng.random()
        groups = [g for g in self.groups if g != "PLUGIN" or len(self.items["PLUGIN"]) > 2]
        group = self.rng.choice(groups)
        items = self.items[group]
        if roll < 0.05 and "SELECTOR" in self.groups and self.items["SELECTOR"]:
            g = self.rng.choice([g for g in ("SELECTOR", "RULE")
                                 if g in self.groups and self.items[g]])
            plugin = self.rng.choice(self.items[g])["pluginName"]
            keep = [it for it in self.items[g] if it["pluginName"] == plugin]
            fresh = [self.changed(g, it) if self.rng.random() < 0.5 else it for it in keep]
            fresh = [it for it in fresh if self.rng.random() < 0.8] or fresh[:1]
            pub.refresh(g, fresh)
            self.items[g] = [it for it in self.items[g] if it["pluginName"] != plugin] + fresh
            return "REFRESH %s %s (%d items: %s)" % (g, plugin, len(fresh),
                                                     ",".join(item_key(g, it) for it in fresh))
        if roll < 0.07 and "PLUGIN" in self.groups and len(self.items["PLUGIN"]) > 2:
            return self.delete_plugin(pub, self.rng.choice(self.items["PLUGIN"]))
        if roll < 0.45 or not items:
            if group == "RULE" and not self.items["SELECTOR"]:
                return "nothing"
            if group == "SELECTOR" and not self.items["PLUGIN"]:
                return "nothing"
            item = self.new_item(group)
            if group == "PLUGIN" and any(p["name"] == item["name"] for p in items):
                return "nothing"
            pub.write(group, item)
            items.append(item)
            return "CREATE %s %s at %s" % (group, item_key(group, item), pub.path(group, item))
        if roll < 0.8:
            i = self.rng.randrange(len(items))
            items[i] = self.changed(group, items[i])
            pub.write(group, items[i])
            return "UPDATE %s %s" % (group, item_key(group, items[i]))
        victim = self.rng.choice(items)
        if group == "PLUGIN":
            return self.delete_plugin(pub, victim)
        if group == "SELECTOR" and "RULE" in self.groups:
            # the admin deletes the selector's rules first (RULE/DELETE before SELECTOR)
            for r in [r for r in self.items["RULE"] if r["selectorId"] == victim["id"]]:
                pub.delete("RULE", r)
                self.items["RULE"].remove(r)
        pub.delete(group, victim)
        items.remove(victim)
        return "DELETE %s %s" % (group, item_key(group, victim))

    def delete_plugin(self, pub, victim):
        """PLUGIN DELETE: the admin removes the plugin's selectors and rules with it."""
        pub.delete("PLUGIN", victim)
        self.items["PLUGIN"].remove(victim)
        for g in ("SELECTOR", "RULE"):
            self.items[g] = [it for it in self.items[g] if it["pluginName"] != victim["name"]]
        return "DELETE PLUGIN %s (cascading to selectors and rules under selector/%s, rule/%s)" % (
            victim["name"], victim["name"], victim["name"])

    def expected(self):
        """{GROUP: {key: item}} of the configured groups, as self.items holds them (nulls
        dropped, as Gson writes them)."""
        return {g: {item_key(g, it): strip_nulls(it) for it in self.items[g]}
                for g in self.groups}
