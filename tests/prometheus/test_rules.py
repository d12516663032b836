#!/usr/bin/env python3
"""contrib/prometheus (issue 24): the alerting rules and the Grafana dashboard.

- `promtool check rules` accepts the rules and `promtool test rules` passes their unit tests
  (contrib/prometheus/gwsync.rules.test.yml), which check every alert with series that fire
  and series that must not.
- Every alert has a severity, a summary, a description and a runbook naming a paragraph of
  docs/operations.md's "Alerts" section that exists; every alert is tested firing and silent.
- Every metric name in the rules and in the dashboard's expressions is one gwsyncd exports,
  read from agent/ops/metrics.c and from a real /metrics scrape of a running gwsyncd (a
  histogram only through _bucket, _sum and _count); the two lists agree.
- The rules on real scrapes: a running agent (long-polling, WebSocket, etcd) is scraped in a
  state (healthy, a subscriber refusing, paused, the admin down, a repair, a ShenYu 2.7
  cluster's non-master admin, etcd gone); the scrapes become promtool series in which that state
  persists, and exactly the alerts that state deserves fire, with the agent's real labels.
- The dashboard: a Grafana dashboard with a data source and an instance variable, every
  query on ${datasource}, every expression valid PromQL (promtool parses it).
- `make install` puts the four files in $(pkgdatadir)/prometheus and the installed tests pass.

Skips (exit 77) without promtool (Debian's prometheus package: ./dev.sh deps installs it)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "integration"))
import harness  # noqa: E402

try:
    import yaml
except ImportError:  # python3-yaml: part of Debian's python3 stack on every test machine
    yaml = None

PROMTOOL = shutil.which("promtool")
CONTRIB = os.path.join(SRCDIR, "contrib", "prometheus")
RULES = os.path.join(CONTRIB, "gwsync.rules.yml")
RULE_TESTS = os.path.join(CONTRIB, "gwsync.rules.test.yml")
DASHBOARD = os.path.join(CONTRIB, "gwsync-dashboard.json")
METRICS_C = os.path.join(SRCDIR, "agent", "ops", "metrics.c")
OPERATIONS = os.path.join(SRCDIR, "docs", "operations.md")
# Names the rules may use that the agent does not export: Prometheus's own.
PROMETHEUS_NAMES = {"up"}
TOKEN = "prometheus-test-token-0123456789"
FAST_RETRY = (2, "200ms", "1s")


def require_tools():
    if not PROMTOOL:
        raise unittest.SkipTest("promtool not found (Debian's prometheus package; ./dev.sh deps)")
    if yaml is None:
        raise unittest.SkipTest("python3-yaml is not installed")


def promtool(*args, cwd=None):
    return subprocess.run([PROMTOOL] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, cwd=cwd, timeout=300)


def load_rules():
    with open(RULES, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    return [r for g in doc["groups"] for r in g["rules"]]


# ---------------------------------------------------------------------- PromQL names
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
             "group_left", "group_right", "inf", "nan", "atan2", "start", "end"}
_GRAFANA_VARS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h",
                 "${datasource}": "", "$datasource": ""}


def grafana_to_promql(expr):
    """A dashboard expression with Grafana's variables replaced by values, as Grafana sends it."""
    for var, value in _GRAFANA_VARS.items():
        expr = expr.replace(var, value)
    return re.sub(r"\$\{?instance\}?", ".+", expr)


def metric_names(expr):
    """The metric names an expression selects: what is left once strings, label matchers,
    ranges, grouping clauses, functions, keywords and numbers are taken out."""
    s = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        tok = m.group(0)
        if tok[0].isdigit() or tok.lower() in _KEYWORDS:
            continue
        if re.match(r"\s*\(", s[m.end():]):  # a function or an aggregation
            continue
        names.add(tok)
    return names


def usable_names(families):
    """{family: type} -> the names a query can select: a histogram's three series."""
    out = set()
    for fam, typ in families.items():
        out |= {fam + "_bucket", fam + "_sum", fam + "_count"} if typ == "histogram" else {fam}
    return out


def families_from_source():
    """{family: type} from metrics.c: each family() call with literal name and type, and
    the name/type tables it loops over (a table of counters is passed "counter")."""
    with open(METRICS_C, encoding="utf-8") as f:
        src = f.read()
    fams = {}
    for name, typ in re.findall(r'family\(f,\s*"(gwsync_\w+)",\s*"(\w+)"', src):
        fams[name] = typ
    for name, typ in re.findall(r'\{"(gwsync_\w+)",\s*"(counter|gauge|histogram)"', src):
        fams[name] = typ
    # a table of [name, help] pairs rendered by family(f, table[c][0], "counter", ...)
    for table, typ in re.findall(r'family\(f,\s*(\w+)\[c\]\[0\],\s*"(\w+)"', src):
        m = re.search(r"\b%s\[\]\[2\]\s*=\s*\{(.*?)\};" % re.escape(table), src, re.S)
        if m:
            for name in re.findall(r'\{"(gwsync_\w+)",', m.group(1)):
                fams[name] = typ
    return fams


def parse_scrape(text):
    """({family: type}, [(name, labels text, value)]) of a text exposition."""
    fams, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name, typ = line[7:].split(" ", 1)
            fams[name] = typ
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            assert m, "bad sample line: %r" % line
            samples.append((m.group(1), m.group(2) or "", float(m.group(3))))
    return fams, samples


# ---------------------------------------------------------------------- rules on scrapes
SIM_STEPS = 60       # one simulated hour, a sample a minute
SIM_EVAL = "45m"     # past every for: and every window the rules use


def _num(v):
    return ("%.6f" % v).rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def scrape_series(first, second, instance="agent:9196"):
    """promtool input series in which the state between two scrapes, (wall time, text)
    `first` and `second` taken some seconds apart, persists for an hour: gauges keep their
    value; counters go on at the rate seen between the scrapes; a timestamp gauge that moved
    between them keeps its age (it goes on moving), one that did not stays where it was
    (its age grows), and 0 ("never") stays 0. Simulated time 0 is the second scrape."""
    (t1, text1), (t2, text2) = first, second
    fams, samples2 = parse_scrape(text2)
    before = {(n, l): v for n, l, v in parse_scrape(text1)[1]}
    dt = t2 - t1
    assert dt > 0
    series = [{"series": 'up{instance="%s",job="gwsync"}' % instance,
               "values": "1x%d" % SIM_STEPS}]
    for name, labels, v in samples2:
        fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in fams else name
        typ = fams.get(fam)
        v1 = before.get((name, labels), v)
        if typ in ("counter", "histogram"):
            values = "%s+%sx%d" % (_num(v), _num(max(v - v1, 0) / dt * 60), SIM_STEPS)
        elif name.endswith("_timestamp_seconds") or name.endswith("_time_seconds"):
            age = t2 - v
            if v == 0:
                values = "0x%d" % SIM_STEPS
            elif v > v1:
                values = "%s+60x%d" % (_num(-age), SIM_STEPS)
            else:
                values = "%sx%d" % (_num(-age), SIM_STEPS)
        else:
            values = "%sx%d" % (_num(v), SIM_STEPS)
        lbl = (labels + "," if labels else "") + 'instance="%s",job="gwsync"' % instance
        series.append({"series": "%s{%s}" % (name, lbl), "values": values})
    return series


def firing_test(name, series, expected):
    """A promtool test: at SIM_EVAL exactly the alerts `expected` ({alertname: count}) fire."""
    return {"name": name, "interval": "1m", "input_series": series,
            "promql_expr_test": [{
                "expr": 'count by (alertname) (ALERTS{alertstate="firing"})',
                "eval_time": SIM_EVAL,
                "exp_samples": [{"labels": '{alertname="%s"}' % a, "value": n}
                                for a, n in sorted(expected.items())]}]}


def run_rule_tests(testcase, tests, tmp):
    path = os.path.join(tmp, "scrapes.test.yml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({"rule_files": [RULES], "evaluation_interval": "1m", "tests": tests}, f,
                       sort_keys=False)
    r = promtool("test", "rules", path)
    testcase.assertEqual(r.returncode, 0, "the rules on real scrapes:\n" + r.stdout)


class Scraper:
    """Scrapes of one agent's /metrics, with the wall time each was taken."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def scrape(self):
        st, _, body = harness.http_request("GET", self.base + "/metrics", timeout=5)
        assert st == 200, st
        return time.time(), body.decode("utf-8")

    def value(self, name, **labels):
        """The value of the one sample of `name` whose labels include `labels` (None if none)."""
        _, text = self.scrape()
        for n, lbl, v in parse_scrape(text)[1]:
            have = dict(re.findall(r'(\w+)="((?:\\.|[^"\\])*)"', lbl))
            if n == name and all(have.get(k) == str(x) for k, x in labels.items()):
                return v
        return None

    def wait(self, name, predicate, message, timeout=30.0, **labels):
        """Scrape until `name`'s value satisfies predicate (0 may be the value waited for)."""
        found = harness.wait_until(
            lambda: (lambda v: (v,) if v is not None and predicate(v) else None)(
                self.value(name, **labels)),
            timeout=timeout, interval=0.1, message=message)
        return found[0]

    def pair(self, changed=None, timeout=15.0, **labels):
        """Two scrapes at least a second apart; with `changed`, the second once that
        metric's value has moved since the first (a poll answered, a failure counted)."""
        first = self.scrape()
        time.sleep(1.0)
        if changed:
            old = self.value(changed, **labels)
            harness.wait_until(lambda: self.value(changed, **labels) != old, timeout=timeout,
                               interval=0.1, message="%s to move" % changed)
        return first, self.scrape()

    def post(self, path):
        st, _, body = harness.http_request("POST", self.base + path, body=b"",
                                           headers={"Authorization": "Bearer " + TOKEN},
                                           timeout=5)
        assert st == 200, (st, body)


def recorder(out, fail_flag):
    return {"name": "rec", "library": "recorder", "config": {"out": out, "fail_if_exists": fail_flag}}


def rule_item(rid):
    return {"id": rid, "name": "/r/" + rid, "pluginName": "divide", "selectorId": "s-metrics",
            "matchMode": 0, "sort": 1, "enabled": True, "loged": True, "handle": "{}",
            "conditionDataList": []}


# ---------------------------------------------------------------------- tests
class Rules(unittest.TestCase):
    """The files themselves (no agent run)."""

    def setUp(self):
        require_tools()

    def test_promtool_check_rules_accepts_them(self):
        r = promtool("check", "rules", RULES)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SUCCESS: %d rules found" % len(load_rules()), r.stdout)

    def test_promtool_unit_tests_pass(self):
        r = promtool("test", "rules", os.path.basename(RULE_TESTS), cwd=CONTRIB)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("SUCCESS", r.stdout)

    def test_every_alert_is_tested_firing_and_silent(self):
        with open(RULE_TESTS, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        fires, silent = set(), set()
        for t in doc["tests"]:
            for a in t.get("alert_rule_test", []):
                (fires if a.get("exp_alerts") else silent).add(a["alertname"])
        names = {r["alert"] for r in load_rules()}
        self.assertEqual(names - fires, set(), "alerts never tested firing")
        self.assertEqual(names - silent, set(), "alerts never tested staying silent")

    def test_every_alert_has_labels_annotations_and_a_runbook_paragraph(self):
        with open(OPERATIONS, encoding="utf-8") as f:
            ops = f.read()
        self.assertIn("\n## Alerts\n", ops)
        section = ops.split("\n## Alerts\n", 1)[1].split("\n## ", 1)[0]
        anchors = {slug(h) for h in re.findall(r"^#{2,4} (.+)$", ops, re.M)}
        rules = load_rules()
        self.assertTrue(rules)
        for r in rules:
            name = r.get("alert")
            self.assertTrue(name and name.startswith("Gwsync"), r)
            self.assertIn(r["labels"].get("severity"), ("critical", "warning"), name)
            ann = r["annotations"]
            for key in ("summary", "description", "runbook"):
                self.assertTrue(ann.get(key), "%s has no %s" % (name, key))
            self.assertIn("{{ $labels.instance }}", ann["summary"], name)
            self.assertEqual(ann["runbook"], "docs/operations.md#" + name.lower(), name)
            # its own paragraph, in the Alerts section
            self.assertRegex(section, r"(?m)^### %s$" % name)
        # every link inside the section goes somewhere
        for target in re.findall(r"\]\(#([^)]+)\)", section):
            self.assertIn(target, anchors, "broken link #%s in the Alerts section" % target)
        # the contrib README lists every alert
        with open(os.path.join(CONTRIB, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        for r in rules:
            self.assertIn("[%s](../../docs/operations.md#%s)" % (r["alert"], r["alert"].lower()),
                          readme)

    def test_the_name_extractor_finds_metrics_and_only_metrics(self):
        self.assertEqual(metric_names(
            'sum by (instance, le) (rate(a_bucket{job="x",le!="+Inf"}[5m])) > bool 0 '
            'unless on (instance) (b == 1) or max without (state) (c{state=~"p|q"}) / 1e3'),
            {"a_bucket", "b", "c"})
        self.assertEqual(metric_names('time() - x_seconds offset 5m and ignoring(z) y'),
                         {"x_seconds", "y"})
        self.assertEqual(metric_names('histogram_quantile(0.99, sum(rate(h_bucket[1m])) by (le))'),
                         {"h_bucket"})

    def test_rules_name_only_metrics_in_the_agents_source(self):
        usable = usable_names(families_from_source()) | PROMETHEUS_NAMES
        for r in load_rules():
            names = metric_names(r["expr"])
            self.assertTrue(names, r["alert"])
            self.assertEqual(names - usable, set(), "%s names unknown metrics" % r["alert"])

    def dashboard(self):
        with open(DASHBOARD, encoding="utf-8") as f:
            return json.load(f)

    def dashboard_targets(self):
        def walk(panels):
            for p in panels:
                yield p
                yield from walk(p.get("panels", []))
        for p in walk(self.dashboard()["panels"]):
            for t in p.get("targets", []):
                yield p, t

    def test_dashboard_is_a_grafana_dashboard_with_datasource_and_instance_variables(self):
        d = self.dashboard()
        self.assertGreaterEqual(d["schemaVersion"], 36)   # Grafana 9 and later
        self.assertTrue(d["title"] and d["uid"])
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        self.assertEqual(variables["datasource"]["query"], "prometheus")
        inst = variables["instance"]
        self.assertEqual(inst["type"], "query")
        self.assertEqual(inst["datasource"]["uid"], "${datasource}")
        q = inst["query"]["query"] if isinstance(inst["query"], dict) else inst["query"]
        m = re.fullmatch(r"label_values\((\w+),\s*instance\)", q)
        self.assertTrue(m, q)
        self.assertIn(m.group(1), usable_names(families_from_source()))
        panels = {p["id"] for p, _ in self.dashboard_targets()}
        self.assertGreaterEqual(len(panels), 15)
        all_ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(all_ids), len(set(all_ids)), "panel ids repeat")
        for p, t in self.dashboard_targets():
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            self.assertEqual(t["datasource"]["uid"], "${datasource}", p["title"])
            self.assertIn('instance=~"$instance"', t["expr"], p["title"])
        # the rows the dashboard promises
        rows = {p["title"] for p in d["panels"] if p["type"] == "row"}
        for r in ("Sync health", "Source connections", "Groups", "Change latency", "Subscribers",
                  "Pause and agents"):
            self.assertIn(r, rows)

    def test_dashboard_expressions_parse_and_name_only_exported_metrics(self):
        fams = families_from_source()
        usable = usable_names(fams)
        rules, seen = [], set()
        for p, t in self.dashboard_targets():
            expr = grafana_to_promql(t["expr"])
            self.assertNotIn("$", expr, p["title"])
            self.assertNotIn("__name__", expr, p["title"])
            names = metric_names(expr)
            self.assertTrue(names, "%s: %s names no metric" % (p["title"], expr))
            self.assertEqual(names - usable, set(), "%s: %s" % (p["title"], expr))
            seen |= names
            if "_bucket" in expr:
                # a histogram's buckets go through histogram_quantile or a heatmap, by le
                self.assertRegex(expr, r"by \([^)]*\ble\b", p["title"])
            rules.append({"record": "dashboard:panel_%d_%s" % (p["id"], t["refId"]), "expr": expr})
        # promtool parses every expression (as recording rules)
        tmp = tempfile.mkdtemp(prefix="gwsync-prom-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "dashboard.rules.yml")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        r = promtool("check", "rules", path)
        self.assertEqual(r.returncode, 0, r.stdout)
        # the dashboard shows the metrics the brief asks for
        for must in ("gwsync_healthy", "gwsync_sync_paused", "gwsync_group_items",
                     "gwsync_change_latency_seconds_bucket", "gwsync_subscriber_groups_behind",
                     "gwsync_source_errors_total", "gwsync_source_repairs_total",
                     "gwsync_source_connection_state"):
            self.assertIn(must, seen)


def slug(heading):
    """GitHub's anchor for a Markdown heading."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


class Agent(harness.IntegrationTest):
    """The rules against what a running gwsyncd really exports."""

    def setUp(self):
        require_tools()

    def http_agent(self, emu, fail_flag, out):
        port = harness.free_port()
        cfg = emu.config(status={"listen": "127.0.0.1:%d" % port, "token": TOKEN},
                         subscribers=[recorder(out, fail_flag)], retry=FAST_RETRY,
                         log_level="info")
        d = self.daemon(cfg)
        s = Scraper(port)
        harness.wait_until(lambda: _try(lambda: s.value("gwsync_healthy") == 1), timeout=30,
                           message="the agent healthy")
        s.wait("gwsync_subscriber_groups_behind", lambda v: v == 0, "in step", subscriber="rec")
        return d, s

    def test_a_real_scrape_exports_what_the_source_says_and_passes_promtool_check_metrics(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        _, s = self.http_agent(emu, os.path.join(tmp, "fail"), os.path.join(tmp, "rec.txt"))
        _, text = s.scrape()
        fams, samples = parse_scrape(text)
        source = families_from_source()
        self.assertEqual(fams, source, "metrics.c and a real scrape disagree on the families")
        # every sample belongs to a family under its own name or a histogram's suffix
        usable = usable_names(fams)
        self.assertEqual({n for n, _, _ in samples} - usable, set())
        for fam, typ in fams.items():
            if typ == "histogram":
                names = {n for n, _, _ in samples}
                self.assertTrue({fam + "_bucket", fam + "_sum", fam + "_count"} <= names)
                self.assertNotIn(fam, names)
        # what the rules and the dashboard use is in the scrape
        used = set()
        for r in load_rules():
            used |= metric_names(r["expr"])
        with open(DASHBOARD, encoding="utf-8") as f:
            for expr in re.findall(r'"expr": "((?:\\.|[^"\\])*)"', f.read()):
                used |= metric_names(grafana_to_promql(json.loads('"%s"' % expr)))
        self.assertEqual(used - usable - PROMETHEUS_NAMES, set())
        r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_rules_on_real_scrapes_of_a_long_polling_agent(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        flag = os.path.join(tmp, "fail")
        d, s = self.http_agent(emu, flag, os.path.join(tmp, "rec.txt"))
        url = emu.url
        tests = []

        # healthy: polls answered, every subscriber in step
        tests.append(firing_test("healthy", scrape_series(*s.pair(
            "gwsync_source_last_success_timestamp_seconds", connection=url)), {}))

        # the subscriber refuses: 3 and more rejections in a row, behind
        open(flag, "w").close()
        emu.upsert("RULE", rule_item("m-1"))
        s.wait("gwsync_subscriber_consecutive_failures", lambda v: v >= 3, "3 rejections",
               subscriber="rec")
        pair = s.pair("gwsync_subscriber_apply_failures_total", timeout=30, subscriber="rec")
        tests.append(firing_test("a subscriber refusing", scrape_series(*pair),
                                 {"GwsyncSubscriberRefusing": 1, "GwsyncSubscriberBehind": 1}))

        # paused, with a change waiting: behind by design, GwsyncPaused only
        os.unlink(flag)
        emu.upsert("RULE", rule_item("m-2"))   # delivered at once, ending the failure run
        s.wait("gwsync_subscriber_groups_behind", lambda v: v == 0, "in step again",
               subscriber="rec")
        s.post("/sync/pause")
        emu.upsert("RULE", rule_item("m-3"))
        s.wait("gwsync_subscriber_groups_behind", lambda v: v >= 1, "behind while paused",
               subscriber="rec")
        tests.append(firing_test("paused", scrape_series(*s.pair(
            "gwsync_source_last_success_timestamp_seconds", connection=url)),
            {"GwsyncPaused": 1}))
        s.post("/sync/resume")

        # the admin gone: its connection down, nothing syncing
        emu.kill()
        s.wait("gwsync_source_consecutive_failures", lambda v: v >= 1, "a failed try",
               connection=url)
        tests.append(firing_test("the admin down", scrape_series(*s.pair(
            "gwsync_source_consecutive_failures", connection=url)),
            {"GwsyncSourceDisconnected": 1, "GwsyncNotSyncing": 1}))
        run_rule_tests(self, tests, self.tmpdir())
        self.assertTrue(d.alive())

    def ws_agent(self, emus, **websocket):
        port = harness.free_port()
        cfg = harness.make_config(
            servers=["ws://127.0.0.1:%d/websocket" % e.port for e in emus],
            groups=harness.SHENYU_GROUPS, retry=FAST_RETRY, log_level="info",
            status={"listen": "127.0.0.1:%d" % port},
            admin_extra={"websocket": websocket} if websocket else None)
        d = self.daemon(cfg)
        s = Scraper(port)
        harness.wait_until(lambda: _try(lambda: s.value("gwsync_healthy") == 1), timeout=30,
                           message="the agent healthy")
        return d, s

    def test_rules_on_real_scrapes_of_a_websocket_agent(self):
        emu = self.emulator(mode="shenyu")
        d, s = self.ws_agent([emu], resync_interval="1s")
        conn = "ws://127.0.0.1:%d/websocket" % emu.port
        s.wait("gwsync_source_connection_state", lambda v: v == 1, "connected",
               connection=conn, state="connected")
        tests = [firing_test("connected, quiet", scrape_series(*s.pair()), {})]

        # an event the admin never pushes: the next full sync repairs it
        first = s.scrape()
        emu.control("upsert", {"group": "RULE", "item": rule_item("lost-event"), "push": False})
        s.wait("gwsync_source_repairs_total", lambda v: v >= 1, "a repair", connection=conn)
        tests.append(firing_test("a repair", scrape_series(first, s.scrape()),
                                 {"GwsyncRepairsFound": 1}))
        run_rule_tests(self, tests, self.tmpdir())
        self.assertTrue(d.alive())

    def test_a_shenyu_cluster_non_master_admin_is_no_alert(self):
        master = self.emulator(mode="shenyu", ws_running_mode="cluster")
        other = self.emulator(mode="shenyu", ws_running_mode="cluster", ws_not_master=True,
                              ws_master_url="http://127.0.0.1:%d" % master.port)
        d, s = self.ws_agent([master, other])
        conn = "ws://127.0.0.1:%d/websocket" % other.port
        s.wait("gwsync_source_errors_total", lambda v: v >= 1, "the non-master refused",
               connection=conn, reason="code")
        pair = s.pair("gwsync_source_errors_total", timeout=30, connection=conn, reason="code")
        # the master's connection works; the other one is down, and left out on purpose
        self.assertEqual(s.value("gwsync_source_connection_state", state="connected",
                                 connection="ws://127.0.0.1:%d/websocket" % master.port), 1)
        tests = [firing_test("2.7 cluster", scrape_series(*pair), {})]
        run_rule_tests(self, tests, self.tmpdir())
        self.assertTrue(d.alive())

    def test_rules_on_real_scrapes_of_an_etcd_agent(self):
        import test_etcd_source as ets   # its etcd member and ShenYu-shaped items
        if not os.access(ets.ETCD, os.X_OK):
            self.skipTest("etcd is not installed (apt install etcd-server)")
        etcd = ets.Etcd(self.tmpdir()).start()
        self.addCleanup(etcd.close)
        etcd.put(ets.ROOT + "/plugin/divide", ets.plugin("divide", "5"))
        etcd.put(ets.ROOT + "/selector/divide/100", ets.selector("100", "divide", "s1"))
        etcd.put(ets.ROOT + "/rule/divide/100-200", ets.rule("200", "100", "divide"))
        port = harness.free_port()
        d = self.daemon(ets.etcd_config([etcd.public_url], self.tmpdir(), log_level="info",
                                        status={"listen": "127.0.0.1:%d" % port}))
        s = Scraper(port)
        harness.wait_until(lambda: _try(lambda: s.value("gwsync_healthy") == 1), timeout=30,
                           message="the agent healthy")
        s.wait("gwsync_source_connection_state", lambda v: v == 1, "watching", type="etcd",
               state="connected")
        # connected and quiet: its last success (the watch's creation) stays where it was,
        # and that is no alert
        tests = [firing_test("etcd connected", scrape_series(*s.pair()), {})]
        etcd.close()
        s.wait("gwsync_source_consecutive_failures", lambda v: v >= 1, "a failed try",
               type="etcd")
        tests.append(firing_test("etcd gone", scrape_series(*s.pair(
            "gwsync_source_consecutive_failures", type="etcd")),
            {"GwsyncSourceDisconnected": 1, "GwsyncNotSyncing": 1}))
        run_rule_tests(self, tests, self.tmpdir())
        self.assertTrue(d.alive())

    def test_make_install_ships_them_and_the_installed_tests_pass(self):
        build = os.environ.get("GWSYNC_BUILDDIR")
        if not build:
            self.skipTest("needs GWSYNC_BUILDDIR (run through make check)")
        dest = self.tmpdir()
        r = subprocess.run(["make", "-s", "-C", build, "install-prometheusDATA", "DESTDIR=" + dest],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)
        found = [root for root, _, files in os.walk(dest) if "gwsync.rules.yml" in files]
        self.assertEqual(len(found), 1, found)
        self.assertTrue(found[0].endswith(os.path.join("gwsync", "prometheus")), found[0])
        self.assertEqual(sorted(os.listdir(found[0])),
                         ["README.md", "gwsync-dashboard.json", "gwsync.rules.test.yml",
                          "gwsync.rules.yml"])
        r = promtool("test", "rules", "gwsync.rules.test.yml", cwd=found[0])
        self.assertEqual(r.returncode, 0, r.stdout)


def _try(fn):
    try:
        return fn()
    except (OSError, AssertionError):
        return None


if __name__ == "__main__":
    harness.main()
