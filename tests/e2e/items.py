"""Builders of divide items (PLUGIN, SELECTOR, RULE, DISCOVER_UPSTREAM) shaped as ShenYu's
admin sends them, for the end-to-end tests to publish through the emulator.

Field names and types follow ShenYu's DTOs (PluginData, SelectorData, RuleData,
ConditionData, DiscoverySyncData, DiscoveryUpstreamData, DivideUpstream, DivideRuleHandle):
handles travel as JSON *strings*, DISCOVER_UPSTREAM `status` 0 means up, a selector's
`handle` is a DivideUpstream list. `mode` is the emulator's mode: "shenyu" items carry
`namespaceId`, "shenyu-legacy" ones do not. Ids are short readable strings so a failing
assertion names the selector or rule it is about.
"""
import json

NAMESPACE = "649330b6-c2d7-4edc-be8e-8a54df9eb385"
DIVIDE_PLUGIN_ID = "5"


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _ns(item, mode):
    if mode == "shenyu":
        item["namespaceId"] = NAMESPACE
    return item


def cond(param_type, operator, value, name=None):
    """A ConditionData; uri-like types carry "/" as paramName, as the admin's UI sends."""
    if name is None:
        name = "/" if param_type in ("uri", "ip", "host", "domain", "req_method") else ""
    return {"paramType": param_type, "operator": operator, "paramName": name,
            "paramValue": value}


def plugin(enabled=True, mode="shenyu"):
    return _ns({"id": DIVIDE_PLUGIN_ID, "name": "divide", "config": None, "role": "Proxy",
                "enabled": enabled, "sort": 200, "pluginJar": None}, mode)


def divide_upstreams(urls, weight=50):
    """A selector `handle`: DivideUpstream list (JSON text). urls: ["127.0.0.1:8081", ...]
    or (url, weight, status) tuples."""
    out = []
    for u in urls:
        url, w, status = (u, weight, True) if isinstance(u, str) else u
        out.append({"upstreamHost": "localhost", "protocol": "http://", "upstreamUrl": url,
                    "weight": w, "status": status, "timestamp": 1716880000000, "warmup": 10,
                    "gray": False, "healthCheckEnabled": True})
    return compact(out)


def selector(sid, conditions=(), sort=1, match_mode=0, type_=1, enabled=True, continued=True,
             upstreams=(), mode="shenyu"):
    """A divide SelectorData. `upstreams` fills `handle` (the pre-2.6 source of upstreams)."""
    return _ns({"id": sid, "pluginId": DIVIDE_PLUGIN_ID, "pluginName": "divide", "name": sid,
                "matchMode": match_mode, "type": type_, "sort": sort, "enabled": enabled,
                "logged": False, "continued": continued,
                "handle": divide_upstreams(upstreams) if upstreams else "",
                "conditionList": list(conditions), "matchRestful": False}, mode)


def rule_handle(load_balance="roundRobin", retry=0, timeout=3000, **extra):
    h = {"loadBalance": load_balance, "retryStrategy": "current", "retry": retry,
         "timeout": timeout, "headerMaxSize": 0, "requestMaxSize": 0}
    h.update(extra)
    return compact(h)


def rule(rid, selector_id, conditions=(), sort=1, match_mode=0, enabled=True, handle=None,
         mode="shenyu"):
    return _ns({"id": rid, "name": rid, "pluginName": "divide", "selectorId": selector_id,
                "matchMode": match_mode, "sort": sort, "enabled": enabled, "loged": False,
                "handle": handle if handle is not None else rule_handle(),
                "conditionDataList": list(conditions), "matchRestful": False}, mode)


def discover(selector_id, upstreams, mode="shenyu"):
    """A DISCOVER_UPSTREAM item (DiscoverySyncData) for a divide selector. upstreams:
    urls, or (url, weight, status) tuples with status 0 = up, 1 = down."""
    data = []
    for i, u in enumerate(upstreams):
        url, weight, status = (u, 50, 0) if isinstance(u, str) else u
        data.append(_ns({"id": "%s-up-%d" % (selector_id, i), "discoveryHandlerId": "dh-" + selector_id,
                         "protocol": "http://", "url": url, "status": status, "weight": weight,
                         "props": compact({"warmup": 10, "gray": False, "healthCheckEnabled": True}),
                         "dateCreated": "2024-05-28 10:00:00",
                         "dateUpdated": "2024-05-28 10:00:00"}, mode))
    return _ns({"selectorId": selector_id, "selectorName": selector_id, "pluginName": "divide",
                "discoveryHandlerId": "dh-" + selector_id, "upstreamDataList": data}, mode)
