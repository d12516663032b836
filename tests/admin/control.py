"""The control interface under /_control/: how tests drive the emulated admin.

JSON in, JSON out, on the admin's own port (so a test needs one address per admin).
Control requests never see faults, tokens or the request log. Errors answer HTTP 400
(bad request), 404 (no such item or route) or 409 (cannot apply) with {"error": "..."}.
README.md lists every route with an example.
"""
import json

import ws_messages
from faults import FaultError
from state import StateError

EVENTS = ("CREATE", "UPDATE", "REFRESH")


class ControlError(Exception):
    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def _group(body):
    group = body.get("group")
    if not isinstance(group, str):
        raise ControlError('needs "group": a group name')
    return group


def _push(body):
    """"push": false makes a change no WebSocket client hears of (a lost event)."""
    push = body.get("push", True)
    if not isinstance(push, bool):
        raise ControlError('"push" is true or false')
    return push


def _event(body, allowed=EVENTS):
    event = body.get("event")
    if event is not None and event not in allowed:
        raise ControlError('"event" is one of ' + ", ".join(allowed))
    return event


class Control:
    def __init__(self, admin):
        self.admin = admin
        self.routes = {
            ("GET", "state"): self.state,
            ("GET", "data"): self.data,
            ("GET", "faults"): self.list_faults,
            ("GET", "requests"): self.requests,
            ("POST", "upsert"): self.upsert,
            ("POST", "delete"): self.delete,
            ("POST", "replace"): self.replace,
            ("POST", "touch"): self.touch,
            ("POST", "notify"): self.notify,
            ("POST", "fault"): self.fault,
            ("POST", "clear-faults"): self.clear_faults,
            ("POST", "lag"): self.lag,
            ("POST", "reset-requests"): self.reset_requests,
            ("POST", "expire-tokens"): self.expire_tokens,
            ("POST", "hold"): self.hold,
            ("POST", "refresh"): self.refresh,
            ("POST", "ws-mode"): self.ws_mode,
            ("POST", "ws-send"): self.ws_send,
        }

    def handle(self, method, name, query, body, conn_info):
        """Returns (HTTP status, JSON document)."""
        route = self.routes.get((method, name))
        if route is None:
            known = sorted("%s /_control/%s" % r for r in self.routes)
            return 404, {"error": "no control route %s /_control/%s" % (method, name), "routes": known}
        try:
            doc = {}
            if method == "POST" and body.strip():
                doc = json.loads(body.decode("utf-8"))
                if not isinstance(doc, dict):
                    raise ControlError("the body must be a JSON object")
            return 200, route(doc, query, conn_info)
        except (ValueError, UnicodeDecodeError) as e:
            return 400, {"error": "bad JSON body: %s" % e}
        except (ControlError, StateError) as e:
            return e.status, {"error": str(e)}
        except FaultError as e:
            return 400, {"error": str(e)}

    # ------------------------------------------------------------------ reading
    def state(self, body, query, conn_info):
        a = self.admin
        counters, held = a.log.stats()
        return {"mode": a.mode, "namespace": a.namespace, "groups_known": a.store.groups,
                "hold": a.hold, "login": a.needs_login, "tls": a.tls,
                "groups": a.store.summary(), "lagging": a.store.lagging(),
                "faults": a.faults.list(), "tokens": a.tokens.count(),
                "counters": counters, "held": held, "connection": conn_info,
                "websocket": a.ws.describe()}

    def data(self, body, query, conn_info):
        group = (query.get("group") or [None])[0]
        if group is None:
            raise ControlError("needs ?group=NAME")
        self.admin.store.check_group(group)
        return self.admin.store.items(group)

    def list_faults(self, body, query, conn_info):
        return {"faults": self.admin.faults.list()}

    def requests(self, body, query, conn_info):
        kind = (query.get("kind") or [None])[0]
        try:
            since = int((query.get("since") or ["0"])[0])
        except ValueError:
            raise ControlError("since must be an integer")
        entries, last = self.admin.log.snapshot(kind, since)
        return {"requests": entries, "last": last}

    # ------------------------------------------------------------------ data changes
    @staticmethod
    def _version(group, v):
        return {"ok": True, "group": group, "md5": v.md5, "lastModifyTime": v.time,
                "count": len(v.items)}

    def upsert(self, body, query, conn_info):
        group = _group(body)
        items = body.get("items")
        if items is None:
            items = [body.get("item")] if "item" in body else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ControlError('needs "item": {...} or "items": [{...}, ...]')
        return self._version(group, self.admin.store.upsert(group, items, _push(body), _event(body)))

    def delete(self, body, query, conn_info):
        group = _group(body)
        keys = body.get("keys")
        if keys is None and "key" in body:
            keys = [body["key"]]
        if not isinstance(keys, list) or not keys:
            raise ControlError('needs "key": "..." or "keys": [...]')
        keys = [str(k) for k in keys]
        store, push = self.admin.store, _push(body)
        if body.get("cascade") and group == "SELECTOR" and "RULE" in store.groups:
            # The admin deletes a selector's rules first (RULE/DELETE, then SELECTOR/DELETE).
            with store.cond:
                store.check_group(group)
                rules = [r["id"] for r in store.current["RULE"].items
                         if isinstance(r, dict) and str(r.get("selectorId")) in keys and "id" in r]
                if rules:
                    store.delete("RULE", [str(r) for r in rules], push)
                return self._version(group, store.delete(group, keys, push))
        return self._version(group, store.delete(group, keys, push))

    def replace(self, body, query, conn_info):
        group = _group(body)
        return self._version(group, self.admin.store.replace(group, body.get("items"), _push(body),
                                                             _event(body)))

    def touch(self, body, query, conn_info):
        group = _group(body)
        return self._version(group, self.admin.store.touch(group, _push(body)))

    def notify(self, body, query, conn_info):
        group = _group(body)
        self.admin.store.notify(group, _push(body))
        return {"ok": True, "group": group}

    # ------------------------------------------------------------------ WebSocket
    def refresh(self, body, query, conn_info):
        """What the admin's sync buttons send over WebSocket; no data changes.
        {"plugin": name or id[, "group": "SELECTOR"|"RULE"]}: syncPluginData;
        {"group": G}: G/REFRESH with the whole group; {"all": true}: syncAll(REFRESH)."""
        store = self.admin.store
        group = body.get("group")
        with store.cond:
            if body.get("all"):
                plan = ws_messages.full_sync(store.current, store.groups, "REFRESH",
                                             self.admin.ws.cfg.namespaced)
            elif "plugin" in body:
                if "PLUGIN" not in store.groups:
                    raise ControlError("this admin has no PLUGIN group", 409)
                plugin = ws_messages.find_plugin(store.current["PLUGIN"].items, str(body["plugin"]))
                if plugin is None:
                    raise ControlError("no plugin named (or with id) %r" % body["plugin"], 404)
                if group not in (None, "SELECTOR", "RULE"):
                    raise ControlError('with "plugin", "group" is SELECTOR or RULE')
                plan = ws_messages.plugin_sync(store.current, store.groups, plugin, only=group)
            elif isinstance(group, str):
                store.check_group(group)
                plan = [(group, "REFRESH", list(store.current[group].items), "ns")]
            else:
                raise ControlError('needs "plugin": NAME, "group": G, or "all": true')
            sent = self.admin.ws.run_plan(plan)
        return {"ok": True, "messages": sent}

    def ws_mode(self, body, query, conn_info):
        """Change WebSocket behaviour at run time (a master change, allowOrigins, token...)."""
        cfg = self.admin.ws.cfg
        if "running_mode" in body:
            mode = str(body["running_mode"]).upper()
            if mode not in ("STANDALONE", "CLUSTER"):
                raise ControlError('"running_mode" is STANDALONE or CLUSTER')
            cfg.cluster = mode == "CLUSTER"
        if "master" in body:
            if not isinstance(body["master"], bool):
                raise ControlError('"master" is true or false')
            cfg.master = body["master"]
        if "master_url" in body:
            cfg.master_url = str(body["master_url"] or "")
        if "allow_origins" in body:
            origins = body["allow_origins"]
            cfg.allow_origins = [o for o in (origins.split(";") if isinstance(origins, str)
                                             else list(origins or [])) if o]
        if "token" in body:
            cfg.token = body["token"] or None
        for name in ("fragment_size", "max_message"):
            if name in body:
                value = body[name]
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ControlError('"%s" is an integer >= 0' % name)
                setattr(cfg, name, value)
        return dict(cfg.describe(), ok=True)

    def ws_send(self, body, query, conn_info):
        """Send a text message as is ("text") or Gson-encoded ("message") to every client or
        to one ("client": id): messages no admin sends (unknown groups, event types...)."""
        if "text" in body and isinstance(body["text"], str):
            text = body["text"]
        elif "message" in body:
            text = ws_messages.gson(body["message"])
        else:
            raise ControlError('needs "text": "..." or "message": {...}')
        client = body.get("client")
        return {"ok": True, "sessions": self.admin.ws.send_text(text, client)}

    def lag(self, body, query, conn_info):
        store = self.admin.store
        if body.get("off"):
            store.lag_off()
            return {"ok": True, "lagging": []}
        groups = body.get("groups", "all")
        if groups == "all":
            groups = store.groups
        if not isinstance(groups, list) or not groups:
            raise ControlError('needs "groups": [names] or "all" (or "off": true)')
        back = body.get("back", 1)
        if not isinstance(back, int) or isinstance(back, bool) or back < 0:
            raise ControlError('"back" is a count of versions (0: a made-up older version)')
        store.set_lag(groups, back)
        return {"ok": True, "lagging": store.lagging(), "groups": store.summary()}

    # ------------------------------------------------------------------ behaviour
    def fault(self, body, query, conn_info):
        now = body.get("endpoint") == "websocket" and body.get("on") == "now"
        f = self.admin.faults.add(body, keep=not now)
        if now:
            self.admin.ws.apply_now(f)   # every connected session, once; not kept
        return {"ok": True, "fault": f.describe()}

    def clear_faults(self, body, query, conn_info):
        self.admin.ws.unstall_all()
        return {"ok": True, "cleared": self.admin.faults.clear()}

    def reset_requests(self, body, query, conn_info):
        self.admin.log.reset()
        return {"ok": True}

    def expire_tokens(self, body, query, conn_info):
        return {"ok": True, "expired": self.admin.tokens.expire_all()}

    def hold(self, body, query, conn_info):
        seconds = body.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ControlError('needs "seconds": a number >= 0')
        self.admin.hold = float(seconds)
        return {"ok": True, "hold": self.admin.hold}
