"""The emulated admin's mutable state: group versions, login tokens, and the request log.

Everything here is shared by the server's threads, so every object guards itself with one
lock. A group version is immutable once made (items, their compact JSON, md5, time): the
JSON text and md5 are computed once per change, as the real admin caches them, so a fetch
of 100,000 items costs a concatenation, not a serialization.

Held listener requests wait on GroupStore's condition variable; every change appends the
group's name to a change list and wakes them all, and each waiter answers with the first
change made after it began to wait (what ShenYu's DataChangeTask does).

Every change also yields the admin's events for it, [(eventType, items)] (CREATE, UPDATE,
DELETE, REFRESH), handed to the change listeners (the WebSocket hub) under the same lock,
so pushes go out in the order the versions were made. `push=False` makes a change that
no listener hears of: a lost event.
"""
import base64
import collections
import copy
import hashlib
import hmac
import os
import threading
import time

from dataset import compact, item_key, key_field, key_fields


def now_ms():
    return int(time.time() * 1000)


class Version:
    """One immutable version of a group: what a fetch serves."""

    __slots__ = ("items", "body", "md5", "time")

    def __init__(self, items, time_ms, md5=None):
        self.items = items
        self.body = compact(items).encode("utf-8")
        self.md5 = md5 if md5 is not None else hashlib.md5(self.body).hexdigest()
        self.time = int(time_ms)

    def summary(self):
        return {"md5": self.md5, "lastModifyTime": self.time, "count": len(self.items)}


class StateError(Exception):
    """A control request that cannot be applied (unknown group, missing key...)."""

    def __init__(self, message, status=400):
        super().__init__(message)
        self.status = status


class GroupStore:
    HISTORY = 8  # versions kept per group, for lag; each holds its JSON text

    def __init__(self, groups, data, times=None):
        self.cond = threading.Condition()
        self.groups = list(groups)
        self.current = {}
        self.history = {}
        self.lagged = {}          # group -> Version served instead of the current one
        self.changes = []         # group names, one per change, in order
        self.listeners = []       # fn(group, [(eventType, items)]) called under the lock
        self.stopping = False
        start = now_ms()
        times = times or {}
        for g in self.groups:
            items = list(data.get(g, []))
            v = Version(items, times.get(g) or start)
            self.current[g] = v
            self.history[g] = collections.deque([v], maxlen=self.HISTORY)

    # ------------------------------------------------------------------ reading
    def check_group(self, group):
        if group not in self.current:
            raise StateError("unknown group %r (this admin knows %s)" % (group, ", ".join(self.groups)))

    def served(self, group):
        """The version a fetch or listener sees: the lagged one while lagging."""
        with self.cond:
            return self.lagged.get(group) or self.current[group]

    def changed_groups(self, client_md5):
        """Groups whose served md5 differs from the client's (ShenYu compares md5 only:
        when the client's time is newer it reloads and compares md5 again)."""
        with self.cond:
            return [g for g in self.groups
                    if client_md5.get(g) != (self.lagged.get(g) or self.current[g]).md5]

    def change_mark(self):
        with self.cond:
            return len(self.changes)

    def wait_change(self, mark, timeout):
        """Block until a change after `mark`, the timeout, or shutdown. Returns the
        group of the first change after `mark`, or None."""
        deadline = time.monotonic() + max(0.0, timeout)
        with self.cond:
            while len(self.changes) <= mark and not self.stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.changes[mark] if len(self.changes) > mark else None

    def stop(self):
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def summary(self):
        with self.cond:
            out = {}
            for g in self.groups:
                s = self.current[g].summary()
                if g in self.lagged:
                    s["served"] = self.lagged[g].summary()
                out[g] = s
            return out

    def items(self, group):
        with self.cond:
            v = self.current[group]
            return {"group": group, "md5": v.md5, "lastModifyTime": v.time,
                    "data": copy.deepcopy(v.items)}

    # ------------------------------------------------------------------ changing
    def add_listener(self, fn):
        with self.cond:
            self.listeners.append(fn)

    def emit(self, group, events, push=True):
        """Hand the events of a change to the listeners (lock held or not)."""
        events = [(e, list(items)) for e, items in events if e]
        if not push or not events:
            return
        with self.cond:
            for fn in self.listeners:
                fn(group, events)

    def _publish(self, group, items, events=(), push=True):
        """New version of `group` (lock held): lastModifyTime strictly increases."""
        prev = self.current[group]
        v = Version(items, max(now_ms(), prev.time + 1))
        self.current[group] = v
        self.history[group].append(v)
        self._notify(group)
        self.emit(group, events, push)
        return v

    def _notify(self, group):
        self.changes.append(group)
        self.cond.notify_all()

    def upsert(self, group, new_items, push=True, event=None):
        """Events: CREATE [new keys], then UPDATE [existing keys]; or `event` [all]."""
        self.check_group(group)
        if not new_items:
            raise StateError("upsert needs an item")
        with self.cond:
            items = list(self.current[group].items)
            index = {item_key(group, it): i for i, it in enumerate(items)}
            created, updated = [], []
            for it in new_items:
                key = item_key(group, it)
                if key is None:
                    raise StateError("group %s: item has no %r (its key)" % (group, key_field(group)))
                if key in index:
                    items[index[key]] = it
                    updated.append(it)
                else:
                    index[key] = len(items)
                    items.append(it)
                    created.append(it)
            events = [(event, new_items)] if event else [("CREATE", created), ("UPDATE", updated)]
            return self._publish(group, items, [e for e in events if e[1]], push)

    def delete(self, group, keys, push=True):
        """Event: DELETE [the whole deleted items], as the admin's publishers send them."""
        self.check_group(group)
        with self.cond:
            items = list(self.current[group].items)
            present = {item_key(group, it) for it in items}
            missing = [k for k in keys if k not in present]
            if missing:
                raise StateError("group %s has no item with key %s" % (group, ", ".join(missing)), 404)
            gone = set(keys)
            removed = [it for it in items if item_key(group, it) in gone]
            return self._publish(group, [it for it in items if item_key(group, it) not in gone],
                                 [("DELETE", removed)], push)

    def replace(self, group, items, push=True, event=None):
        """Events: DELETE [items gone], UPDATE [items changed], CREATE [items new], each
        only if non-empty; or `event` [the whole new list] (e.g. REFRESH)."""
        self.check_group(group)
        if not isinstance(items, list):
            raise StateError("replace needs \"items\": a list")
        with self.cond:
            old = {item_key(group, it): it for it in self.current[group].items}
            new_keys = {item_key(group, it) for it in items}
            if event:
                events = [(event, list(items))]
            else:
                events = [("DELETE", [it for k, it in old.items() if k not in new_keys]),
                          ("UPDATE", [it for it in items if item_key(group, it) in old
                                      and old[item_key(group, it)] != it]),
                          ("CREATE", [it for it in items if item_key(group, it) not in old])]
                events = [e for e in events if e[1]]
            return self._publish(group, list(items), events, push)

    def touch(self, group, push=True):
        """A new version whose only difference is the first item's `sort` (+1): an admin
        never publishes a new lastModifyTime without a new md5, so a touch must change
        something."""
        self.check_group(group)
        with self.cond:
            items = list(self.current[group].items)
            if not items:
                raise StateError("group %s is empty: a touch needs an item whose sort to change" % group, 409)
            first = dict(items[0])
            sort = first.get("sort")
            first["sort"] = sort + 1 if isinstance(sort, int) and not isinstance(sort, bool) else 1
            items[0] = first
            return self._publish(group, items, [("UPDATE", [first])], push)

    def notify(self, group, push=True):
        """Wake held listeners with this group although nothing changed (ShenYu does this
        when an update writes identical data: the cache is kept, the event still fires,
        over WebSocket as UPDATE [the first item, unchanged])."""
        self.check_group(group)
        with self.cond:
            self._notify(group)
            items = self.current[group].items
            self.emit(group, [("UPDATE", items[:1])], push)

    # ------------------------------------------------------------------ lagging
    def set_lag(self, groups, back=1):
        """Serve, for each group, the version `back` changes ago (or, without enough
        history, a made-up older one), frozen until lag_off(): a replica that stopped
        catching up. Held listeners are not woken (a lagging admin has no news)."""
        with self.cond:
            for g in groups:
                self.check_group(g)
            for g in groups:
                hist = list(self.history[g])
                cur = self.current[g]
                old = hist[-1 - back] if back >= 1 and len(hist) > back else None
                if old is None or old.md5 == cur.md5:
                    old = self._older(g, cur, hist)
                self.lagged[g] = old

    def _older(self, group, cur, hist):
        items = list(cur.items[:-1]) if cur.items else [self._ghost(group)]
        oldest = min(v.time for v in hist)
        return Version(items, min(oldest, cur.time) - 60_000)

    @staticmethod
    def _ghost(group):
        item = {f: "lagging-ghost-%s" % group.lower() for f in key_fields(group)}
        item.update({"name": "stale item", "enabled": True})
        return item

    def lag_off(self):
        with self.cond:
            self.lagged.clear()

    def lagging(self):
        with self.cond:
            return sorted(self.lagged)


class Tokens:
    """Login tokens: JWT-shaped (header.payload.signature, like ShenYu's), each valid for
    ttl_ms after it was issued. A new emulator process has a new secret, so tokens do not
    survive a restart, as with a real admin."""

    def __init__(self, ttl_ms):
        self.lock = threading.Lock()
        self.ttl_ms = int(ttl_ms)
        self.secret = os.urandom(32)
        self.valid = {}  # token -> expiry (epoch ms)
        self.issued = 0

    @staticmethod
    def _b64(raw):
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def issue(self, user):
        with self.lock:
            self.issued += 1
            now = now_ms()
            head = self._b64(b'{"typ":"JWT","alg":"HS256"}')
            body = self._b64(compact({"userName": user, "iat": now // 1000,
                                      "exp": (now + self.ttl_ms) // 1000,
                                      "n": self.issued}).encode())
            sig = self._b64(hmac.new(self.secret, (head + "." + body).encode(), "sha256").digest())
            token = "%s.%s.%s" % (head, body, sig)
            self.valid[token] = now + self.ttl_ms
            return token, self.ttl_ms

    def check(self, token):
        if not token:
            return False
        with self.lock:
            expiry = self.valid.get(token)
            if expiry is None:
                return False
            if now_ms() >= expiry:
                del self.valid[token]
                return False
            return True

    def expire_all(self):
        with self.lock:
            n = len(self.valid)
            self.valid.clear()
            return n

    def count(self):
        with self.lock:
            return sum(1 for e in self.valid.values() if e > now_ms())


class RequestLog:
    """What clients sent: one entry per protocol request (control requests excluded),
    updated when the reply goes out. Entries are changed only under the lock, so a
    reader's copy is always consistent."""

    def __init__(self, limit=100_000):
        self.lock = threading.Lock()
        self.entries = collections.deque(maxlen=limit)
        self.seq = 0
        self.counters = collections.Counter()
        self.held = 0

    def add(self, **fields):
        with self.lock:
            self.seq += 1
            entry = dict(seq=self.seq, t=time.time(), **fields)
            self.entries.append(entry)
            self.counters["requests"] += 1
            self.counters["requests." + fields.get("kind", "other")] += 1
            return entry

    def update(self, entry, **fields):
        with self.lock:
            entry.update(fields)

    def count(self, *names):
        with self.lock:
            for name in names:
                self.counters[name] += 1

    def hold_begin(self):
        with self.lock:
            self.held += 1

    def hold_end(self):
        with self.lock:
            self.held -= 1

    def snapshot(self, kind=None, since=0):
        with self.lock:
            out = [dict(e) for e in self.entries
                   if e["seq"] > since and (kind is None or e.get("kind") == kind)]
            return out, self.seq

    def stats(self):
        with self.lock:
            return dict(self.counters), self.held

    def reset(self):
        with self.lock:
            self.entries.clear()
            self.counters.clear()
