"""A reader of the LMDB cache never sees a group that is not one of the admin's versions.

While a child process (reader.py) reads the RULE group in a tight loop, one read
transaction per iteration, the admin makes 500 changes to it: whole-group replacements
that add, drop and rewrite several rules at once, upserts and deletes. The test records
every version the admin published (md5 -> key set). Every (md5, key set) pair the reader
saw must be one of them: a key set that matches no published version would mean a change
was committed in pieces, or meta and data were committed apart (docs/lmdb-cache.md, "One
commit per change"). Afterwards the cache holds the last version byte for byte.

Needs no nginx: only the admin emulator, gwsyncd with the `lmdb` subscriber and Python's
lmdb binding.
"""
import json
import os
import random
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gateway  # noqa: E402
import harness  # noqa: E402
from items import compact, cond, rule  # noqa: E402

CHANGES = 500
POOL = 60                # rule ids drawn from r-00 .. r-59


def make_rule(i, rev):
    return rule("r-%02d" % i, "s-%d" % (i % 5), [cond("uri", "match", "/svc%d/**" % i)],
                sort=i, handle=compact({"loadBalance": "random", "retry": rev % 4,
                                        "timeout": 1000 + rev}))


class CacheReaderSeesOnlyAdminVersions(unittest.TestCase):
    def test_tight_loop_reader_sees_only_published_versions(self):
        stack = gateway.Stack(nginx=False)
        self.addCleanup(stack.close)
        rng = random.Random(10)
        items = [make_rule(i, 0) for i in range(0, POOL, 2)]
        stack.start_admin("shenyu", {"RULE": items}, hold=30)
        stack.start_daemon()
        stack.wait_synced(("RULE",))
        published = {harness.md5_of(items): tuple(sorted(r["id"] for r in items))}

        reader = subprocess.Popen([sys.executable, os.path.join(gateway.HERE, "reader.py"),
                                   stack.cache_path, "RULE"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: reader.poll() is None and reader.kill())
        time.sleep(0.2)

        waits = 0
        for n in range(1, CHANGES + 1):
            kind = n % 4
            if kind in (0, 1):
                # a whole-group replacement: some kept (some rewritten), some new, some gone
                keep = [r for r in items if rng.random() < 0.7]
                keep = [make_rule(int(r["id"][2:]), n) if rng.random() < 0.3 else r for r in keep]
                have = {r["id"] for r in keep}
                fresh = [make_rule(i, n) for i in rng.sample(range(POOL), 6)
                         if "r-%02d" % i not in have]
                items = keep + fresh
                if not items:
                    items = [make_rule(0, n)]
                v = stack.publish("replace", "RULE", items=items)
            elif kind == 2:
                # upsert of several: updates in place, new ones appended (one version)
                batch = [make_rule(i, n) for i in rng.sample(range(POOL), 4)]
                by_id = {r["id"]: i for i, r in enumerate(items)}
                items = list(items)
                for r in batch:
                    if r["id"] in by_id:
                        items[by_id[r["id"]]] = r
                    else:
                        by_id[r["id"]] = len(items)
                        items.append(r)
                v = stack.publish("upsert", "RULE", items=batch)
            else:
                if len(items) < 4:
                    continue
                gone = {r["id"] for r in rng.sample(items, 3)}
                items = [r for r in items if r["id"] not in gone]
                v = stack.publish("delete", "RULE", keys=sorted(gone))
            self.assertEqual(v["md5"], harness.md5_of(items), "the test's model of the admin")
            published[v["md5"]] = tuple(sorted(r["id"] for r in items))
            if n % 10 == 0:
                # let many versions land one by one, not only the coalesced latest
                stack.wait_cache(v)
                waits += 1
        stack.wait_cache(v)
        time.sleep(0.1)

        out, err = reader.communicate(b"stop\n", timeout=30)
        self.assertEqual(reader.returncode, 0, err.decode("utf-8", "replace"))
        summary = json.loads(out)
        seen = summary["seen"]
        strangers = [(md5, keys) for md5, keys, _ in seen
                     if published.get(md5) != tuple(keys)]
        sys.stderr.write("\n  reader: %d read transactions in %.1f s, %d distinct versions seen "
                         "of %d published\n" % (summary["reads"], summary["seconds"], len(seen),
                                                len(published)))
        self.assertEqual(strangers, [], "key sets matching no published version")
        self.assertEqual(summary["count_mismatch"], [], "meta count != keys in the same read")
        self.assertEqual(summary["generation_backwards"], 0, "generation went backwards")
        self.assertGreater(summary["reads"], 1000, "the reader barely ran")
        self.assertGreaterEqual(len(seen), waits // 2, "the reader saw too few versions")

        # the last version, byte for byte as the admin sent each item
        cached = stack.cache.items("RULE")
        self.assertEqual(cached, {r["id"]: compact(r).encode("utf-8") for r in items})
        meta = stack.cache.meta("RULE")
        self.assertEqual((meta["md5"], meta["count"], meta["stale"]),
                         (v["md5"], len(items), False))


if __name__ == "__main__":
    harness.main()
