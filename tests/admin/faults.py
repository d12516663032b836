"""Injected faults: the ways a real admin (or what stands between it and the agent) goes wrong.

A fault is a kind, an endpoint filter ("fetch", "listener", "login" or "any"), an optional
count of requests it affects (None: until cleared) and kind-specific parameters. For each
protocol request the emulator takes every matching `delay` fault plus the first matching
fault of another kind; each one taken uses up one of its count.

Two phases, because some faults need the normal reply and some replace it:
- BEFORE kinds (code, http, drop, malformed, changed) answer instead of the endpoint: a
  faulted listener is not held.
- AFTER kinds (truncated, wrong_type, missing_group, bad_item, duplicate_key, invalid_utf8,
  oversize, trickle) rewrite the reply the endpoint built (so a faulted listener holds as
  usual).
A rewritten fetch reply keeps each group's true md5 and lastModifyTime: the fault is in
what travels, not in the admin's data, so the agent's next listener call still sees the
true md5 and recovers once the fault is used up.

WebSocket faults (endpoint "websocket", never matched by "any") have a trigger, `on`:
"handshake" (the next upgrade requests), "message" (the next text messages a client
sends), "push" (the next data messages the admin sends to a session) or "now" (every
connected session at once, when the fault is added; it is not kept). ws_admin.py applies
them: delay, http (refuse the handshake), drop, garbage, stall.
"""
import copy
import itertools
import json
import threading

import replies
from dataset import compact, item_key

ENDPOINTS = ("login", "fetch", "listener")
WEBSOCKET = "websocket"
ALL = frozenset(ENDPOINTS)
FETCH = frozenset(["fetch"])
LISTENER = frozenset(["listener"])
WITH_WS = ALL | {WEBSOCKET}
WS_ONLY = frozenset([WEBSOCKET])

# kind -> (endpoints it can apply to, phase)
KINDS = {
    "delay": (WITH_WS, "delay"),
    "code": (ALL, "before"),
    "http": (WITH_WS, "before"),
    "drop": (WITH_WS, "before"),
    "malformed": (ALL, "before"),
    "changed": (LISTENER, "before"),
    "truncated": (ALL, "after"),
    "wrong_type": (ALL, "after"),
    "invalid_utf8": (ALL, "after"),
    "oversize": (ALL, "after"),
    "trickle": (WITH_WS, "after"),
    "missing_group": (FETCH, "after"),
    "bad_item": (FETCH, "after"),
    "duplicate_key": (FETCH, "after"),
    "garbage": (WS_ONLY, "ws"),
    "stall": (WS_ONLY, "ws"),
}

# WebSocket: kind -> (triggers it accepts, default trigger)
WS_ON = {
    "delay": (("handshake", "message", "push"), "push"),
    "http": (("handshake",), "handshake"),
    "drop": (("handshake", "message", "push", "now"), "message"),
    "garbage": (("message", "push", "now"), "push"),
    "stall": (("message", "push", "now"), "message"),
    "trickle": (("handshake",), "handshake"),
}
GARBAGE_WHAT = ("text", "frame", "utf8", "binary")
BAD_FRAMES = ("rsv", "opcode", "masked", "continuation", "control", "big_control")

MALFORMED_BODY = '{"code":200,"message":"success","data":{"PLUGIN":{"md5":"0",,"data":[}'
WRONG_TYPE_TARGETS = ("data", "code", "group", "items", "md5", "lastModifyTime")
INVALID_UTF8 = b"\xc3\x28\xff"


class FaultError(Exception):
    pass


class Fault:
    _ids = itertools.count(1)

    def __init__(self, spec):
        spec = dict(spec)
        self.kind = spec.pop("kind", None) or spec.pop("type", None)
        if self.kind not in KINDS:
            raise FaultError("unknown fault kind %r (one of %s)" % (self.kind, ", ".join(sorted(KINDS))))
        self.endpoint = spec.pop("endpoint", "any")
        if self.endpoint not in ENDPOINTS + (WEBSOCKET, "any"):
            raise FaultError("endpoint must be one of fetch, listener, login, websocket, any")
        if self.endpoint == WEBSOCKET and self.kind not in WS_ON:
            raise FaultError("kind %s does not apply to websocket (one of %s)"
                             % (self.kind, ", ".join(sorted(WS_ON))))
        if self.endpoint != WEBSOCKET and KINDS[self.kind][0] == WS_ONLY:
            raise FaultError("kind %s needs endpoint \"websocket\"" % self.kind)
        self.on = None
        if self.endpoint == WEBSOCKET:
            allowed, default = WS_ON[self.kind]
            self.on = spec.pop("on", default)
            if self.on not in allowed:
                raise FaultError("%s on websocket: \"on\" is one of %s" % (self.kind, ", ".join(allowed)))
        count = spec.pop("count", None)
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 1):
            raise FaultError("count must be a positive integer (omit it for: until cleared)")
        self.remaining = count
        self.count = count
        self.params = spec
        self.hits = 0
        self.id = next(Fault._ids)
        self._validate()

    def _num(self, name, default, lo=None, hi=None, kind=float):
        value = self.params.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FaultError("%s: %s must be a number" % (self.kind, name))
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise FaultError("%s: %s out of range" % (self.kind, name))
        return kind(value)

    def _validate(self):
        k, p = self.kind, self.params
        if k == "delay":
            self._num("seconds", 1.0, 0, 3600)
        elif k == "code":
            self._num("code", 500, kind=int)
        elif k == "http":
            self._num("status", 500, 100, 599, int)
        elif k == "drop":
            hows = ("close", "reset", "frame") if self.endpoint == WEBSOCKET else ("close", "reset")
            if p.get("how", "close") not in hows:
                raise FaultError("drop: how is one of " + ", ".join(hows))
            if p.get("how") == "frame":
                self._num("code", 1001, 1000, 4999, int)
        elif k == "changed":
            groups = p.get("groups")
            if groups is not None and (not isinstance(groups, list) or not groups
                                       or not all(isinstance(g, str) for g in groups)):
                raise FaultError("changed: groups is a non-empty list of group names")
        elif k == "garbage":
            if p.get("what", "text") not in GARBAGE_WHAT:
                raise FaultError("garbage: what is one of " + ", ".join(GARBAGE_WHAT))
            if p.get("frame", "rsv") not in BAD_FRAMES:
                raise FaultError("garbage: frame is one of " + ", ".join(BAD_FRAMES))
            if not isinstance(p.get("body", ""), str):
                raise FaultError("garbage: body is a string")
        elif k == "stall":
            if p.get("seconds") is not None:
                self._num("seconds", 0, 0, 86400)
        elif k == "truncated":
            self._num("fraction", 0.5, 0, 1)
            if p.get("mode", "body") not in ("body", "connection"):
                raise FaultError("truncated: mode is body or connection")
        elif k == "wrong_type":
            if p.get("target", "data") not in WRONG_TYPE_TARGETS:
                raise FaultError("wrong_type: target is one of " + ", ".join(WRONG_TYPE_TARGETS))
        elif k == "oversize":
            self._num("bytes", 70 * 1024 * 1024, 1, 1 << 34, int)
        elif k == "trickle":
            self._num("rate", 4, 0.01, 1 << 30)
            if not isinstance(p.get("headers", False), bool):
                raise FaultError("trickle: headers is true or false")
        elif k in ("bad_item", "duplicate_key"):
            self._num("index", 0, 0, kind=int)

    def matches(self, endpoint, on=None):
        if endpoint == WEBSOCKET:
            return self.endpoint == WEBSOCKET and self.on == on
        return endpoint in KINDS[self.kind][0] and self.endpoint in ("any", endpoint)

    def describe(self):
        d = dict(self.params, id=self.id, kind=self.kind, endpoint=self.endpoint,
                 count=self.count, remaining=self.remaining, hits=self.hits)
        if self.on is not None:
            d["on"] = self.on
        return d


class FaultSet:
    def __init__(self):
        self.lock = threading.Lock()
        self.faults = []

    def add(self, spec, keep=True):
        f = Fault(spec)
        if keep:
            with self.lock:
                self.faults.append(f)
        return f

    def clear(self):
        with self.lock:
            n = len(self.faults)
            self.faults = []
            return n

    def list(self):
        with self.lock:
            return [f.describe() for f in self.faults]

    def take(self, endpoint, on=None):
        """(delay seconds, the fault to apply or None, [descriptions of all taken])."""
        delay, chosen, taken = 0.0, None, []
        with self.lock:
            for f in list(self.faults):
                if not f.matches(endpoint, on):
                    continue
                if f.kind != "delay" and chosen is not None:
                    continue
                f.hits += 1
                if f.remaining is not None:
                    f.remaining -= 1
                    if f.remaining == 0:
                        self.faults.remove(f)
                taken.append(f.describe())
                if f.kind == "delay":
                    delay += float(f.params.get("seconds", 1.0))
                else:
                    chosen = f
        return delay, chosen, taken


def phase(fault):
    return KINDS[fault.kind][1]


def replace(fault):
    """A BEFORE fault: the reply sent instead of the endpoint's."""
    p = fault.params
    if fault.kind == "code":
        return replies.result(int(p.get("code", 500)), p.get("message", replies.BUSY), p.get("data"))
    if fault.kind == "http":
        return replies.http_error(int(p.get("status", 500)), p.get("body"))
    if fault.kind == "drop":
        r = replies.Reply()
        r.drop = p.get("how", "close")
        return r
    if fault.kind == "changed":
        groups = p.get("groups") or ["RULE"]
        return replies.result(200, "success", groups, newline=True)
    if fault.kind == "malformed":
        body = p.get("body", MALFORMED_BODY)
        return replies.Reply(body=body.encode("utf-8") if isinstance(body, str) else body)
    raise AssertionError(fault.kind)


def rewrite(fault, reply):
    """An AFTER fault: bend the reply the endpoint built. Returns False when the reply
    has nothing the fault can act on (e.g. bad_item on a fetch of empty groups)."""
    p = fault.params
    k = fault.kind
    if k == "truncated":
        n = int(len(reply.body) * float(p.get("fraction", 0.5)))
        if p.get("mode", "body") == "connection":
            reply.send_limit = n
        else:
            reply.body = reply.body[:n]
        return True
    if k == "invalid_utf8":
        for marker in (b'"name":"', b'"message":"', b'"'):
            at = reply.body.find(marker)
            if at >= 0:
                at += len(marker)
                reply.body = reply.body[:at] + INVALID_UTF8 + reply.body[at:]
                return True
        reply.body += INVALID_UTF8
        return True
    if k == "oversize":
        reply.pad_to = int(p.get("bytes", 70 * 1024 * 1024))
        reply.chunked = bool(p.get("chunked", False))
        return True
    if k == "trickle":
        reply.trickle = float(p.get("rate", 4))
        reply.trickle_head = bool(p.get("headers", False))
        return True
    if reply.fetch_parts is not None:
        return _rewrite_fetch(fault, reply)
    if k == "wrong_type" and isinstance(reply.doc, dict):
        doc = copy.deepcopy(reply.doc)
        if p.get("target", "data") == "code":
            doc["code"] = str(doc.get("code"))
        else:
            doc["data"] = _wrong(doc.get("data"))
        reply.doc = doc
        reply.body = replies.encode_doc(doc, reply.newline)
        return True
    return False


def _wrong(value):
    """A value of another JSON type than `value`."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return sorted(value)
    if isinstance(value, str):
        return {"value": value}
    return "not-an-object"


def _pick_group(reply, p, need_items=False):
    names = [g for g, _ in reply.fetch_parts]
    if "group" in p:
        return p["group"] if p["group"] in names else None
    for g, v in reply.fetch_parts:
        if not need_items or v.items:
            return g
    return None


def _rewrite_fetch(fault, reply):
    p, k = fault.params, fault.kind
    parts = reply.fetch_parts
    frags = {g: replies.config_data(v) for g, v in parts}
    order = [g for g, _ in parts]
    code_json, data = b"200", None
    if k == "missing_group":
        g = _pick_group(reply, p)
        if g is None:
            return False
        order.remove(g)
    elif k in ("bad_item", "duplicate_key"):
        g = _pick_group(reply, p, need_items=True)
        if g is None:
            return False
        v = dict(parts)[g]
        items = copy.deepcopy(v.items)
        i = min(int(p.get("index", 0)), len(items) - 1)
        if k == "bad_item":
            if not isinstance(items[i], dict):
                return False
            items[i][p.get("field", "enabled")] = p.get("value", "yes")
        else:
            dup = copy.deepcopy(items[i])
            if isinstance(dup, dict) and item_key(g, dup) is not None:
                dup["name"] = "%s (duplicate)" % dup.get("name")
            items.append(dup)
        frags[g] = replies.config_data(v, items=compact(items).encode("utf-8"))
    elif k == "wrong_type":
        target = p.get("target", "data")
        if target == "data":
            data = json.dumps(order).encode()
        elif target == "code":
            code_json = b'"200"'
        else:
            g = _pick_group(reply, p)
            if g is None:
                return False
            v = dict(parts)[g]
            if target == "group":
                frags[g] = [json.dumps("%s,%d" % (v.md5, v.time)).encode()]
            elif target == "items":
                obj = {str(i): it for i, it in enumerate(v.items)}
                frags[g] = replies.config_data(v, items=compact(obj).encode("utf-8"))
            elif target == "md5":
                frags[g] = replies.config_data(v, md5=12345)
            else:
                frags[g] = replies.config_data(v, time_ms="2024-05-28 10:00:00")
    else:
        return False
    reply.set_pieces(replies.fetch_body([(g, frags[g]) for g in order], code_json, data))
    return True
