#!/usr/bin/env python3
"""The demo's ShenYu admin writing to a Consul (the emulator, or a real one): `load`
publishes a realistic dataset as the admin's syncAll does, `edit` changes one rule as an
admin UPDATE does (tests/kv/publisher.py's writes through consulstore.ConsulStore).
  publish.py load|edit URL NAMESPACE [TOKEN]"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "kv"))
sys.path.insert(0, HERE)
import publisher  # noqa: E402
import consulstore  # noqa: E402


def main(argv):
    if len(argv) < 3 or argv[0] not in ("load", "edit"):
        print(__doc__, file=sys.stderr)
        return 2
    what, url, ns = argv[:3]
    store = consulstore.ConsulStore(url, token=argv[3] if len(argv) > 3 else None)
    pub = publisher.Publisher(store, "/%s/shenyu" % ns)
    data = publisher.RandomData(seed=2028, namespace=ns)
    if what == "load":
        pub.sync_all(data.items)
        n = sum(len(v) for v in data.items.values())
        print("[demo] published %d items under %s/shenyu/ as ShenYu's admin does" % (n, ns),
              file=sys.stderr)
        return 0
    rules = pub.published(["RULE"])["RULE"]
    rule = dict(rules[sorted(rules)[0]])
    rule["name"] = "demo: edited at runtime"
    rule["sort"] = (rule.get("sort") or 0) + 1
    pub.write("RULE", rule)
    print("[demo] RULE %s is now '%s' (PUT %s)" % (rule["id"], rule["name"],
                                                   store.key(pub.path("RULE", rule))),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
