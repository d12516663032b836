"""The route tables of figure 11 (the gateway at scale), and the one-item changes made to them.

A table of S selectors x R rules, as issue 19 measured main: selectors alternate `match
/sN/**` and `startsWith /sN/` (one uri condition each); rule k of selector N alternates
`match /sN/rk/**` and `startsWith /sN/rk/`; one DISCOVER_UPSTREAM item per selector with
two upstreams (a pair of the bench's `return 200` servers, each answering its own name, so
a response says which pair served it); the divide plugin enabled. S x R rules + 2 S + 1
items in all (10,000 x 10: 120,001). Items are built by tests/e2e/items.py, in the admin's
shapes.

The last rule of each selector is the "mover": its condition is `match /sN/mDDDDDDDDD/**`,
and a rule change rewrites those nine digits with the change's sequence number, so the path
/sN/m<seq>/x starts being routed (before: no rule, 404) exactly when the change is
reflected. An upstream change moves a selector to the next pair of upstreams, so the
selector's paths start answering the new pair's names. Both changes keep the item's JSON
text the same length (the ports are all five digits), which lets bench/cachewriter.c
rewrite the item in place in the group's list: this module writes the lists
(benchdata.h's format: GROUP.json and a manifest) and knows each item's byte offset.

The requests of the load go to the other rules (`/sN/rk/item`, k < R - 1), spread evenly
over the selectors, so they are always routed to an upstream whatever changes.
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "tests", "e2e"))

from items import compact, cond, discover, plugin, rule, selector  # noqa: E402

GROUPS = ("PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM")
PAIRS = 4           # pairs of upstream servers (8 servers)
BASE_TIME = 1700000000000


def parse_size(text):
    """"1000x10" -> (1000, 10)."""
    s, r = text.lower().split("x")
    s, r = int(s), int(r)
    if s < 1 or r < 2:
        raise ValueError("a size is SELECTORSxRULES with at least 1 selector and 2 rules: %r" % text)
    return s, r


def upstream_body(k):
    """What upstream server k answers (the same length for all, and for the fixed one)."""
    return "up-%s\n" % k


class Table:
    """One table and its current state; changes update it and return what to write."""

    def __init__(self, selectors, rules, ports, seed=19):
        if len(ports) != 2 * PAIRS or any(not 10000 <= p <= 65535 for p in ports):
            raise ValueError("need %d five-digit upstream ports" % (2 * PAIRS))
        self.selectors, self.rules, self.ports = selectors, rules, list(ports)
        self.rng = random.Random(seed)
        self.seq = 0                                  # changes made so far
        self.mover = [0] * selectors                  # current digits of each mover rule
        self.pair = [i % PAIRS for i in range(selectors)]
        self.items = {g: [] for g in GROUPS}
        self.items["PLUGIN"] = [plugin(True)]
        for i in range(selectors):
            sid = self.sid(i)
            op, value = ("match", "/s%d/**" % i) if i % 2 == 0 else ("startsWith", "/s%d/" % i)
            self.items["SELECTOR"].append(selector(sid, [cond("uri", op, value)], sort=i + 1))
            for k in range(rules - 1):
                c = (cond("uri", "match", "/s%d/r%d/**" % (i, k)) if k % 2 == 0
                     else cond("uri", "startsWith", "/s%d/r%d/" % (i, k)))
                self.items["RULE"].append(rule(self.rid(i, k), sid, [c], sort=k + 1))
            self.items["RULE"].append(self._mover(i, 0))
            self.items["DISCOVER_UPSTREAM"].append(self._discover(i, self.pair[i]))
        self.texts = {g: [compact(it) for it in self.items[g]] for g in GROUPS}
        self.offsets = {}
        for g in GROUPS:
            at, offs = 1, []
            for t in self.texts[g]:
                offs.append(at)
                at += len(t.encode("utf-8")) + 1
            self.offsets[g] = offs

    # ------------------------------------------------------------------ names
    @staticmethod
    def sid(i):
        return "s-%05d" % i

    @staticmethod
    def rid(i, k):
        return "r-%05d-%02d" % (i, k)

    def n_items(self):
        return sum(len(v) for v in self.items.values())

    def _mover(self, i, digits):
        return rule(self.rid(i, self.rules - 1), self.sid(i),
                    [cond("uri", "match", "/s%d/m%09d/**" % (i, digits))], sort=self.rules)

    def _discover(self, i, pair):
        return discover(self.sid(i), ["127.0.0.1:%d" % self.ports[2 * pair],
                                      "127.0.0.1:%d" % self.ports[2 * pair + 1]])

    def pair_bodies(self, pair):
        return {upstream_body(2 * pair).encode(), upstream_body(2 * pair + 1).encode()}

    # ------------------------------------------------------------------ files
    def write(self, path):
        """GROUP.json and manifest (benchdata.h) into path."""
        os.makedirs(path, exist_ok=True)
        lines = []
        for n, g in enumerate(GROUPS):
            with open(os.path.join(path, g + ".json"), "w", encoding="utf-8") as f:
                f.write("[" + ",".join(self.texts[g]) + "]")
            lines.append("%s %032x %d\n" % (g, n + 1, BASE_TIME + n))
        with open(os.path.join(path, "manifest"), "w") as f:
            f.writelines(lines)

    def dataset(self):
        """{GROUP: [items]} as it stands now, for the admin emulator."""
        return {g: list(self.items[g]) for g in GROUPS}

    # ------------------------------------------------------------------ requests
    def load_paths(self, n=64):
        """n request paths spread over the selectors, each routed by a non-mover rule; past 64
        each path ends in its number, so that all n are distinct (the route cache's misses)."""
        out = []
        for j in range(n):
            i = min(self.selectors - 1, (j * self.selectors) // n + self.selectors // n // 2)
            out.append("/s%d/r%d/item%s" % (i, j % (self.rules - 1), j if n > 64 else ""))
        return out

    def steady_path(self, i):
        return "/s%d/r0/item" % i

    # ------------------------------------------------------------------ changes
    def pick(self):
        return self.rng.randrange(self.selectors)

    def change(self, kind, i=None):
        """A one-item change of selector i (random if None): "rule" moves its mover rule,
        "upstream" moves it to the next pair. Returns a Change."""
        i = self.pick() if i is None else i
        self.seq += 1
        if kind == "rule":
            self.mover[i] = self.seq % 1000000000
            item = self._mover(i, self.mover[i])
            g, idx = "RULE", i * self.rules + self.rules - 1
            probe = "/s%d/m%09d/x" % (i, self.mover[i])
            expect = None        # any upstream's answer
        elif kind == "upstream":
            self.pair[i] = (self.pair[i] + 1) % PAIRS
            item = self._discover(i, self.pair[i])
            g, idx = "DISCOVER_UPSTREAM", i
            probe = self.steady_path(i)
            expect = self.pair_bodies(self.pair[i])
        else:
            raise ValueError(kind)
        text = compact(item)
        if len(text) != len(self.texts[g][idx]):
            raise AssertionError("change of %s item %d changed its length" % (g, idx))
        self.texts[g][idx] = text
        self.items[g][idx] = item
        return Change(kind, i, g, self.offsets[g][idx], text, item, probe, expect)


class Change:
    """One change: what the cache writer writes, and how a client sees it reflected."""

    __slots__ = ("kind", "selector", "group", "offset", "text", "item", "probe", "expect")

    def __init__(self, kind, selector, group, offset, text, item, probe, expect):
        self.kind, self.selector, self.group = kind, selector, group
        self.offset, self.text, self.item = offset, text, item
        self.probe, self.expect = probe, expect

    def reflected(self, status, body):
        """Does this answer to self.probe show the change?"""
        if status != 200:
            return False
        return self.expect is None or body in self.expect
