"""The admin's script for test_gateway_changes.py: a starting divide dataset and a
sequence of single admin operations (one control-API call each) that touches every kind of
change the issue lists: an upstream swapped, a weight changed, a selector disabled and
enabled again, a rule added and removed, a whole group replaced (RULE with every id new,
DISCOVER_UPSTREAM with every list rotated), a selector added and removed.

Every version along the way routes every request kind of KINDS somewhere: operations that
need several groups are ordered as a careful admin orders them (upstreams, then rules, then
the selector when adding; the reverse when removing), so no version has a selector without
its rules or upstreams, and "no selector"/"no rule" answers are never right.

    script = Script(ups)          # ups: the Upstreams (names -> urls)
    script.initial                # {"PLUGIN", "SELECTOR", "RULE", "DISCOVER_UPSTREAM"}
    for op, group, payload in script.ops(100): ...   # payload: items (upsert/replace) or keys
"""
from items import cond, discover, plugin, rule, selector

NAMES = ("up-a", "up-b", "up-c")

# The load's request kinds: (kind, path, headers)
KINDS = [
    ("api", "/api/orders", []),
    ("api-gold", "/api/orders", [("X-Tier", "gold")]),
    ("web", "/web/index.html", []),
    ("other", "/other/page", []),
]


def match(prefix):
    return cond("uri", "match", prefix)


GOLD = cond("header", "=", "gold", "X-Tier")


class Script:
    def __init__(self, ups):
        self.ups = ups
        self.main_up = 0          # index into NAMES of s-main's upstream
        self.web_weights = (50, 50)
        self.rule_gen = 0         # suffix of the rule ids, changed by a whole-RULE replace
        self.rotation = 0         # DISCOVER_UPSTREAM rotation
        self.initial = {
            "PLUGIN": [plugin(True)],
            "SELECTOR": [self.sel_main(True), self.sel_web(), self.sel_fallback()],
            "RULE": self.base_rules(),
            "DISCOVER_UPSTREAM": self.discovers(),
        }

    # -------------------------------------------------------------- items
    def url(self, i):
        return self.ups.url(NAMES[i % 3])

    def sel_main(self, enabled):
        return selector("s-main", [match("/api/**")], sort=1, enabled=enabled)

    def sel_web(self):
        return selector("s-web", [match("/web/**")], sort=1)

    def sel_fallback(self):
        return selector("s-fallback", [match("/**")], sort=100)

    def sel_new(self, n):
        # two AND conditions: outranks s-main for gold requests
        return selector("s-new-%d" % n, [match("/api/**"), GOLD], sort=5)

    def base_rules(self):
        g = self.rule_gen
        return [rule("r-main-%d" % g, "s-main", [match("/api/**")], sort=1),
                rule("r-web-%d" % g, "s-web", [], sort=1),
                rule("r-fallback-%d" % g, "s-fallback", [], sort=1)]

    def disc_main(self):
        return discover("s-main", [self.url(self.main_up + self.rotation)])

    def disc_web(self):
        wa, wc = self.web_weights
        return discover("s-web", [(self.url(0 + self.rotation), wa, 0),
                                  (self.url(2 + self.rotation), wc, 0)])

    def disc_fallback(self):
        return discover("s-fallback", [self.url(2 + self.rotation)])

    def discovers(self):
        return [self.disc_main(), self.disc_web(), self.disc_fallback()]

    # -------------------------------------------------------------- the operations
    def cycle(self, n):
        """One round of 14 operations; n numbers the round (fresh ids)."""
        self.main_up += 1
        yield "upsert", "DISCOVER_UPSTREAM", [self.disc_main()]                  # upstream swapped
        self.web_weights = (80, 20) if self.web_weights == (50, 50) else (50, 50)
        yield "upsert", "DISCOVER_UPSTREAM", [self.disc_web()]                   # weight changed
        yield "upsert", "SELECTOR", [self.sel_main(False)]                       # selector disabled
        yield "upsert", "SELECTOR", [self.sel_main(True)]                        # ... and enabled
        gold = rule("r-gold-%d" % n, "s-main", [match("/api/**"), GOLD], sort=2)
        yield "upsert", "RULE", [gold]                                           # rule added
        yield "delete", "RULE", [gold["id"]]                                     # ... and removed
        self.rule_gen += 1
        yield "replace", "RULE", self.base_rules()                               # whole group
        self.rotation += 1
        yield "replace", "DISCOVER_UPSTREAM", self.discovers()                   # whole group
        new = self.sel_new(n)
        new_disc = discover(new["id"], [self.url(1 + n)])
        new_rule = rule("r-new-%d" % n, new["id"], [], sort=1)
        yield "upsert", "DISCOVER_UPSTREAM", [new_disc]                          # selector added:
        yield "upsert", "RULE", [new_rule]                                       # upstreams, rule,
        yield "upsert", "SELECTOR", [new]                                        # then selector
        yield "delete", "SELECTOR", [new["id"]]                                  # removed: the
        yield "delete", "RULE", [new_rule["id"]]                                 # reverse order
        yield "delete", "DISCOVER_UPSTREAM", [new["id"]]

    def ops(self, count):
        n = 0
        done = 0
        while True:
            for op in self.cycle(n):
                if done == count:
                    return
                yield op
                done += 1
            n += 1

    def swap_main(self):
        """One more upstream swap (the change made while gwsyncd is down)."""
        self.main_up += 1
        return "upsert", "DISCOVER_UPSTREAM", [self.disc_main()]
