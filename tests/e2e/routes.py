"""The routing fixture of test_gateway_routing.py: one divide dataset and a table of
requests with the answer ShenYu's divide plugin gives for each (../shared/DIVIDE-SEMANTICS.md,
cited by section in every comment).

Every selector carries its own path prefix (a `uri` condition), so the cases of one
behaviour never compete with another's selectors, except where a case is about competition
(ranking, no backtracking). The same dataset is built for both admin generations:
"shenyu" (upstreams from DISCOVER_UPSTREAM, 2.6+; selector handles hold decoys where a case
proves the handle is ignored) and "shenyu-legacy" (upstreams from the selector's handle).

An upstream spec is (name, weight, up). Expected answers:
    Up(upstream, selector, rule)   proxied to that upstream by that selector and rule
                                   (rule None: not asserted)
    Err(code)                      ShenYu's JSON error body
"""
import collections

from items import cond, discover, plugin, rule, rule_handle, selector

Up = collections.namedtuple("Up", "upstream selector rule")
Err = collections.namedtuple("Err", "code")

A, B, C = "up-a", "up-b", "up-c"

MESSAGES = {
    -107: "divide:Can not find selector, please check your configuration!",
    -102: "divide:Rule not found!",
    -119: "Can not find healthy upstream url, please check your configuration!",
    -106: "Can not find url, please check your configuration!",
}
PLAIN_STATUS = {-107: 404, -102: 404, -119: 503, -106: 404}


def U(upstream, sel, rule_id=None):
    return Up(upstream, sel, rule_id)


def sw(prefix):
    return cond("uri", "startsWith", prefix)


# (selector id, conditions, upstreams, selector options, [(rule id, conditions, sort, options)])
# A rule with no conditions and matchMode 0 (AND) always matches (§3: empty AND is true).
def _selectors():
    return [
        # §1a match: Ant-style on the raw path
        ("s-match", [cond("uri", "match", "/m/**")], [(A, 50, True)], {},
         [("r-match", [], 1, {})]),
        ("s-antslash", [cond("uri", "match", "/as/b")], [(A, 50, True)], {},
         [("r-antslash", [], 1, {})]),
        ("s-antraw", [cond("uri", "match", "/raw/a%20b/**")], [(B, 50, True)], {},
         [("r-antraw", [], 1, {})]),
        # §1 `=` exact on the raw path
        ("s-eq", [cond("uri", "=", "/eq/exact")], [(B, 50, True)], {},
         [("r-eq", [], 1, {})]),
        # §1b pathPattern: decoded segments, `;params` stripped, empty segments significant
        ("s-pp", [cond("uri", "pathPattern", "/pp/a b/**")], [(C, 50, True)], {},
         [("r-pp", [], 1, {})]),
        ("s-pps", [cond("uri", "pathPattern", "/pps/x/y")], [(C, 50, True)], {},
         [("r-pps", [], 1, {})]),
        # §1 regex: whole string
        ("s-regex", [cond("uri", "regex", "/re/[0-9]+")], [(B, 50, True)], {},
         [("r-regex", [], 1, {})]),
        # §1 endsWith + startsWith, AND of two
        ("s-ew", [sw("/ew/"), cond("uri", "endsWith", ".json")], [(A, 50, True)], {},
         [("r-ew", [], 1, {})]),
        # §2 header: name case-insensitive, first line only, value case-sensitive, no split
        ("s-hdr", [sw("/h/"), cond("header", "=", "gold", "X-Tier")], [(B, 50, True)], {},
         [("r-hdr", [], 1, {})]),
        # §1 step 3: exclude on an absent value is false
        ("s-excl", [sw("/ex/"), cond("header", "exclude", "yes", "X-Block")], [(C, 50, True)], {},
         [("r-excl", [], 1, {})]),
        # §2 query: decoded, first value, name case-sensitive
        ("s-q", [sw("/q/"), cond("query", "=", "en us", "lang")], [(A, 50, True)], {},
         [("r-q", [], 1, {})]),
        ("s-qblank", [sw("/qb/"), cond("query", "isBlank", "", "debug")], [(B, 50, True)], {},
         [("r-qblank", [], 1, {})]),
        # §2 req_method, upper case
        ("s-method", [sw("/mt/"), cond("req_method", "=", "POST")], [(C, 50, True)], {},
         [("r-method", [], 1, {})]),
        # §2 cookie: exact, case-sensitive name
        ("s-cookie", [sw("/ck/"), cond("cookie", "=", "abc", "session")], [(A, 50, True)], {},
         [("r-cookie", [], 1, {})]),
        # §2 domain: the Host header without its port
        ("s-domain", [sw("/dom/"), cond("domain", "=", "api.example.com")], [(B, 50, True)], {},
         [("r-domain", [], 1, {})]),
        # §2 host: the client's address, not the Host header
        ("s-host", [sw("/hst/"), cond("host", "=", "127.0.0.1")], [(C, 50, True)], {},
         [("r-host", [], 1, {})]),
        # §2 ip: X-Forwarded-For only as one line of >= 2 ", "-separated entries
        ("s-ip", [sw("/ip/"), cond("ip", "=", "10.1.2.3")], [(A, 50, True)], {},
         [("r-ip", [], 1, {})]),
        # §3 OR
        ("s-or", [cond("uri", "=", "/or/a"), cond("uri", "=", "/or/b")], [(B, 50, True)],
         {"match_mode": 1}, [("r-or", [], 1, {})]),
        # §4 step 4 ranking: AND condition count first, then sort, then list order;
        # OR selectors score 0
        ("s-rank-lo", [sw("/rank/")], [(C, 50, True)], {"sort": 2}, [("r-rank-lo", [], 1, {})]),
        ("s-rank-hi", [sw("/rank/")], [(A, 50, True)], {"sort": 3}, [("r-rank-hi", [], 1, {})]),
        ("s-rank-two", [sw("/rank/"), cond("header", "=", "2", "X-V")], [(B, 50, True)],
         {"sort": 10}, [("r-rank-two", [], 1, {})]),
        ("s-rank-or", [sw("/rank/"), cond("header", "=", "1", "X-Or")], [(A, 50, True)],
         {"sort": 0, "match_mode": 1}, [("r-rank-or", [], 1, {})]),
        ("s-tie-a", [sw("/tie/")], [(A, 50, True)], {"sort": 7}, [("r-tie-a", [], 1, {})]),
        ("s-tie-b", [sw("/tie/")], [(B, 50, True)], {"sort": 7}, [("r-tie-b", [], 1, {})]),
        # §4 step 8: rules ranked like selectors; disabled rules are not candidates
        ("s-rules", [sw("/rules/")], [(C, 50, True)], {}, [
            ("r-any", [], 1, {}),
            ("r-one", [sw("/rules/one")], 5, {}),
            ("r-two", [sw("/rules/one"), cond("header", "=", "2", "X-R")], 9, {}),
            ("r-off", [sw("/rules/"), cond("uri", "contains", "rules"),
                       cond("req_method", "=", "GET")], 0, {"enabled": False}),
            ("r-s-lo", [sw("/rules/s")], 3, {}),
            ("r-s-hi", [sw("/rules/s")], 4, {}),
        ]),
        # §4 step 8: no matching rule -> -102
        ("s-norule", [sw("/nr/")], [(A, 50, True)], {},
         [("r-need", [cond("header", "=", "1", "X-Need")], 1, {})]),
        # §4 step 9: no backtracking to a lower-ranked selector
        ("s-nb-hi", [sw("/nb/"), cond("header", "=", "1", "X-Nb")], [(B, 50, True)], {},
         [("r-nb-hi", [cond("query", "=", "v", "k")], 1, {})]),
        ("s-nb-lo", [sw("/nb/")], [(C, 50, True)], {}, [("r-nb-lo", [], 1, {})]),
        # §4 step 5: continued=false routes without any rule
        ("s-cont", [sw("/cont/")], [(A, 50, True)], {"continued": False}, []),
        # §4 step 3: disabled selectors are not candidates
        ("s-dis", [sw("/dis/")], [(A, 50, True)], {"enabled": False}, [("r-dis", [], 1, {})]),
        # §6: no healthy upstream -> -119
        ("s-down", [sw("/down/")], [(A, 50, False)], {}, [("r-down", [], 1, {})]),
        ("s-empty", [sw("/empty/")], [], {}, [("r-empty", [], 1, {})]),
        ("s-half", [sw("/half/")], [(A, 50, False), (C, 50, True)], {}, [("r-half", [], 1, {})]),
        # §6 load balancing (rule handles); first upstreams differ: ShenYu keys round-robin
        # state by the first upstream's url
        ("s-rr", [sw("/rr/")], [(A, 50, True), (B, 50, True), (C, 50, True)], {},
         [("r-rr", [], 1, {"handle": rule_handle("roundRobin")})]),
        ("s-wrr", [sw("/wrr/")], [(B, 100, True), (C, 50, True)], {},
         [("r-wrr", [], 1, {"handle": rule_handle("roundRobin")})]),
        ("s-hash", [sw("/hash/")], [(A, 50, True), (B, 50, True), (C, 50, True)], {},
         [("r-hash", [], 1, {"handle": rule_handle("hash")})]),
        # §1 step 2: an unknown operator answers 400 when it is evaluated (AND stops at the
        # first false condition, so only /badop/ requests reach it)
        ("s-badop", [sw("/badop/"), cond("header", "like", "x", "X-Any")], [(A, 50, True)], {},
         [("r-badop", [], 1, {})]),
    ]


# Selectors whose handle (ignored since 2.6) names another upstream than DISCOVER_UPSTREAM:
# in "shenyu" mode the s-match and s-q cases prove the handle is not used (§6).
DECOY_HANDLE = {"s-match": [(C, 50, True)], "s-q": [(B, 50, True)]}


def dataset(ups, mode):
    """{"PLUGIN", "SELECTOR", "RULE"[, "DISCOVER_UPSTREAM"]} for the emulator's `mode`."""
    sels, rules, discovers = [], [], []
    for sid, conds, upstreams, opts, rule_specs in _selectors():
        urls_bool = [(ups.url(n), w, up) for n, w, up in upstreams]
        o = dict(opts)
        sort = o.pop("sort", 1)
        if mode == "shenyu":
            handle_ups = [(ups.url(n), w, up) for n, w, up in DECOY_HANDLE.get(sid, upstreams)]
            sels.append(selector(sid, conds, sort=sort, upstreams=handle_ups, mode=mode, **o))
            discovers.append(discover(sid, [(u, w, 0 if up else 1) for u, w, up in urls_bool],
                                      mode=mode))
        else:
            s = selector(sid, conds, sort=sort, upstreams=urls_bool, mode=mode, **o)
            if not urls_bool:
                s["handle"] = "[]"
            sels.append(s)
        for rid, rconds, rsort, ropts in rule_specs:
            rules.append(rule(rid, sid, rconds, sort=rsort, mode=mode, **ropts))
    data = {"PLUGIN": [plugin(True, mode)], "SELECTOR": sels, "RULE": rules}
    if mode == "shenyu":
        data["DISCOVER_UPSTREAM"] = discovers
    return data


# (label, method, path, [(header, value)], expected)
CASES = [
    # match (§1a)
    ("match /m/** matches /m", "GET", "/m", [], U(A, "s-match", "r-match")),
    ("match /m/** matches /m/x/y", "GET", "/m/x/y", [], U(A, "s-match", "r-match")),
    ("match /m/** does not match /mx", "GET", "/mx", [], Err(-107)),
    ("match drops empty segments: /as/b matches /as//b", "GET", "/as//b", [],
     U(A, "s-antslash", "r-antslash")),
    ("match is on the raw path: /raw/a%20b/** matches it undecoded", "GET", "/raw/a%20b/c", [],
     U(B, "s-antraw", "r-antraw")),
    # = (§1)
    ("= exact", "GET", "/eq/exact", [], U(B, "s-eq", "r-eq")),
    ("= ignores the query string", "GET", "/eq/exact?x=1", [], U(B, "s-eq", "r-eq")),
    ("= trailing slash is significant", "GET", "/eq/exact/", [], Err(-107)),
    ("= is case-sensitive", "GET", "/eq/Exact", [], Err(-107)),
    # pathPattern (§1b)
    ("pathPattern decodes segments", "GET", "/pp/a%20b/c", [], U(C, "s-pp", "r-pp")),
    ("pathPattern strips ;params", "GET", "/pps/x;v=1/y", [], U(C, "s-pps", "r-pps")),
    ("pathPattern: empty segments are significant", "GET", "/pps//x/y", [], Err(-107)),
    ("pathPattern: no optional trailing slash", "GET", "/pps/x/y/", [], Err(-107)),
    # regex (§1)
    ("regex matches the whole path", "GET", "/re/123", [], U(B, "s-regex", "r-regex")),
    ("regex is anchored at the end", "GET", "/re/123x", [], Err(-107)),
    # AND of two uri conditions
    ("startsWith AND endsWith", "GET", "/ew/x.json", [], U(A, "s-ew", "r-ew")),
    ("endsWith fails: no selector", "GET", "/ew/x.jsonp", [], Err(-107)),
    # header (§2)
    ("header =", "GET", "/h/1", [("X-Tier", "gold")], U(B, "s-hdr", "r-hdr")),
    ("header name is case-insensitive", "GET", "/h/1", [("x-tier", "gold")],
     U(B, "s-hdr", "r-hdr")),
    ("header value is case-sensitive", "GET", "/h/1", [("X-Tier", "Gold")], Err(-107)),
    ("header absent", "GET", "/h/1", [], Err(-107)),
    ("header: only the first line counts", "GET", "/h/1",
     [("X-Tier", "silver"), ("X-Tier", "gold")], Err(-107)),
    ("header: one line is not split on commas", "GET", "/h/1", [("X-Tier", "gold, silver")],
     Err(-107)),
    # exclude (§1 step 3)
    ("exclude with another value", "GET", "/ex/1", [("X-Block", "no")], U(C, "s-excl", "r-excl")),
    ("exclude with the value", "GET", "/ex/1", [("X-Block", "yes")], Err(-107)),
    ("exclude on an absent header is false", "GET", "/ex/1", [], Err(-107)),
    # query (§2)
    ("query decoded: + is a space", "GET", "/q/1?lang=en+us", [], U(A, "s-q", "r-q")),
    ("query decoded: %20 is a space", "GET", "/q/1?lang=en%20us", [], U(A, "s-q", "r-q")),
    ("query: the first value counts", "GET", "/q/1?lang=fr&lang=en+us", [], Err(-107)),
    ("query name is case-sensitive", "GET", "/q/1?Lang=en+us", [], Err(-107)),
    ("query absent", "GET", "/q/1", [], Err(-107)),
    ("isBlank on an absent query parameter", "GET", "/qb/1", [], U(B, "s-qblank", "r-qblank")),
    ("isBlank on an empty query parameter", "GET", "/qb/1?debug=", [],
     U(B, "s-qblank", "r-qblank")),
    ("isBlank on a set query parameter", "GET", "/qb/1?debug=1", [], Err(-107)),
    # req_method (§2)
    ("req_method POST", "POST", "/mt/1", [], U(C, "s-method", "r-method")),
    ("req_method GET is not POST", "GET", "/mt/1", [], Err(-107)),
    # cookie (§2)
    ("cookie =", "GET", "/ck/1", [("Cookie", "session=abc")], U(A, "s-cookie", "r-cookie")),
    ("cookie among others", "GET", "/ck/1", [("Cookie", "a=1; session=abc")],
     U(A, "s-cookie", "r-cookie")),
    ("cookie name is case-sensitive", "GET", "/ck/1", [("Cookie", "Session=abc")], Err(-107)),
    ("cookie absent", "GET", "/ck/1", [], Err(-107)),
    # domain, host, ip (§2)
    ("domain: Host without its port", "GET", "/dom/1", [("Host", "api.example.com:8080")],
     U(B, "s-domain", "r-domain")),
    ("domain: another Host", "GET", "/dom/1", [("Host", "www.example.com")], Err(-107)),
    ("host is the client address, not the Host header", "GET", "/hst/1",
     [("Host", "api.example.com")], U(C, "s-host", "r-host")),
    ("ip from X-Forwarded-For with two entries", "GET", "/ip/1",
     [("X-Forwarded-For", "10.1.2.3, 127.0.0.1")], U(A, "s-ip", "r-ip")),
    ("ip: a single X-Forwarded-For entry is ignored", "GET", "/ip/1",
     [("X-Forwarded-For", "10.1.2.3")], Err(-107)),
    ("ip: entries must be split by comma and space", "GET", "/ip/1",
     [("X-Forwarded-For", "10.1.2.3,127.0.0.1")], Err(-107)),
    # OR (§3)
    ("OR first condition", "GET", "/or/a", [], U(B, "s-or", "r-or")),
    ("OR second condition", "GET", "/or/b", [], U(B, "s-or", "r-or")),
    ("OR neither", "GET", "/or/c", [], Err(-107)),
    # selector ranking (§4 step 4)
    ("rank: equal counts, lower sort wins", "GET", "/rank/x", [], U(C, "s-rank-lo", "r-rank-lo")),
    ("rank: two AND conditions beat a lower sort", "GET", "/rank/x", [("X-V", "2")],
     U(B, "s-rank-two", "r-rank-two")),
    ("rank: an OR selector scores 0 whatever its sort", "GET", "/rank/x", [("X-Or", "1")],
     U(C, "s-rank-lo", "r-rank-lo")),
    ("rank: full tie, first in list order", "GET", "/tie/x", [], U(A, "s-tie-a", "r-tie-a")),
    # rule ranking (§4 step 8)
    ("rules: the only match", "GET", "/rules/x", [], U(C, "s-rules", "r-any")),
    ("rules: one condition beats none", "GET", "/rules/one", [], U(C, "s-rules", "r-one")),
    ("rules: two conditions beat one", "GET", "/rules/one", [("X-R", "2")],
     U(C, "s-rules", "r-two")),
    ("rules: equal counts, lower sort wins", "GET", "/rules/s", [], U(C, "s-rules", "r-s-lo")),
    # no rule / no backtracking (§4 steps 8, 9)
    ("no matching rule", "GET", "/nr/x", [], Err(-102)),
    ("the rule matches", "GET", "/nr/x", [("X-Need", "1")], U(A, "s-norule", "r-need")),
    ("no backtracking to a lower-ranked selector", "GET", "/nb/x", [("X-Nb", "1")], Err(-102)),
    ("the winner's rule matches", "GET", "/nb/x?k=v", [("X-Nb", "1")],
     U(B, "s-nb-hi", "r-nb-hi")),
    ("the lower selector when the higher does not match", "GET", "/nb/x", [],
     U(C, "s-nb-lo", "r-nb-lo")),
    # continued=false, disabled selector (§4 steps 3, 5)
    ("continued=false routes with no rules", "GET", "/cont/x", [], U(A, "s-cont", None)),
    ("a disabled selector is not a candidate", "GET", "/dis/x", [], Err(-107)),
    # upstream health (§6)
    ("every upstream down", "GET", "/down/x", [], Err(-119)),
    ("no upstreams", "GET", "/empty/x", [], Err(-119)),
    ("a down upstream is never chosen", "GET", "/half/1", [], U(C, "s-half", "r-half")),
    ("a down upstream is never chosen (2)", "GET", "/half/2", [], U(C, "s-half", "r-half")),
    ("a down upstream is never chosen (3)", "GET", "/half/3", [], U(C, "s-half", "r-half")),
]

# ---------------------------------------------------------------------- full-flow phase
def full_flow_dataset(ups, mode):
    """§4 steps 3, 4, 7: a full-flow selector (type 0) matches every request whatever its
    conditions, still scores its AND condition count, and uses its LAST rule by sort,
    disabled or not and whatever that rule's conditions."""
    def ds(sid, upstream):
        u = ups.url(upstream)
        return {"sel_ups": [(u, 50, True)], "disc": discover(sid, [(u, 50, 0)], mode=mode)}
    full = ds("s-full", A)
    one = ds("s-one", B)
    three = ds("s-three", C)
    sels = [
        selector("s-full", [sw("/never/"), cond("header", "=", "1", "X-Never")], sort=100,
                 type_=0, upstreams=full["sel_ups"], mode=mode),
        selector("s-one", [sw("/cust/")], sort=1, upstreams=one["sel_ups"], mode=mode),
        selector("s-three", [sw("/cust3/"), cond("header", "=", "1", "X-C"),
                             cond("query", "=", "1", "q")], sort=50,
                 upstreams=three["sel_ups"], mode=mode),
    ]
    rules = [
        rule("r-f1", "s-full", [cond("header", "=", "1", "X-No")], sort=1, mode=mode),
        rule("r-f2", "s-full", [cond("uri", "=", "/nothing")], sort=2, enabled=False, mode=mode),
        rule("r-one", "s-one", [], sort=1, mode=mode),
        rule("r-three", "s-three", [], sort=1, mode=mode),
    ]
    data = {"PLUGIN": [plugin(True, mode)], "SELECTOR": sels, "RULE": rules}
    if mode == "shenyu":
        data["DISCOVER_UPSTREAM"] = [full["disc"], one["disc"], three["disc"]]
    return data


FULL_FLOW_CASES = [
    ("full flow matches any path, last rule by sort", "GET", "/anything", [],
     U(A, "s-full", "r-f2")),
    ("full flow with 2 AND conditions outranks a 1-condition custom selector", "GET",
     "/cust/x", [], U(A, "s-full", "r-f2")),
    ("a 3-condition custom selector outranks the full flow", "GET", "/cust3/x?q=1",
     [("X-C", "1")], U(C, "s-three", "r-three")),
]
