"""HTTP clients for the end-to-end gateway tests: one keep-alive client, and a paced
keep-alive load generator that records every response.

Built on http.client (standard library) rather than wrk: the tests need every single
response with its send and receive times and which upstream (and, through the gateway's
debug headers, which selector and rule) answered it, which wrk's Lua hooks can only
approximate. A few hundred requests per second, what the tests ask for, is well within
what paced Python threads reach on one core; pacing (rather than "as fast as possible")
keeps the machine's second core free for gwsyncd and the emulator, whose latency is what
is being measured.
"""
import http.client
import json
import socket
import threading
import time

# Names of the gateway's debug headers (gateway.configure{debug_headers=true}).
SELECTOR_HEADER = "X-Gwsync-Selector"
RULE_HEADER = "X-Gwsync-Rule"
GENERATION_HEADER = "X-Gwsync-Generation"   # the cache generation the route table reflects


class Answer:
    """One response: status, headers, body, and what the test asks about it."""

    __slots__ = ("status", "headers", "body", "doc", "t0", "t1", "kind", "client", "error")

    def __init__(self, status=None, headers=None, body=b"", t0=0.0, t1=0.0, kind=None,
                 client=None, error=None):
        self.status = status
        self.headers = headers or {}
        self.body = body
        self.t0, self.t1, self.kind, self.client, self.error = t0, t1, kind, client, error
        self.doc = None
        if body[:1] == b"{":
            try:
                self.doc = json.loads(body.decode("utf-8"))
            except ValueError:
                self.doc = None

    def header(self, name):
        return self.headers.get(name.lower())

    @property
    def upstream(self):
        """The upstream server that answered (its X-Upstream header), or None."""
        return self.header("X-Upstream")

    @property
    def code(self):
        """The `code` of a ShenYu-style JSON error body, or None."""
        if self.upstream is None and isinstance(self.doc, dict):
            return self.doc.get("code")
        return None

    @property
    def message(self):
        return self.doc.get("message") if isinstance(self.doc, dict) else None

    @property
    def selector(self):
        return self.header(SELECTOR_HEADER)

    @property
    def rule(self):
        return self.header(RULE_HEADER)

    @property
    def generation(self):
        """The cache generation of the route table that answered, or None."""
        g = self.header(GENERATION_HEADER)
        return int(g) if g is not None and g.isdigit() else None

    @property
    def echo(self):
        """What the upstream received ({method, path, query, host}), or None."""
        return self.doc if self.upstream is not None else None

    def outcome(self):
        """("up", upstream) for a proxied answer, ("code", n) for a JSON error, else
        ("status", http status) / ("error", text)."""
        if self.error is not None:
            return ("error", self.error)
        if self.upstream is not None:
            return ("up", self.upstream)
        if self.code is not None:
            return ("code", self.code)
        return ("status", self.status)

    def __repr__(self):
        return "<%s %s sel=%s rule=%s body=%r>" % (self.status, self.outcome(), self.selector,
                                                    self.rule, self.body[:160])


class Client:
    """One keep-alive HTTP/1.1 connection to the gateway. request() takes headers as a
    list of (name, value) pairs so a test can send a header twice or in a given order;
    a Host header given there replaces the default one."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None

    def _connect(self):
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self.conn.connect()
        self.conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, method, path, headers=(), body=None, kind=None):
        headers = list(headers)
        for attempt in (0, 1):
            if self.conn is None:
                self._connect()
            t0 = time.monotonic()
            try:
                return self._once(method, path, headers, body, t0, kind)
            except (http.client.HTTPException, OSError) as e:
                self.close()
                # A keep-alive connection the server closed between two requests: one
                # retry on a fresh connection; a second failure is a real failure.
                if attempt == 1:
                    return Answer(t0=t0, t1=time.monotonic(), kind=kind,
                                  error="%s: %s" % (type(e).__name__, e))
        return None

    def _once(self, method, path, headers, body, t0, kind):
        names = {name.lower() for name, _ in headers}
        self.conn.putrequest(method, path, skip_host="host" in names,
                             skip_accept_encoding=True)
        for name, value in headers:
            self.conn.putheader(name, value)
        if body is not None:
            if isinstance(body, str):
                body = body.encode("utf-8")
            if "content-length" not in names:
                self.conn.putheader("Content-Length", str(len(body)))
        self.conn.endheaders(body)
        resp = self.conn.getresponse()
        data = resp.read()
        t1 = time.monotonic()
        hdrs = {k.lower(): v for k, v in resp.getheaders()}
        if resp.will_close:
            self.close()
        return Answer(resp.status, hdrs, data, t0, t1, kind)

    def get(self, path, headers=(), **kw):
        return self.request("GET", path, headers, **kw)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class LoadGenerator:
    """`clients` threads, each with its own keep-alive connection, sending the request
    `specs` round-robin at `rate` requests per second in total (paced, no catch-up bursts
    beyond one interval), recording every Answer with its send (t0) and receive (t1)
    time.monotonic() stamps. A spec is {"kind", "method", "path", "headers"}.

        with LoadGenerator(port, specs, clients=3, rate=450) as load:
            ...                          # make changes
        answers = load.answers           # every response, all clients
    """

    def __init__(self, port, specs, clients=3, rate=450.0):
        self.port = port
        self.specs = list(specs)
        self.clients = clients
        self.rate = float(rate)
        self._stop = threading.Event()
        self._threads = []
        self._per_client = [[] for _ in range(clients)]
        self.started = self.stopped = None

    def _run(self, index):
        client = Client(self.port)
        out = self._per_client[index]
        interval = self.clients / self.rate
        next_at = time.monotonic() + interval * index / self.clients
        n = index
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if next_at > now:
                    time.sleep(next_at - now)
                next_at = max(next_at + interval, time.monotonic() - interval)
                spec = self.specs[n % len(self.specs)]
                n += 1
                a = client.request(spec.get("method", "GET"), spec["path"],
                                   spec.get("headers", ()), kind=spec.get("kind"))
                a.client = index
                out.append(a)
        finally:
            client.close()

    def start(self):
        self.started = time.monotonic()
        for i in range(self.clients):
            t = threading.Thread(target=self._run, args=(i,), daemon=True, name="load-%d" % i)
            t.start()
            self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(15)
        self.stopped = time.monotonic()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def snapshot_count(self):
        """Responses recorded so far (safe to call while running: list lengths only)."""
        return sum(len(x) for x in self._per_client)

    def answers_since(self, t):
        """Answers sent at or after monotonic time t (a copy; fine while running)."""
        return [a for lst in self._per_client for a in list(lst) if a.t0 >= t]

    @property
    def answers(self):
        return sorted((a for lst in self._per_client for a in lst), key=lambda a: a.t0)

    def rate_report(self):
        """(total, seconds, mean rate, lowest rate over any whole second, longest gap
        between two consecutive responses of all clients) for the recorded run."""
        answers = self.answers
        if not answers:
            return 0, 0.0, 0.0, 0.0, 0.0
        t_first, t_last = answers[0].t1, max(a.t1 for a in answers)
        seconds = max(t_last - t_first, 1e-9)
        buckets = {}
        for a in answers:
            buckets[int(a.t1 - t_first)] = buckets.get(int(a.t1 - t_first), 0) + 1
        whole = [buckets.get(i, 0) for i in range(int(seconds))]
        ends = sorted(a.t1 for a in answers)
        gap = max((b - a for a, b in zip(ends, ends[1:])), default=0.0)
        return len(answers), seconds, len(answers) / seconds, min(whole) if whole else 0.0, gap
