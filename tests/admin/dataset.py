"""A realistic, deterministic Soul / ShenYu admin dataset for the emulator, tests and benchmarks.

The items carry the field names and value shapes an admin really sends (PROTOCOL.md): plugin
`config` and selector/rule `handle` are JSON documents inside strings, conditions carry
paramType/operator/paramName/paramValue, APP_AUTH is keyed by appKey, META_DATA has rpc
details. Some fields are null, some are missing (the admin's Gson omits nulls), and some names
are not ASCII, because a client must cope with all of that.

The same seed and sizes always give the same items (ids, names, order), so a test can
regenerate and compare, and a benchmark can rebuild the same large dataset. Only the
lastModifyTime values (chosen by the emulator) depend on the clock.

Run as a program it prints a dataset as JSON ({"GROUP": [items...]}), the format
`emulator.py --dataset FILE` reads back.
"""
import argparse
import hashlib
import json
import random
import sys

DEFAULT_NAMESPACE = "649330b6-c2d7-4edc-be8e-8a54df9eb385"

CLASSIC_GROUPS = ["APP_AUTH", "PLUGIN", "RULE", "SELECTOR", "META_DATA"]
# ShenYu 2.7 ConfigGroupEnum order.
SHENYU_GROUPS = CLASSIC_GROUPS + ["PROXY_SELECTOR", "AI_PROXY_API_KEY", "DISCOVER_UPSTREAM"]

# The field that identifies an item within its group (what upsert/delete match on), or the
# fields whose values joined with "::" do: ShenYu keys an AI proxy API key by its selector
# and the key (AiProxyApiKeyCache), as gwsync does (agent/model/keys.c).
KEY_FIELDS = {
    "APP_AUTH": "appKey",
    "AI_PROXY_API_KEY": ("selectorId", "proxyApiKey"),
    "DISCOVER_UPSTREAM": "selectorId",
}

# Flavours follow the admin generations: what fields exist and how `role` is typed.
FLAVOURS = ("shenyu", "shenyu-legacy", "soul")

DEFAULT_SIZES = {
    "plugins": 12,
    "selectors": 20,
    "rules": 60,
    "app_auth": 4,
    "metadata": 8,
    "proxy_selectors": 2,
    "discover_upstreams": 2,
    "ai_keys": 2,
}

# (name, ShenYu role, Soul role, config document or None)
PLUGINS = [
    ("divide", "Proxy", 0, {"multiSelectorHandle": "1", "multiRuleHandle": "0"}),
    ("sign", "Authentication", 0, None),
    ("waf", "Authentication", 0, {"model": "black"}),
    ("rewrite", "HttpProcess", 0, None),
    ("rateLimiter", "FaultTolerance", 0,
     {"master": "mymaster", "mode": "standalone", "url": "192.168.1.1:6379",
      "password": "abc"}),
    ("dubbo", "Proxy", 0,
     {"register": "zookeeper://localhost:2181", "multiSelectorHandle": "1",
      "threadpool": "shared", "corethreads": 0, "threads": 2147483647, "queues": 0}),
    ("springCloud", "Proxy", 0, None),
    ("hystrix", "FaultTolerance", 0, None),
    ("sentinel", "FaultTolerance", 0, None),
    ("contextPath", "HttpProcess", 0, None),
    ("websocket", "Proxy", 0, {"multiSelectorHandle": "1"}),
    ("jwt", "Authentication", 0,
     {"secretKey": "key00000000000000000000000000000000", "handleType": "bearer"}),
    ("grpc", "Proxy", 0, {"multiSelectorHandle": "1", "threadpool": "cached"}),
    ("resilience4j", "FaultTolerance", 0, None),
    ("redirect", "HttpProcess", 0, None),
    ("request", "HttpProcess", 0, None),
    ("modifyResponse", "HttpProcess", 0, None),
    ("paramMapping", "HttpProcess", 0, {"ruleHandlePageType": "custom"}),
    ("motan", "Proxy", 0, {"registerProtocol": "zk", "registerAddress": "127.0.0.1:2181"}),
    ("sofa", "Proxy", 0,
     {"protocol": "zookeeper", "register": "127.0.0.1:2181", "threadpool": "shared"}),
    ("tars", "Proxy", 0, {"multiSelectorHandle": "1", "multiRuleHandle": "0"}),
    ("cryptorRequest", "Cryptor", 1, None),
    ("cryptorResponse", "Cryptor", 1, None),
    ("generalContext", "Common", 0, None),
    ("cache", "Cache", 0, {"cacheType": "memory"}),
    ("mock", "Mock", 0, None),
    ("keyAuth", "Authentication", 0, None),
    ("basicAuth", "Authentication", 0, {"defaultHandleJson": "{\"authorization\":\"test:test123\"}"}),
    ("oauth2", "Authentication", 0, None),
    ("loggingConsole", "Logging", 0, None),
    ("loggingKafka", "Logging", 0,
     {"topic": "shenyu-access-logging", "namesrvAddr": "localhost:9092", "sampleRate": "1"}),
    ("loggingElasticSearch", "Logging", 0, {"host": "localhost", "port": "9200"}),
    ("mqtt", "Proxy", 0, {"port": 9500, "bossGroupThreadCount": 1, "maxPayloadSize": 65536}),
    ("brpc", "Proxy", 0, {"address": "127.0.0.1", "port": "8005"}),
    ("casdoor", "Authentication", 0,
     {"endpoint": "http://localhost:8000", "client_id": "6e3a84154e73d1fb156a",
      "certificate": "-----BEGIN CERTIFICATE-----\nMIIE+TCCAuGgAwIBAgIDAeJAMA0G\n-----END CERTIFICATE-----"}),
    ("tcp", "Proxy", 0, None),
    ("aiProxy", "Ai", 0, {"provider": "OpenAI", "baseUrl": "https://api.openai.com", "model": "gpt-4o-mini"}),
    ("uri", "HttpProcess", 0, None),
    ("loggingRocketMQ", "Logging", 0, {"topic": "shenyu-access-logging", "namesrvAddr": "localhost:9876"}),
    ("netty-httpclient", "Proxy", 0, None),
]

# Plugins that own selectors (routing plugins first: most selectors belong to divide).
SELECTOR_PLUGINS = ["divide", "divide", "divide", "springCloud", "dubbo", "rateLimiter",
                    "rewrite", "waf", "contextPath", "websocket", "grpc", "sentinel"]

SERVICES = ["order", "user", "payment", "inventory", "catalog", "shipping", "search", "review",
            "notification", "billing", "account", "cart", "recommendation", "coupon", "gateway"]
METHODS = ["findById", "findAll", "save", "update", "delete", "query", "batchSave", "health",
           "findByIdsAndName", "listPage", "insert", "count"]
# Names a client must keep byte-exact: CJK, accents, Cyrillic, an emoji, quotes and a backslash.
UNICODE_NAMES = ["限流-規則", "café", "Größe-Prüfung", "кэш-правило", "ルート🚀", "naïve \"quoted\" \\path"]
RPC_TYPES = ["http", "dubbo", "springCloud", "sofa", "grpc", "motan", "tars", "websocket"]
CONDITION_TEMPLATES = [
    ("uri", "match", "/", "/{svc}/**"),
    ("uri", "pathPattern", "/", "/{svc}/{method}/**"),
    ("header", "=", "X-Tenant", "tenant-{n}"),
    ("query", "contains", "version", "v{n}"),
    ("host", "=", "host", "{svc}.example.com"),
    ("ip", "=", "ip", "10.0.{n}.1"),
    ("req_method", "=", "reqMethod", "GET"),
    ("cookie", "startsWith", "session", "sess-"),
    ("uri", "regex", "/", "^/{svc}/[0-9]+$"),
    ("domain", "=", "domain", "{svc}.internal"),
]


def compact(obj):
    """The admin's own compact JSON text (UTF-8, not ASCII-escaped)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def md5_of(items):
    """md5 hex of the compact JSON of an item list; md5_of([]) is d751713988987e9331980363e24189ce."""
    return hashlib.md5(compact(items).encode("utf-8")).hexdigest()


def key_fields(group):
    """The key's fields, as a tuple (one field for most groups)."""
    f = KEY_FIELDS.get(group, "id")
    return f if isinstance(f, tuple) else (f,)


def key_field(group):
    """The key's field names as one text, e.g. "id" or "selectorId::proxyApiKey"."""
    return "::".join(key_fields(group))


def item_key(group, item):
    """The key of an item in its group, or None if the item has none."""
    if not isinstance(item, dict):
        return None
    fields = key_fields(group)
    if len(fields) > 1:
        values = [item.get(f) for f in fields]
        return None if any(v is None for v in values) else "::".join(str(v) for v in values)
    value = item.get(fields[0])
    if value is None and group == "DISCOVER_UPSTREAM":
        value = (item.get("proxySelectorData") or {}).get("id")
    return None if value is None else str(value)


def groups_for(flavour):
    return list(SHENYU_GROUPS if flavour == "shenyu" else CLASSIC_GROUPS)


class _Gen:
    """One generation run: a seeded RNG plus the flavour's field rules."""

    def __init__(self, seed, flavour, namespace):
        if flavour not in FLAVOURS:
            raise ValueError("unknown flavour %r (one of %s)" % (flavour, ", ".join(FLAVOURS)))
        self.rng = random.Random(seed)
        self.flavour = flavour
        self.namespace = namespace
        self.seed = seed

    def ident(self, space, i):
        # Snowflake-looking ids as ShenYu makes them, unique per group "space".
        return str(1529402613195784000 + space * 10_000_000 + i * 7 + (self.seed % 7))

    def base(self, item):
        """Add the fields that depend on the admin generation."""
        if self.flavour == "shenyu":
            item["namespaceId"] = self.namespace
        return item

    def name_with_unicode(self, plain, i, every):
        if i % every == every - 1:
            return "%s-%s-%d" % (UNICODE_NAMES[(i // every) % len(UNICODE_NAMES)], plain, i)
        return plain

    def conditions(self, n, svc, method, i):
        out = []
        for k in range(n):
            ptype, op, pname, pvalue = CONDITION_TEMPLATES[(i + k * 3) % len(CONDITION_TEMPLATES)]
            out.append({"paramType": ptype, "operator": op, "paramName": pname,
                        "paramValue": pvalue.format(svc=svc, method=method, n=(i % 250) + 1)})
        return out

    def upstreams(self, svc, i):
        count = 1 + i % 3
        return [{"upstreamHost": "localhost", "protocol": "http://",
                 "upstreamUrl": "10.%d.%d.%d:%d" % (i % 4, (i // 4) % 250, 10 + k, 8080 + k),
                 "weight": 50, "status": True, "timestamp": 1716880000000 + i * 1000,
                 "warmup": 10, "gray": False} for k in range(count)]

    def plugins(self, n):
        out = []
        for i in range(n):
            if i < len(PLUGINS):
                name, role, soul_role, config = PLUGINS[i]
            else:
                name, role, soul_role, config = ("custom-plugin-%d" % i, "Common", 0,
                                                 {"endpoint": "http://127.0.0.1:%d" % (9000 + i)})
            item = {"id": str(i + 1), "name": name,
                    "config": None if config is None else compact(config),
                    "role": soul_role if self.flavour == "soul" else role,
                    "enabled": name in ("divide", "springCloud", "dubbo", "rateLimiter", "waf",
                                        "contextPath") or i % 5 == 0,
                    "sort": (i + 1) * 10}
            if self.flavour != "soul":
                item["pluginJar"] = None
            out.append(self.base(item))
        return out

    def selector_plugin(self, i, plugins):
        names = [p["name"] for p in plugins]
        for attempt in range(len(SELECTOR_PLUGINS)):
            name = SELECTOR_PLUGINS[(i + attempt) % len(SELECTOR_PLUGINS)]
            if name in names:
                return plugins[names.index(name)]
        return plugins[i % len(plugins)] if plugins else None

    def selector_handle(self, plugin_name, svc, i):
        if plugin_name in ("divide", "websocket", "grpc", "dubbo", "tars"):
            return compact(self.upstreams(svc, i))
        if plugin_name == "springCloud":
            return compact({"serviceId": "%s-service" % svc, "gray": i % 4 == 0,
                            "divideUpstreams": self.upstreams(svc, i)})
        return None if i % 2 else ""

    def selectors(self, n, plugins):
        out = []
        for i in range(n):
            plugin = self.selector_plugin(i, plugins)
            pname = plugin["name"] if plugin else "divide"
            svc = SERVICES[i % len(SERVICES)]
            item = {"id": self.ident(2, i), "pluginId": plugin["id"] if plugin else "5",
                    "pluginName": pname,
                    "name": self.name_with_unicode("/%s-%d" % (svc, i), i, 7),
                    "matchMode": i % 2, "type": 1, "sort": i + 1,
                    "enabled": i % 13 != 12, "logged": i % 3 == 0, "continued": True,
                    "handle": self.selector_handle(pname, svc, i),
                    "conditionList": self.conditions(1 + i % 3, svc, "any", i)}
            if self.flavour != "soul":
                item["matchRestful"] = False
                # A newer field: null on some items, missing (Gson omits nulls) on others.
                if i % 4 == 0:
                    item["beforeConditionList"] = None
                elif i % 4 == 1:
                    item["beforeConditionList"] = []
            out.append(self.base(item))
        return out

    def rule_handle(self, plugin_name, i):
        handles = {
            "divide": {"loadBalance": ["random", "roundRobin", "hash"][i % 3],
                       "retryStrategy": "current", "retry": 3, "timeout": 3000,
                       "headerMaxSize": 10240, "requestMaxSize": 102400},
            "springCloud": {"path": "/", "timeout": 3000, "loadBalance": "roundRobin"},
            "rateLimiter": {"algorithmName": "tokenBucket", "replenishRate": 10 + i % 90,
                            "burstCapacity": 100, "keyResolverName": "WHOLE_KEY_RESOLVER"},
            "rewrite": {"regex": "/%s/(?<seg>.*)" % SERVICES[i % len(SERVICES)],
                        "replace": "/${seg}", "percentage": 100},
            "waf": {"permission": "reject", "statusCode": "503"},
            "contextPath": {"contextPath": "/" + SERVICES[i % len(SERVICES)], "addPrefix": ""},
            "sentinel": {"flowRuleGrade": 1, "flowRuleCount": 50, "flowRuleEnable": 1,
                         "flowRuleControlBehavior": 0, "degradeRuleEnable": 1,
                         "degradeRuleGrade": 0, "degradeRuleCount": 1,
                         "fallbackUri": "/fallback/sentinel"},
            "dubbo": {"timeout": 3000, "retries": 2, "loadbalance": "random"},
        }
        handle = handles.get(plugin_name)
        return None if handle is None else compact(handle)

    def rules(self, n, selectors):
        out = []
        for i in range(n):
            sel = selectors[i % len(selectors)] if selectors else None
            svc = SERVICES[(i % len(selectors)) % len(SERVICES)] if selectors else "order"
            method = METHODS[i % len(METHODS)]
            pname = sel["pluginName"] if sel else "divide"
            item = {"id": self.ident(3, i), "name": self.name_with_unicode(
                        "/%s/%s/%d" % (svc, method, i), i, 11),
                    "pluginName": pname, "selectorId": sel["id"] if sel else self.ident(2, 0),
                    "matchMode": i % 2, "sort": i + 1, "enabled": i % 17 != 16,
                    "loged": i % 2 == 0, "handle": self.rule_handle(pname, i),
                    "conditionDataList": self.conditions(1 + i % 2, svc, method, i)}
            if self.flavour != "soul":
                item["matchRestful"] = i % 5 == 0
                if i % 3 == 0:
                    item["beforeConditionDataList"] = []
            out.append(self.base(item))
        return out

    def app_auths(self, n):
        out = []
        for i in range(n):
            app = "%s-app" % SERVICES[i % len(SERVICES)]
            if i % 4 == 3:
                app = "%s-%s" % (UNICODE_NAMES[i % len(UNICODE_NAMES)], app)
            item = {"appKey": "%032X" % self.rng.getrandbits(128),
                    "appSecret": "%032x" % self.rng.getrandbits(128),
                    "enabled": i % 5 != 4, "open": i % 2 == 0,
                    "paramDataList": [{"appName": app,
                                       "appParam": compact({"tenant": "t%d" % i, "level": i % 3})}],
                    "pathDataList": [{"appName": app, "path": "/%s/**" % SERVICES[i % len(SERVICES)],
                                      "enabled": True},
                                     {"appName": app, "path": "/%s/admin/**" % SERVICES[i % len(SERVICES)],
                                      "enabled": False}]}
            if i % 3 == 2:
                item["paramDataList"] = None
            out.append(self.base(item))
        return out

    def metadata(self, n):
        out = []
        for i in range(n):
            svc = SERVICES[i % len(SERVICES)]
            method = METHODS[i % len(METHODS)]
            rpc = RPC_TYPES[i % len(RPC_TYPES)]
            ext = None
            if rpc == "dubbo":
                ext = compact({"group": "", "version": "", "loadbalance": "random", "retries": 2,
                               "timeout": 10000, "url": "", "sent": False, "cluster": "failover",
                               "protocol": "dubbo"})
            elif rpc == "grpc":
                ext = compact({"timeout": 5000, "methodType": "UNARY"})
            item = {"id": self.ident(5, i), "appName": "%s-service" % svc,
                    "contextPath": "/" + svc, "path": "/%s/%s/%d" % (svc, method, i),
                    "rpcType": rpc,
                    "serviceName": "org.apache.shenyu.examples.%s.api.service.%sService" % (
                        rpc.lower(), svc.capitalize()),
                    "methodName": method,
                    "parameterTypes": "java.lang.String" if i % 3 else "java.lang.String,java.lang.Integer",
                    "rpcExt": ext, "enabled": i % 9 != 8}
            out.append(self.base(item))
        return out

    def proxy_selector(self, i):
        return {"id": self.ident(6, i), "name": "tcp-proxy-%d" % i, "pluginName": "tcp",
                "type": "tcp", "forwardPort": 9500 + i,
                "props": {"maxIdleTime": "600000", "maxLifeTime": "3600000", "rule": "round-robin"}}

    def proxy_selectors(self, n):
        out = []
        for i in range(n):
            item = self.proxy_selector(i)
            item["discoveryUpstreamList"] = [
                {"protocol": "tcp", "url": "10.1.%d.%d:%d" % (i, k, 8100 + k), "status": 0,
                 "weight": 10, "props": compact({"warmupTime": 10})} for k in range(2)]
            out.append(self.base(item))
        return out

    def discover_upstreams(self, n):
        out = []
        for i in range(n):
            proxy = self.base(self.proxy_selector(i))
            upstreams = [self.base({"id": self.ident(7, i * 10 + k),
                                    "discoveryHandlerId": self.ident(8, i), "protocol": "tcp",
                                    "url": "10.1.%d.%d:%d" % (i, k, 8100 + k), "status": 0,
                                    "weight": 10, "props": compact({"warmupTime": 10}),
                                    "dateCreated": "2024-05-28 10:00:00",
                                    "dateUpdated": "2024-05-28 10:00:00"}) for k in range(2)]
            out.append(self.base({"selectorId": proxy["id"], "selectorName": proxy["name"],
                                  "pluginName": "tcp", "proxySelectorData": proxy,
                                  "upstreamDataList": upstreams}))
        return out

    def ai_keys(self, n):
        # two API keys per AI proxy selector, as ShenYu deployments commonly have
        return [self.base({"selectorId": "ai-selector-%d" % (i // 2),
                           "proxyApiKey": "sk-shenyu-%016x" % self.rng.getrandbits(64),
                           "realApiKey": "sk-real-%032x" % self.rng.getrandbits(128),
                           "description": "key for %s" % SERVICES[i % len(SERVICES)]
                           if i % 2 == 0 else None,
                           "enabled": True}) for i in range(n)]


def generate(seed=1, flavour="shenyu", namespace=DEFAULT_NAMESPACE, groups=None, **sizes):
    """Return {"GROUP": [items]} for every group of the flavour (or of `groups`).

    sizes: plugins, selectors, rules, app_auth, metadata, proxy_selectors,
    discover_upstreams, ai_keys (defaults in DEFAULT_SIZES)."""
    unknown = set(sizes) - set(DEFAULT_SIZES)
    if unknown:
        raise ValueError("unknown dataset size(s): %s" % ", ".join(sorted(unknown)))
    size = dict(DEFAULT_SIZES, **{k: v for k, v in sizes.items() if v is not None})
    gen = _Gen(seed, flavour, namespace)
    plugins = gen.plugins(size["plugins"])
    selectors = gen.selectors(size["selectors"], plugins)
    data = {
        "PLUGIN": plugins,
        "SELECTOR": selectors,
        "RULE": gen.rules(size["rules"], selectors),
        "APP_AUTH": gen.app_auths(size["app_auth"]),
        "META_DATA": gen.metadata(size["metadata"]),
        "PROXY_SELECTOR": gen.proxy_selectors(size["proxy_selectors"]),
        "DISCOVER_UPSTREAM": gen.discover_upstreams(size["discover_upstreams"]),
        "AI_PROXY_API_KEY": gen.ai_keys(size["ai_keys"]),
    }
    wanted = groups if groups is not None else groups_for(flavour)
    return {g: data.get(g, []) for g in wanted}


def load(path):
    """Read a dataset file. Accepts {"GROUP": [items]}, {"GROUP": {"data": [...],
    "lastModifyTime": N}}, or a whole fetch reply ({"code":200,"data":{...}}).
    Returns ({"GROUP": [items]}, {"GROUP": lastModifyTime or None})."""
    with open(path, "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    if isinstance(doc, dict) and "code" in doc and isinstance(doc.get("data"), dict):
        doc = doc["data"]
    if not isinstance(doc, dict):
        raise ValueError("%s: a dataset is a JSON object keyed by group name" % path)
    items, times = {}, {}
    for group, value in doc.items():
        if isinstance(value, dict):
            times[group] = value.get("lastModifyTime")
            value = value.get("data", [])
        if not isinstance(value, list):
            raise ValueError("%s: group %s: expected a list of items" % (path, group))
        items[group] = value
    return items, times


def main(argv=None):
    ap = argparse.ArgumentParser(description="Print a generated admin dataset as JSON.")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--flavour", "--mode", dest="flavour", default="shenyu", choices=FLAVOURS)
    ap.add_argument("--namespace", default=DEFAULT_NAMESPACE)
    for name, default in DEFAULT_SIZES.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    args = ap.parse_args(argv)
    sizes = {k: getattr(args, k) for k in DEFAULT_SIZES}
    data = generate(args.seed, args.flavour, args.namespace, **sizes)
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
