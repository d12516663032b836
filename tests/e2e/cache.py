"""A read-only view of the `lmdb` subscriber's environment for tests (docs/lmdb-cache.md).

Tests use it to know when a change is "in the cache" (the group's meta md5 equals the
md5 the admin published) before they judge what nginx answered, and to read key sets.

LMDB forbids opening one environment twice in one process, so a test process keeps one
Cache per path. Python's `lmdb` binding comes from Debian's python3-lmdb; when the Python
running the tests is another build of the same minor version (a pyenv python on a
developer machine), its dist-packages directory is appended to sys.path as a fallback.
"""
import json
import os
import sys
import time
import unittest

lmdb = None
try:
    import lmdb  # noqa: F811
except ImportError:
    _debian = "/usr/lib/python3/dist-packages"
    if sys.version_info[:2] == (3, 11) and os.path.isdir(os.path.join(_debian, "lmdb")):
        sys.path.append(_debian)
        try:
            import lmdb  # noqa: F811
        except ImportError:
            lmdb = None


def require_lmdb():
    if lmdb is None:
        raise unittest.SkipTest("Python's lmdb binding is not installed (Debian: python3-lmdb)")


class Cache:
    """Cache(path): open lazily (the environment appears with gwsyncd's first commit)."""

    def __init__(self, path):
        require_lmdb()
        self.path = path
        self.env = None
        self._dbs = {}

    def _open(self):
        if self.env is None:
            if not os.path.exists(os.path.join(self.path, "data.mdb")):
                return None
            self.env = lmdb.open(self.path, readonly=True, lock=True, max_dbs=32,
                                 create=False, subdir=True)
        return self.env

    def _begin(self):
        env = self._open()
        if env is None:
            return None
        for _ in range(3):
            try:
                return env.begin(buffers=False)
            except lmdb.MapResizedError:
                # The writer grew the map: adopt the new size (docs/lmdb-cache.md, step 4).
                env.set_mapsize(0)
        return env.begin(buffers=False)

    def _db(self, name):
        db = self._dbs.get(name)
        if db is None:
            try:
                # its own read transaction, committed by the binding: a handle opened in a
                # transaction that is aborted would be closed with it
                db = self.env.open_db(name.encode(), create=False)
            except lmdb.NotFoundError:
                return None
            self._dbs[name] = db
        return db

    def read(self, names, fn):
        """fn(txn, {name: handle or None}) inside one read transaction; None before the
        environment exists. Handles are opened first: one opened after a transaction began
        is not valid in it. A handle is None for a group gwsync has not delivered yet."""
        if self._open() is None:
            return None
        dbs = {name: self._db(name) for name in names}
        txn = self._begin()
        try:
            return fn(txn, dbs)
        finally:
            txn.abort()

    def generation(self):
        def get(txn, dbs):
            raw = txn.get(b"generation", db=dbs["meta"]) if dbs["meta"] is not None else None
            return int(raw) if raw is not None else None
        return self.read(["meta"], get)

    def meta(self, group):
        def get(txn, dbs):
            raw = txn.get(group.encode(), db=dbs["meta"]) if dbs["meta"] is not None else None
            return json.loads(raw) if raw is not None else None
        return self.read(["meta"], get)

    def items(self, group):
        """{key: raw value bytes} of a group, or None if it has no database yet."""
        def get(txn, dbs):
            if dbs[group] is None:
                return None
            return {bytes(k).decode(): bytes(v) for k, v in txn.cursor(db=dbs[group])}
        return self.read([group], get)

    def md5s(self, groups):
        def get(txn, dbs):
            out = {}
            for g in groups:
                raw = txn.get(g.encode(), db=dbs["meta"]) if dbs["meta"] is not None else None
                out[g] = json.loads(raw).get("md5") if raw is not None else None
            return out
        return self.read(["meta"], get) or {g: None for g in groups}

    def wait_md5(self, wanted, timeout=15.0, interval=0.002, check=None):
        """Poll until every group of `wanted` ({group: md5}) has that md5 in meta; returns
        the time.monotonic() at which it was seen. AssertionError on timeout; `check()`,
        called on every poll, may raise to give up early (a writer that died)."""
        deadline = time.monotonic() + timeout
        while True:
            if check is not None:
                check()
            got = self.md5s(list(wanted))
            if got == wanted:
                return time.monotonic()
            if time.monotonic() >= deadline:
                raise AssertionError("cache %s never reached %s (has %s)" % (self.path, wanted, got))
            time.sleep(interval)

    def close(self):
        if self.env is not None:
            self.env.close()
            self.env = None
            self._dbs = {}
