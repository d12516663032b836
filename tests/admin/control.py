"""The control interface under /_control/: how tests drive the emulated admin.

JSON in, JSON out, on the admin's own port (so a test needs one address per admin).
Control requests never see faults, tokens or the request log. Errors answer HTTP 400
(bad request), 404 (no such item or route) or 409 (cannot apply) with {"error": "..."}.
README.md lists every route with an example.
"""
import json

from faults import FaultError
from state import StateError


class ControlError(Exception):
    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


def _group(body):
    group = body.get("group")
    if not isinstance(group, str):
        raise ControlError('needs "group": a group name')
    return group


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
                "counters": counters, "held": held, "connection": conn_info}

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
        return self._version(group, self.admin.store.upsert(group, items))

    def delete(self, body, query, conn_info):
        group = _group(body)
        keys = body.get("keys")
        if keys is None and "key" in body:
            keys = [body["key"]]
        if not isinstance(keys, list) or not keys:
            raise ControlError('needs "key": "..." or "keys": [...]')
        return self._version(group, self.admin.store.delete(group, [str(k) for k in keys]))

    def replace(self, body, query, conn_info):
        group = _group(body)
        return self._version(group, self.admin.store.replace(group, body.get("items")))

    def touch(self, body, query, conn_info):
        group = _group(body)
        return self._version(group, self.admin.store.touch(group))

    def notify(self, body, query, conn_info):
        group = _group(body)
        self.admin.store.notify(group)
        return {"ok": True, "group": group}

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
        f = self.admin.faults.add(body)
        return {"ok": True, "fault": f.describe()}

    def clear_faults(self, body, query, conn_info):
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
