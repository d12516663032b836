"""What a ShenYu admin sends over WebSocket, and in which order (PROTOCOL-PUSH.md section 1).

- Every data push is WebsocketData serialized with Gson (0.4, 1.3): compact,
  {"groupType":G,"eventType":E,"data":[items]}, null fields omitted, the HTML-sensitive
  characters < > & = ' (and U+2028/9) written as \\u escapes, other non-ASCII as is.
- The RUNNING_MODE reply is a Jackson-written HashMap (1.2): no HTML escaping, keys in Java
  HashMap iteration order, which for these four keys is masterUrl, isMaster, runningMode,
  eventType.
- A plan is a list of (group, eventType, items, scope) steps; scope "self" goes to the
  session that sent MYSELF only, "ns" to every session of the namespace of the first item
  (2.7+) or to every session (older admins). ws_admin.py routes them.
"""
import json

from dataset import DEFAULT_NAMESPACE, compact, item_key

_GSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                 ord("="): "\\u003d", ord("'"): "\\u0027",
                 0x2028: "\\u2028", 0x2029: "\\u2029"}

# The fields an APP_AUTH DELETE carries (AppAuthServiceImpl.delete: no namespaceId, no lists).
APP_AUTH_DELETE_FIELDS = ("appKey", "appSecret", "open", "enabled")
AI_PROXY_PLUGIN = "aiProxy"   # PluginEnum.AI_PROXY: its sync also refreshes the API keys

GARBAGE_TEXT = '{"groupType":"RULE","eventType":"UPDATE","data":[{"id":"1",'


def strip_nulls(value):
    """Gson without serializeNulls(): object fields whose value is null are left out."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value


def gson(value):
    """The text GsonUtils.getInstance().toJson(value) writes. Structural JSON characters are
    never among the escaped ones, so escaping the whole text only touches strings."""
    return compact(strip_nulls(value)).translate(_GSON_ESCAPES)


def envelope(group, event, items):
    return gson({"groupType": group, "eventType": event, "data": items})


def running_mode(is_master, cluster, master_url):
    """WebsocketCollector's answer to RUNNING_MODE. master_url is the master's http(s) URL
    ("" when standalone); ShenYu turns http into ws and appends /websocket."""
    url = (master_url or "").replace("http", "ws").replace("https", "ws") + "/websocket"
    doc = {"masterUrl": url, "isMaster": bool(is_master),
           "runningMode": "CLUSTER" if cluster else "STANDALONE", "eventType": "RUNNING_MODE"}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def event_items(group, event, items):
    """Items as the admin's publisher builds them for this event (0.6)."""
    if group == "APP_AUTH" and event == "DELETE":
        return [{k: it.get(k) for k in APP_AUTH_DELETE_FIELDS if k in it} for it in items]
    return items


# ---------------------------------------------------------------------- plans
def _discovery(versions, groups, scope):
    """DiscoveryServiceImpl.syncData: per proxy selector PROXY_SELECTOR/CREATE [it] then
    DISCOVER_UPSTREAM/UPDATE [its upstreams]; then the upstreams of plain selectors."""
    steps = []
    ups = list(versions["DISCOVER_UPSTREAM"].items) if "DISCOVER_UPSTREAM" in groups else []
    used = set()
    if "PROXY_SELECTOR" in groups:
        for ps in versions["PROXY_SELECTOR"].items:
            steps.append(("PROXY_SELECTOR", "CREATE", [ps], scope))
            for i, u in enumerate(ups):
                if i not in used and isinstance(ps, dict) and item_key("DISCOVER_UPSTREAM", u) == str(ps.get("id")):
                    used.add(i)
                    steps.append(("DISCOVER_UPSTREAM", "UPDATE", [u], scope))
    for i, u in enumerate(ups):
        if i not in used:
            steps.append(("DISCOVER_UPSTREAM", "UPDATE", [u], scope))
    return steps


def full_sync(versions, groups, event, namespaced):
    """SyncDataServiceImpl.syncAll / syncAllByNamespaceId(event) (1.4): APP_AUTH REFRESH,
    PLUGIN/SELECTOR/RULE as `event` (MYSELF: to the requester only), META_DATA REFRESH,
    discovery, AI_PROXY_API_KEY REFRESH. APP_AUTH and META_DATA are skipped when empty in
    every version; PLUGIN, SELECTOR and RULE are sent even empty before 2.7 (`namespaced`
    False). `versions` is {group: state.Version}; groups the admin does not know are skipped."""
    own = "self" if event == "MYSELF" else "ns"
    steps = []

    def add(group, ev, scope, always=False):
        if group in groups:
            items = list(versions[group].items)
            if items or always:
                steps.append((group, ev, items, scope))

    add("APP_AUTH", "REFRESH", "ns")
    for g in ("PLUGIN", "SELECTOR", "RULE"):
        add(g, event, own, always=not namespaced)
    add("META_DATA", "REFRESH", "ns")
    steps += _discovery(versions, groups, "ns")
    add("AI_PROXY_API_KEY", "REFRESH", "ns")
    return steps


def find_plugin(plugins, name_or_id):
    for p in plugins:
        if isinstance(p, dict) and name_or_id in (p.get("name"), str(p.get("id"))):
            return p
    return None


def plugin_selectors(selectors, plugin):
    pid, pname = str(plugin.get("id")), plugin.get("name")
    out = []
    for s in selectors:
        if not isinstance(s, dict):
            continue
        if "pluginId" in s and s.get("pluginId") is not None:
            if str(s["pluginId"]) == pid:
                out.append(s)
        elif s.get("pluginName") == pname:
            out.append(s)
    return out


def plugin_sync(versions, groups, plugin, only=None):
    """SyncDataServiceImpl.syncPluginData (0.6): PLUGIN/UPDATE [the plugin]; if it has
    selectors, SELECTOR/REFRESH [its selectors], DISCOVER_UPSTREAM/UPDATE for each of them
    that has upstreams, RULE/REFRESH [the rules of those selectors]; for aiProxy also
    AI_PROXY_API_KEY/REFRESH. `only` ("SELECTOR" or "RULE") keeps that one step."""
    steps = [("PLUGIN", "UPDATE", [plugin], "ns")]
    sels = plugin_selectors(versions["SELECTOR"].items, plugin) if "SELECTOR" in groups else []
    if sels:
        steps.append(("SELECTOR", "REFRESH", sels, "ns"))
        ids = {str(s.get("id")) for s in sels}
        if "DISCOVER_UPSTREAM" in groups:
            for u in versions["DISCOVER_UPSTREAM"].items:
                if item_key("DISCOVER_UPSTREAM", u) in ids:
                    steps.append(("DISCOVER_UPSTREAM", "UPDATE", [u], "ns"))
        if "RULE" in groups:
            rules = [r for r in versions["RULE"].items
                     if isinstance(r, dict) and str(r.get("selectorId")) in ids]
            steps.append(("RULE", "REFRESH", rules, "ns"))
    if plugin.get("name") == AI_PROXY_PLUGIN and "AI_PROXY_API_KEY" in groups:
        keys = list(versions["AI_PROXY_API_KEY"].items)
        if keys:
            steps.append(("AI_PROXY_API_KEY", "REFRESH", keys, "ns"))
    if only:
        steps = [s for s in steps if s[0] == only]
    return steps


def namespace_of(items):
    """The namespace a push goes to: the first item's namespaceId, else the default (0.3)."""
    first = items[0] if items else None
    ns = first.get("namespaceId") if isinstance(first, dict) else None
    # StringUtils.defaultString: only null becomes the default; "" reaches no session.
    return ns if isinstance(ns, str) else DEFAULT_NAMESPACE
