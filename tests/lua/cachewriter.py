"""A writer of the gwsync LMDB cache for the gateway's tests, with Python's `lmdb` (Debian's
python3-lmdb), in the layout docs/lmdb-cache.md documents: one database per group, `meta`
with `format`, `generation` and per-group entries, one write transaction per change.

With log=True it also keeps the change log in the format the `lmdb` subscriber writes
(include/gwsync/cache.h, GW_CACHE_CHANGES_DB; docs/lmdb-cache.md): database `changes`, one
entry per commit keyed by the generation as 20 zero-padded digits, {"group","put","del"} or
{"group","replace":true}; meta `changes_from` the oldest generation held; at most `keep`
entries. Long keys (over 511 bytes, or starting with "#sha256:") are stored under the derived
key "#sha256:" + sha256 hex of the key, as the subscriber stores them.

The test can also break the log on purpose (drop an entry, trim it, remove it) to prove the
reader falls back to a full read.
"""
import hashlib
import json
import os

try:
    import lmdb
except ImportError:  # pragma: no cover - depends on the machine
    lmdb = None

LONG_KEY_PREFIX = "#sha256:"
MAX_KEY = 511


def stored_key(key):
    """The key an item is stored under (the spec's long-key rule)."""
    raw = key.encode("utf-8")
    if len(raw) > MAX_KEY or key.startswith(LONG_KEY_PREFIX):
        return LONG_KEY_PREFIX + hashlib.sha256(raw).hexdigest()
    return key


def log_key(gen):
    return b"%020d" % gen


class CacheWriter:
    """CacheWriter(path).commit("RULE", {key: item}, delete=[]) is one change = one write
    transaction (items, the group's meta entry, generation + 1, and the log entry)."""

    def __init__(self, path, map_size=1 << 20, group=None, fmt=b"1", log=False, keep=1000):
        self.path = path
        self.log = log
        self.keep = keep
        os.makedirs(path, exist_ok=True)
        if group is not None:           # the README's recipe: a setgid directory of the group
            os.chown(path, -1, group)
            os.chmod(path, 0o2750)
        self.env = lmdb.open(path, max_dbs=32, map_size=map_size, mode=0o640, subdir=True)
        for name in ("data.mdb", "lock.mdb"):
            if group is not None:
                os.chown(os.path.join(path, name), -1, group)
        os.chmod(os.path.join(path, "lock.mdb"), 0o660)   # readers register in the lock file
        with self.env.begin(write=True) as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            txn.put(b"format", fmt, db=meta)
            txn.put(b"generation", b"0", db=meta)

    def _log(self, txn, meta, gen, entry):
        if not self.log:
            return
        log = self.env.open_db(b"changes", txn=txn)
        txn.put(log_key(gen), json.dumps(entry, separators=(",", ":")).encode(), db=log)
        first = txn.get(b"changes_from", db=meta)
        first = int(first) if first is not None else gen
        oldest = max(first, gen - self.keep + 1)
        for g in range(first, oldest):
            txn.delete(log_key(g), db=log)
        txn.put(b"changes_from", str(oldest).encode(), db=meta)

    def commit(self, group, items=None, delete=(), replace=False, raw_keys=False):
        """items: {key: item dict or bytes}; keys are item keys (stored by the long-key rule
        unless raw_keys). replace: the group is rewritten whole (a `replace` log entry)."""
        with self.env.begin(write=True) as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            db = self.env.open_db(group.encode(), txn=txn)
            if replace:
                txn.drop(db, delete=False)
            put, gone = [], []
            for key in delete:
                k = key if raw_keys else stored_key(key)
                txn.delete(k.encode(), db=db)
                gone.append(k)
            for key, item in (items or {}).items():
                value = item if isinstance(item, bytes) else json.dumps(item).encode()
                k = key if raw_keys else stored_key(key)
                txn.put(k.encode(), value, db=db)
                put.append(k)
            count = txn.stat(db)["entries"]
            gen = int(txn.get(b"generation", db=meta)) + 1
            txn.put(group.encode(), json.dumps({"md5": "%032x" % gen, "lastModifyTime": gen,
                                                "count": count, "stale": False}).encode(), db=meta)
            txn.put(b"generation", str(gen).encode(), db=meta)
            entry = {"group": group, "replace": True} if replace else \
                {"group": group, "put": put, "del": gone}
            self._log(txn, meta, gen, entry)
        return gen

    def set_format(self, fmt):
        with self.env.begin(write=True) as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            gen = int(txn.get(b"generation", db=meta)) + 1
            txn.put(b"format", fmt, db=meta)
            txn.put(b"generation", str(gen).encode(), db=meta)
            self._log(txn, meta, gen, {"group": "PLUGIN", "put": [], "del": []})

    # ---- breaking the log on purpose
    def drop_log_entry(self, gen):
        with self.env.begin(write=True) as txn:
            log = self.env.open_db(b"changes", txn=txn)
            txn.delete(log_key(gen), db=log)

    def trim_log(self, oldest):
        """Keep only the entries from `oldest` on (as a writer with a small change_log does)."""
        with self.env.begin(write=True) as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            log = self.env.open_db(b"changes", txn=txn)
            first = int(txn.get(b"changes_from", db=meta))
            for g in range(first, oldest):
                txn.delete(log_key(g), db=log)
            txn.put(b"changes_from", str(oldest).encode(), db=meta)

    def remove_log(self):
        """change_log: 0 (the writer empties the log and deletes changes_from)."""
        with self.env.begin(write=True) as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            log = self.env.open_db(b"changes", txn=txn)
            txn.drop(log, delete=False)
            txn.delete(b"changes_from", db=meta)
        self.log = False

    def generation(self):
        with self.env.begin() as txn:
            meta = self.env.open_db(b"meta", txn=txn)
            return int(txn.get(b"generation", db=meta))

    def grow(self, map_size):
        self.env.set_mapsize(map_size)

    def close(self):
        self.env.close()


# ---------------------------------------------------------------------- ShenYu items
def divide_plugin(enabled=True):
    return {"id": "5", "name": "divide", "enabled": enabled, "role": "Proxy", "sort": 200,
            "config": None}


def uri_cond(op, value):
    return {"paramType": "uri", "operator": op, "paramName": "/", "paramValue": value}


def selector(sid, prefix, sort=1, conditions=None, **extra):
    s = {"id": sid, "pluginId": "5", "pluginName": "divide", "name": prefix, "matchMode": 0,
         "type": 1, "sort": sort, "enabled": True, "logged": False, "continued": True,
         "handle": "", "conditionList": conditions if conditions is not None else
         [uri_cond("match", prefix + "/**")]}
    s.update(extra)
    return s


def rule(rid, sid, prefix, sort=1, strategy="current", retry=0, load_balance="roundRobin",
         timeout=3000, conditions=None, **extra):
    handle = {"loadBalance": load_balance, "retryStrategy": strategy, "retry": retry,
              "timeout": timeout}
    r = {"id": rid, "selectorId": sid, "pluginName": "divide", "name": prefix, "matchMode": 0,
         "sort": sort, "enabled": True, "loged": False, "handle": json.dumps(handle),
         "conditionDataList": conditions if conditions is not None else
         [uri_cond("match", prefix + "/**")]}
    r.update(extra)
    return r


def discover(sid, urls, weights=None):
    return {"selectorId": sid, "pluginName": "divide", "upstreamDataList": [
        {"url": url, "protocol": "http://", "status": 0,
         "weight": weights[i] if weights else 50,
         "props": json.dumps({"warmupTime": 0}),
         # created long ago: no warm-up ramp, so round robin simply alternates
         "dateCreated": "2024-05-28 10:00:00"} for i, url in enumerate(urls)]}
