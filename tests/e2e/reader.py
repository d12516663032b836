"""A tight-loop LMDB reader, run as a child process by test_cache_reader.py:

    python3 reader.py ENV_DIR GROUP      (reads until a line arrives on stdin or it closes)

Each iteration is one read transaction that takes the group's meta md5, meta count and
key set, and meta `generation`, exactly as a gateway reads (docs/lmdb-cache.md, "Reading
it"). It prints one JSON summary: how many reads, every distinct (md5, keys) pair seen,
and any read where count != number of keys or the generation went backwards.

A separate process, not a thread: the reader must run truly in parallel with gwsyncd's
commits and the test's own admin calls, and a reader thread would share the GIL with them.
"""
import json
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cache import lmdb  # noqa: E402  (with the Debian fallback)


def main(path, group):
    env = lmdb.open(path, readonly=True, lock=True, max_dbs=32, create=False)
    meta = env.open_db(b"meta", create=False)
    gdb = env.open_db(group.encode(), create=False)
    seen = {}
    reads = 0
    backwards = 0
    count_mismatch = []
    last_gen = -1
    stdin = sys.stdin.fileno()
    t0 = time.monotonic()
    while True:
        if reads % 64 == 0 and select.select([stdin], [], [], 0)[0]:
            break
        try:
            txn = env.begin(buffers=False)
        except lmdb.MapResizedError:
            env.set_mapsize(0)
            continue
        try:
            gen = int(txn.get(b"generation", db=meta))
            m = json.loads(txn.get(group.encode(), db=meta))
            keys = tuple(bytes(k).decode() for k in txn.cursor(db=gdb).iternext(values=False))
        finally:
            txn.abort()
        reads += 1
        if gen < last_gen:
            backwards += 1
        last_gen = gen
        if m.get("count") != len(keys) and len(count_mismatch) < 10:
            count_mismatch.append([m, len(keys)])
        pair = (m["md5"], keys)
        seen[pair] = seen.get(pair, 0) + 1
    json.dump({"reads": reads, "seconds": time.monotonic() - t0,
               "seen": [[md5, list(keys), n] for (md5, keys), n in seen.items()],
               "generation_backwards": backwards, "count_mismatch": count_mismatch},
              sys.stdout)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
