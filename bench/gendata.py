#!/usr/bin/env python3
"""Benchmark datasets, generated deterministically into the build tree (never committed).

The items come from the admin emulator's own generator (tests/admin/dataset.py), so the
benchmarks parse the same realistic shapes the tests do: JSON inside strings, conditions,
nulls, missing fields, non-ASCII names. Each dataset is a directory:

  GROUP.json   the group's item list as the admin's compact JSON text (the `data` array)
  manifest     one line per group: "GROUP MD5 LASTMODIFYTIME"

The C tools (benchdata.c) read that and assemble admin replies around the bytes, so the
text the agent parses is exactly what was generated. One rule of the propagation and big
datasets is named "bench-mutable-000000000": the benchmarks overwrite those nine digits to
make a real one-rule change without re-serialising anything.

Datasets (sizes from issue 7):
  prop  40 plugins, 1,000 selectors, 10,000 rules                 (change propagation)
  big   40 plugins, 1,000 selectors, 100,000 rules, 10,000 metadata (full sync, memory,
        one change in a big group)
  demo  the emulator's default sizes, five classic groups          (idle RSS and CPU)
  small 40 plugins, 100 selectors, 1,000 rules                    (the growth curve)
  tiny  1,000,000 rules of ~30 bytes each ({"id":"t0000000","name":"x"}; 33 MB): the
        hostile-admin probe of issue 22, where the per-item overhead is all there is
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "admin"))

import dataset  # noqa: E402

MUTABLE = "bench-mutable-000000000"
# lastModifyTime of generated versions: fixed, so reruns give identical bytes.
BASE_TIME = 1700000000000

NONE = {k: 0 for k in dataset.DEFAULT_SIZES}
DATASETS = {
    "prop": (["PLUGIN", "SELECTOR", "RULE"],
             dict(NONE, plugins=40, selectors=1000, rules=10000)),
    "big": (["PLUGIN", "SELECTOR", "RULE", "META_DATA"],
            dict(NONE, plugins=40, selectors=1000, rules=100000, metadata=10000)),
    "demo": (list(dataset.CLASSIC_GROUPS), {}),
    "small": (["PLUGIN", "SELECTOR", "RULE"],
              dict(NONE, plugins=40, selectors=100, rules=1000)),
    "tiny": (["RULE"], None),  # made here, not by dataset.py (see write_tiny)
}
TINY_ITEMS = 1000000


def write_tiny(out):
    """1,000,000 rules of ~30 bytes: only an id and a name (a rule the model accepts)."""
    path = os.path.join(out, "tiny")
    os.makedirs(path, exist_ok=True)
    items = [{"id": "t%07d" % i, "name": "x"} for i in range(TINY_ITEMS)]
    with open(os.path.join(path, "RULE.json.tmp"), "wb") as f:
        f.write(dataset.compact(items).encode("utf-8"))
    os.replace(os.path.join(path, "RULE.json.tmp"), os.path.join(path, "RULE.json"))
    with open(os.path.join(path, "manifest.tmp"), "w") as f:
        f.write("RULE %s %d\n" % (dataset.md5_of(items), BASE_TIME))
    os.replace(os.path.join(path, "manifest.tmp"), os.path.join(path, "manifest"))


def write_dataset(out, name, seed):
    if name == "tiny":
        return write_tiny(out)
    groups, sizes = DATASETS[name]
    data = dataset.generate(seed=seed, flavour="shenyu", groups=groups, **sizes)
    rules = data.get("RULE") or []
    if name != "demo" and rules:
        rules[len(rules) // 2]["name"] = MUTABLE
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    lines = []
    for i, group in enumerate(groups):
        text = dataset.compact(data[group]).encode("utf-8")
        with open(os.path.join(path, group + ".json.tmp"), "wb") as f:
            f.write(text)
        os.replace(os.path.join(path, group + ".json.tmp"), os.path.join(path, group + ".json"))
        lines.append("%s %s %d\n" % (group, dataset.md5_of(data[group]), BASE_TIME + i))
    with open(os.path.join(path, "manifest.tmp"), "w") as f:
        f.writelines(lines)
    os.replace(os.path.join(path, "manifest.tmp"), os.path.join(path, "manifest"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory to write the datasets into")
    ap.add_argument("names", nargs="*", default=sorted(DATASETS), help="datasets to write")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    for name in args.names:
        if name not in DATASETS:
            ap.error("unknown dataset %r (one of %s)" % (name, ", ".join(sorted(DATASETS))))
        write_dataset(args.out, name, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
