#!/usr/bin/env python3
"""The status page at / (issue 24) in a real browser: Debian's headless Chromium, driven
through chromedriver's WebDriver HTTP API with the standard library, loads the page from a
running agent; a change made at the admin shows up in the DOM by itself (the group's new
version in its row, the change in the timeline with the subscriber's outcome); the page's
script and style run under the Content-Security-Policy the agent sends (no 'unsafe-inline':
their SHA-256 are in it); the HTML as served names nothing outside itself and already shows
the state without JavaScript. A screenshot is kept in the build tree as
test-artifacts/status-page.png. Skips (77) without chromium and chromium-driver."""
import base64
import hashlib
import html.parser
import json
import os
import shutil
import subprocess
import time
import unittest

import harness
import synclog
from test_status import Endpoint, recorder, in_step

# Chromium as root, on a machine whose network is closed: no sandbox (root), no GPU, and
# none of the background traffic (updates, sync, QUIC probes) that would only be refused.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--disable-default-apps", "--disable-extensions", "--window-size=1280,1500"]


def find(*names):
    for n in names:
        p = shutil.which(n) or (n if os.access(n, os.X_OK) else None)
        if p:
            return p
    return None


class WebDriver:
    """chromedriver on a free port and one session, spoken to with urllib."""

    def __init__(self, tmp):
        self.chromium = find("chromium", "/usr/bin/chromium")
        self.driver = find("chromedriver", "/usr/bin/chromedriver")
        if not self.chromium or not self.driver:
            raise unittest.SkipTest("chromium and chromium-driver are not installed "
                                    "(apt-get install chromium chromium-driver)")
        self.tmp = tmp
        self.port = harness.free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        # Chromium keeps temporary files in TMPDIR: ours, removed with the test
        env = dict(os.environ, TMPDIR=tmp, HOME=tmp)
        self.log = open(os.path.join(tmp, "chromedriver.log"), "wb")
        self.proc = subprocess.Popen([self.driver, "--port=%d" % self.port,
                                      "--log-path=" + os.path.join(tmp, "chromedriver-verbose.log")],
                                     stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL,
                                     env=env)
        self.session = None
        harness.wait_until(self._ready, timeout=30, interval=0.1, message="chromedriver")

    def _ready(self):
        try:
            return self.call("GET", "/status")["value"]["ready"]
        except (OSError, ValueError, KeyError):
            return False

    def call(self, method, path, body=None, timeout=60):
        st, _, data = harness.http_request(method, self.base + path, body, timeout=timeout)
        doc = json.loads(data.decode("utf-8") or "{}")
        if st != 200:
            raise AssertionError("WebDriver %s %s: HTTP %d %s" % (method, path, st, doc))
        return doc

    def start(self, javascript=True):
        args = CHROMIUM_FLAGS + ["--user-data-dir=" + os.path.join(self.tmp, "profile-%d" % javascript)]
        if not javascript:
            args.append("--blink-settings=scriptEnabled=false")
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"}}}}
        self.session = self.call("POST", "/session", caps, timeout=90)["value"]["sessionId"]
        return self

    def s(self, path):
        return "/session/%s%s" % (self.session, path)

    def get(self, url):
        self.call("POST", self.s("/url"), {"url": url})

    def js(self, script, *args):
        return self.call("POST", self.s("/execute/sync"), {"script": script, "args": list(args)})["value"]

    def console(self):
        try:
            return self.call("POST", self.s("/se/log"), {"type": "browser"})["value"]
        except AssertionError:
            return []

    def screenshot(self, path):
        png = base64.b64decode(self.call("GET", self.s("/screenshot"))["value"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return png

    def close(self):
        if self.session:
            try:
                self.call("DELETE", self.s(""), timeout=30)
            except Exception:
                pass
            self.session = None
        harness._stop_process(self.proc)
        self.log.close()


# What the page shows, read from the DOM.
DOM = """
const row = document.getElementById('group-' + arguments[0]);
const md5 = row && row.querySelector('.md5');
const changes = Array.from(document.querySelectorAll('#timeline li.change')).map(li => ({
  group: li.dataset.group, md5: li.dataset.md5,
  counts: li.querySelector('.counts').textContent,
  keys: li.querySelector('.keys').textContent,
  outcomes: Array.from(li.querySelectorAll('.outcomes li')).map(o => o.textContent)}));
return {md5: md5 ? md5.dataset.md5 : null, changes: changes,
        lastModifyTime: row ? row.children[2].textContent : null,
        refreshed: document.getElementById('refreshed').textContent,
        headerDisplay: getComputedStyle(document.querySelector('header')).display,
        subscriber: (document.getElementById('subscriber-rec') || {}).textContent || null,
        paused: document.getElementById('overview').textContent};
"""


class Attributes(html.parser.HTMLParser):
    """Every tag and attribute of a page, and the text of its <script> and <style>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.inline = [], [], {}
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend((tag, k, v) for k, v in attrs)
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in:
            self.inline[self._in] = self.inline.get(self._in, "") + data


class StatusPage(harness.IntegrationTest):

    def test_the_page_shows_a_change_by_itself_under_a_strict_policy(self):
        tmp = self.tmpdir()
        wd = WebDriver(tmp)
        self.addCleanup(wd.close)
        emu = self.emulator(mode="shenyu", hold=30)
        ep = Endpoint(harness.free_port())
        d = self.daemon(emu.config(status={"listen": ep.listen}, retry=(2, "200ms", "1s"),
                                   log_level="info",
                                   subscribers=[recorder(os.path.join(tmp, "rec.txt"))]))
        ep.wait_status(in_step, message="in step")

        # the HTML as served: the state without JavaScript, and nothing from elsewhere
        st, hdrs, body = ep.get("/")
        self.assertEqual(st, 200, body)
        self.assertEqual(hdrs.get("Content-Type"), "text/html; charset=utf-8")
        page = body.decode("utf-8")
        parsed = Attributes()
        parsed.feed(page)
        csp = hdrs.get("Content-Security-Policy", "")
        self.assertIn("default-src 'none'", csp)
        self.assertNotIn("unsafe", csp)
        self.assertIn("connect-src 'self'", csp)
        for kind in ("script", "style"):
            digest = base64.b64encode(hashlib.sha256(parsed.inline[kind].encode()).digest()).decode()
            self.assertIn("%s-src 'sha256-%s'" % (kind, digest), csp)
        self.assertEqual(hdrs.get("X-Content-Type-Options"), "nosniff")
        self.assertEqual(parsed.tags.count("script"), 1)
        self.assertEqual(parsed.tags.count("style"), 1)
        self.assertNotIn("link", parsed.tags)
        self.assertNotIn("iframe", parsed.tags)
        self.assertNotIn("img", parsed.tags)
        external = [(t, k, v) for t, k, v in parsed.attrs
                    if k in ("src", "href", "action", "formaction", "srcset", "poster", "data",
                             "style", "background") or k.startswith("on")]
        self.assertEqual(external, [])
        self.assertNotRegex(parsed.inline["style"], r"@import|url\(")
        self.assertNotRegex(parsed.inline["script"], r"https?://|import\(|innerHTML")
        held = emu.group("RULE")["md5"]
        self.assertRegex(page, r'<tr id="group-RULE">.*data-md5="%s"' % held)
        self.assertIn('id="subscriber-rec"', page)
        self.assertIn("in step", page)
        self.assertRegex(page, r'<li class="change" data-group="RULE" data-md5="%s">' % held)
        # for a person (issue 31, item 16): lastModifyTime a date, not epoch milliseconds;
        # the header's line without the healthy agent's stray "ok"
        lmt = time.strftime("%Y-%m-%d %H:%M:%SZ",
                            time.gmtime(emu.group("RULE")["lastModifyTime"] // 1000))
        self.assertRegex(page, r'<tr id="group-RULE">.*?<td>%s</td>' % lmt)
        overview = page[page.index('<div id="overview">'):]
        overview = overview[:overview.index("</div>")]
        self.assertNotRegex(overview, r">ok</span>")

        # in the browser: the agent's render, then the script keeps it fresh
        wd.start()
        wd.get(ep.base + "/")
        now = wd.js(DOM, "RULE")
        self.assertEqual(now["md5"], held)
        self.assertEqual(now["lastModifyTime"], lmt)
        self.assertEqual(now["headerDisplay"], "flex")  # the style ran
        harness.wait_until(lambda: wd.js(DOM, "RULE")["refreshed"].startswith("refreshed "),
                           timeout=30, message="the script refreshing the page")

        v = emu.upsert("RULE", synclog.rule("page-1"))
        seen = {}

        def shows_it():
            dom = wd.js(DOM, "RULE")
            seen["last"] = dom
            top = dom["changes"][0] if dom["changes"] else {}
            return dom["md5"] == v["md5"] and top.get("md5") == v["md5"] and \
                any(o.startswith("rec: applied") for o in top.get("outcomes", ())) and dom
        try:
            dom = harness.wait_until(shows_it, timeout=30, interval=0.25,
                                     message="the change in the DOM")
        except AssertionError as e:
            raise AssertionError("%s\nlast DOM: %s" % (e, json.dumps(seen.get("last"), indent=1)))
        top = dom["changes"][0]
        self.assertEqual(top["group"], "RULE")
        self.assertEqual(top["counts"], "+1 ~0 -0")
        self.assertEqual(top["keys"], "+page-1 (rule)")  # the rule's name beside its id
        self.assertIn("in step", dom["subscriber"])
        self.assertIn("delivering", dom["paused"])
        self.assertFalse(dom["paused"].rstrip().endswith("ok"), dom["paused"])
        self.assertEqual(dom["lastModifyTime"],
                         time.strftime("%Y-%m-%d %H:%M:%SZ",
                                       time.gmtime(v["lastModifyTime"] // 1000)))
        violations = [m for m in wd.console() if "Content Security Policy" in m.get("message", "")]
        self.assertEqual(violations, [])

        out = os.path.join(harness.BUILDDIR or tmp, "test-artifacts", "status-page.png")
        png = wd.screenshot(out)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        print("screenshot: %s" % out)

        # without JavaScript the browser shows what the agent rendered, the change included
        wd.call("DELETE", wd.s(""))
        wd.session = None
        wd.start(javascript=False)
        wd.get(ep.base + "/")
        md5 = self.element_attr(wd, "#group-RULE .md5", "data-md5")
        self.assertEqual(md5, v["md5"])
        self.assertEqual(self.element_attr(wd, "#timeline li.change", "data-md5"), v["md5"])
        self.assertIn("as served", self.element_text(wd, "#refreshed"))

    @staticmethod
    def element(wd, css):
        found = wd.call("POST", wd.s("/element"), {"using": "css selector", "value": css})["value"]
        return next(iter(found.values()))

    def element_attr(self, wd, css, name):
        return wd.call("GET", wd.s("/element/%s/attribute/%s" % (self.element(wd, css), name)))["value"]

    def element_text(self, wd, css):
        return wd.call("GET", wd.s("/element/%s/text" % self.element(wd, css)))["value"]


if __name__ == "__main__":
    harness.main()
