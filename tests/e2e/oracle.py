"""A tiny divide oracle for the change tests: what ShenYu's divide plugin answers for one
request given one admin version, restricted to the conditions those tests publish
(`uri match "/p/**"` or `"/**"`, `uri startsWith`, `header =`), so the tests can name the
answers every version allows without trusting the router they are testing.

It follows ../shared/DIVIDE-SEMANTICS.md §4 (candidates, AND-count score, then sort, then
list order; continued; rules of the chosen selector; no backtracking) and §6 (only
upstreams with status 0 are offered). List order is LMDB key order, the only order the
gateway has (items are kept keyed by id here and iterated sorted).

    State: {"SELECTOR": {id: item}, "RULE": {id: item}, "DISCOVER_UPSTREAM": {sid: item}}
    outcomes(state, request, name_of) -> frozenset of ("up", selector, rule, upstream) or
                                         ("code", n)
"""
import copy

KEYS = {"SELECTOR": "id", "RULE": "id", "DISCOVER_UPSTREAM": "selectorId", "PLUGIN": "id"}


def new_state(data):
    return {g: {item[KEYS[g]]: item for item in items} for g, items in data.items()}


def apply(state, op, group, payload):
    """A copy of `state` after an admin operation (as the emulator applies it)."""
    s = copy.copy(state)
    g = dict(s.get(group, {}))
    if op == "upsert":
        for item in payload:
            g[item[KEYS[group]]] = item
    elif op == "delete":
        for key in payload:
            del g[key]
    elif op == "replace":
        g = {item[KEYS[group]]: item for item in payload}
    else:
        raise ValueError(op)
    s[group] = g
    return s


def _header(request, name):
    for n, v in request.get("headers", ()):
        if n.lower() == name.lower():
            return v
    return ""


def _judge(c, request):
    if c["paramType"] == "uri" and c["operator"] == "match":
        pattern, path = c["paramValue"].strip(), request["path"]
        if pattern == "/**":
            return True
        if pattern.endswith("/**"):
            base = pattern[:-3]
            return path == base or path.startswith(base + "/")
        return path == pattern
    if c["paramType"] == "uri" and c["operator"] == "startsWith":
        return request["path"].startswith(c["paramValue"].strip())
    if c["paramType"] == "header" and c["operator"] == "=":
        value = _header(request, c["paramName"])
        return value.strip() != "" and value == c["paramValue"].strip()
    raise ValueError("the oracle does not know %r" % (c,))


def _matches(item, conds, request):
    if item.get("matchMode", 0) == 1:
        return any(_judge(c, request) for c in conds)
    return all(_judge(c, request) for c in conds)


def _best(cands, conds_of):
    """§4 step 4: max AND condition count, then min sort, then first in list order."""
    def score(item):
        return len(conds_of(item)) if item.get("matchMode", 0) == 0 else 0
    top = max(score(i) for i in cands)
    cands = [i for i in cands if score(i) == top]
    low = min(i["sort"] for i in cands)
    return [i for i in cands if i["sort"] == low][0]


def outcomes(state, request, name_of):
    """Every answer this version allows for `request` (several: one per offered upstream)."""
    plugins = list(state.get("PLUGIN", {}).values())
    if not plugins or not plugins[0]["enabled"]:
        return frozenset([("code", -106)])
    sels = [state["SELECTOR"][k] for k in sorted(state["SELECTOR"])]
    cands = [s for s in sels if s["enabled"] and (s["type"] == 0 or (
        s["conditionList"] and _matches(s, s["conditionList"], request)))]
    if not cands:
        return frozenset([("code", -107)])
    sel = _best(cands, lambda s: s["conditionList"])
    if sel.get("continued") is False:
        rule_id = "default_rule"
    else:
        rules = [state["RULE"][k] for k in sorted(state["RULE"])
                 if state["RULE"][k]["selectorId"] == sel["id"]]
        rules.sort(key=lambda r: r["sort"])          # stable: key order among equal sorts
        if not rules:
            return frozenset([("code", -102)])
        if sel["type"] == 0:
            rule_id = rules[-1]["id"]
        else:
            ok = [r for r in rules if r["enabled"] and _matches(r, r["conditionDataList"], request)]
            if not ok:
                return frozenset([("code", -102)])
            rule_id = _best(ok, lambda r: r["conditionDataList"])["id"]
    disc = state.get("DISCOVER_UPSTREAM", {}).get(sel["id"])
    ups = [name_of(u["url"]) for u in (disc or {}).get("upstreamDataList", []) if u["status"] == 0]
    if not ups:
        return frozenset([("code", -119)])
    return frozenset(("up", sel["id"], rule_id, u) for u in ups)


def observed(answer):
    """The answer as an element of outcomes(): ("up", selector, rule, upstream) or
    ("code", n) or ("http", status) for anything else."""
    if answer.error is not None:
        return ("error", answer.error)
    if answer.upstream is not None:
        return ("up", answer.selector, answer.rule, answer.upstream)
    if answer.code is not None:
        return ("code", answer.code)
    return ("http", answer.status)
