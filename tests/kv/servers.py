"""Real ZooKeeper and etcd servers for the path-store tests (issue 12), standard library only.

Each server runs as a child process on free loopback ports with its own temporary data
directory; everything is stopped and removed when the test process ends (atexit), even if
a test forgets. Starting a JVM or an etcd cluster takes seconds, so a test FILE starts one
(class-level, setUpClass) and its tests share it, each under its own namespace/root.

    zk = servers.ZooKeeper(members=3).start()     # or members=1: standalone
    zk.connect_string                              # "127.0.0.1:p1,127.0.0.1:p2,..."
    zk.leader()                                    # index of the member in Mode: leader
    zk.kill(i); zk.start_member(i); zk.restart(i)  # one member
    et = servers.Etcd(members=3).start()
    et.endpoints                                   # ["http://127.0.0.1:p", ...]
    et.leader(); et.compact(); et.revision()

Faults that need the agent's side (a ZooKeeper session expiry) are in expire_zk_session():
the agent's process is stopped (SIGSTOP) until the server has expired its session, which
is what a long GC pause or a frozen VM does to a real client; the session password a
kazoo "steal the session" trick would need is never shown by the agent.

Skips: require_zookeeper() / require_etcd() raise unittest.SkipTest naming what is missing
(the Debian packages zookeeper + default-jre-headless + python3-kazoo, etcd-server).
"""
import atexit
import base64
import glob
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

KEEP_TMP = os.environ.get("GWSYNC_KEEP_TMP") == "1"
# GWSYNC_JAVA / GWSYNC_ETCD name other binaries (a server installed elsewhere)
JAVA = os.environ.get("GWSYNC_JAVA") or shutil.which("java") or "/usr/bin/java"
ETCD = os.environ.get("GWSYNC_ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
ZK_JAR_DIRS = ("/usr/share/java", "/usr/share/zookeeper", "/usr/share/zookeeper/lib")

_live = []  # every started server object, stopped at exit


# kazoo logs every connection a test breaks on purpose; only its errors matter here
logging.getLogger("kazoo").setLevel(logging.ERROR)


def _stop_all():
    for s in list(_live):
        try:
            s.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


atexit.register(_stop_all)


# ---------------------------------------------------------------------- small helpers
def free_port():
    return free_ports(1)[0]


def free_ports(n):
    """n distinct free ports, below the kernel's ephemeral range (harness.free_ports says
    why: no client socket of a concurrent test can take one before the server binds it)."""
    import harness
    return harness.free_ports(n)


def wait_until(predicate, timeout, message, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, message))
        time.sleep(interval)


def _kill(proc, sig=signal.SIGTERM, timeout=10.0):
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(sig)
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except ProcessLookupError:
        pass


def _tail(path, n=30):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------------- ZooKeeper
def zookeeper_jar():
    """The ZooKeeper server jar of Debian's package (its manifest's Class-Path names the
    jars it needs), or None."""
    for d in ZK_JAR_DIRS:
        for name in ("zookeeper.jar",) + tuple(sorted(
                os.path.basename(p) for p in glob.glob(os.path.join(d, "zookeeper-3*.jar")))):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
    return None


def require_zookeeper():
    missing = []
    if not os.access(JAVA, os.X_OK):
        missing.append("a Java runtime (default-jre-headless)")
    if zookeeper_jar() is None:
        missing.append("the ZooKeeper server (Debian package zookeeper)")
    try:
        import kazoo.client  # noqa: F401
    except ImportError:
        missing.append("kazoo (python3-kazoo, for /usr/bin/python3)")
    if missing:
        raise unittest.SkipTest("ZooKeeper tests need " + ", ".join(missing))


def four_letter(port, cmd, timeout=2.0):
    """A ZooKeeper four-letter word ("ruok", "srvr", "mntr"...): the answer, "" on error."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(cmd.encode("ascii"))
            chunks = []
            while True:
                b = s.recv(4096)
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


class _Members:
    """What a ZooKeeper ensemble and an etcd cluster share: members as processes
    (self.procs, self.n, self.tmp), started together and waited for, stopped, killed and
    restarted one by one, closed with everything removed. A subclass gives KIND (for
    messages), start_member(i), serving(i), describe(i) and leader()."""
    KIND = "server"

    def describe(self, i):
        raise NotImplementedError

    def wait_serving(self, i, timeout=60.0):
        def ok():
            if self.procs[i].poll() is not None:
                raise AssertionError("%s member %d exited with %s\n%s"
                                     % (self.KIND, i, self.procs[i].returncode,
                                        _tail(self.log_path(i))))
            return self.serving(i)
        wait_until(ok, timeout, "%s member %d %s" % (self.KIND, i, self.describe(i)))

    def _start_all(self, timeout):
        _live.append(self)
        for i in range(self.n):
            self.start_member(i, wait=False)
        for i in range(self.n):
            self.wait_serving(i, timeout)

    def alive(self, i):
        return self.procs[i] is not None and self.procs[i].poll() is None

    def stop_member(self, i, sig=signal.SIGTERM):
        _kill(self.procs[i], sig)

    def kill(self, i):
        """SIGKILL member i: connections are reset, nothing is shut down cleanly."""
        self.stop_member(i, signal.SIGKILL)

    def restart(self, i=0, down_s=0.0):
        """Stop member i, keep it down down_s seconds, start it again (same ports, data)."""
        self.stop_member(i)
        if down_s:
            time.sleep(down_s)
        self.start_member(i)

    def close(self):
        for i in range(self.n):
            _kill(self.procs[i], signal.SIGKILL)
        if self in _live:
            _live.remove(self)
        if not KEEP_TMP:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def kill_leader(self):
        i = self.leader()
        self.kill(i)
        return i


class ZooKeeper(_Members):
    """A ZooKeeper standalone server (members=1) or ensemble (members=3), Debian's jars.

    tick_ms bounds session timeouts to 2..20 ticks unless min/max_session_ms are given: the
    defaults (tick 200 ms, sessions 400 ms .. 10 s) keep expiry tests fast while an
    agent's default 30 s session is simply cut to 10 s by the server."""

    KIND = "ZooKeeper"

    def describe(self, i):
        return "on port %d" % self.client_port(i)

    def __init__(self, members=1, tick_ms=200, min_session_ms=400, max_session_ms=10000):
        self.n = members
        self.tick_ms = tick_ms
        self.min_session_ms = min_session_ms
        self.max_session_ms = max_session_ms
        self.tmp = tempfile.mkdtemp(prefix="gwsync-zk-")
        self.ports = [tuple(free_ports(3)) for _ in range(members)]  # client, peer, election
        self.procs = [None] * members
        self._clients = []

    # -------------------------------------------------------------- addresses
    def client_port(self, i=0):
        return self.ports[i][0]

    @property
    def servers(self):
        """["127.0.0.1:port", ...]: the agent's zookeeper.servers."""
        return ["127.0.0.1:%d" % p[0] for p in self.ports]

    @property
    def connect_string(self):
        return ",".join(self.servers)

    def member_dir(self, i):
        return os.path.join(self.tmp, "m%d" % i)

    # -------------------------------------------------------------- lifecycle
    def _write_config(self, i):
        d = self.member_dir(i)
        os.makedirs(os.path.join(d, "data"), exist_ok=True)
        lines = [
            "tickTime=%d" % self.tick_ms,
            "dataDir=%s" % os.path.join(d, "data"),
            "clientPort=%d" % self.ports[i][0],
            "clientPortAddress=127.0.0.1",
            "minSessionTimeout=%d" % self.min_session_ms,
            "maxSessionTimeout=%d" % self.max_session_ms,
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            "maxClientCnxns=0",
            # snapshots and purges stay out of the way of a short test
            "autopurge.purgeInterval=0",
            # fsync costs a 2-core CI box more than a test is worth
            "forceSync=no",
        ]
        if self.n > 1:
            lines += ["initLimit=50", "syncLimit=25", "electionPortBindRetry=50",
                      "cnxTimeout=1000"]
            for k, (_, peer, election) in enumerate(self.ports):
                lines.append("server.%d=127.0.0.1:%d:%d" % (k + 1, peer, election))
            with open(os.path.join(d, "data", "myid"), "w") as f:
                f.write("%d\n" % (i + 1))
        cfg = os.path.join(d, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        return cfg

    def log_path(self, i=0):
        return os.path.join(self.member_dir(i), "server.log")

    def start_member(self, i, wait=True):
        if self.procs[i] is not None and self.procs[i].poll() is None:
            return
        cfg = self._write_config(i)
        main = ("org.apache.zookeeper.server.quorum.QuorumPeerMain" if self.n > 1
                else "org.apache.zookeeper.server.ZooKeeperServerMain")
        classpath = zookeeper_jar()
        simple = "/usr/share/java/slf4j-simple.jar"
        if os.path.isfile(simple):  # its log lines, in server.log, when a test fails
            classpath += ":" + simple
        cmd = [JAVA, "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Xshare:auto", "-Djava.net.preferIPv4Stack=true",
               "-Dzookeeper.jmx.log4j.disable=true", "-Dzookeeper.admin.enableServer=false",
               "-cp", classpath, main, cfg]
        log = open(self.log_path(i), "ab")
        try:
            self.procs[i] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True,
                                             cwd=self.member_dir(i))
        finally:
            log.close()
        if wait:
            self.wait_serving(i)

    def serving(self, i):
        """True once member i answers requests (standalone, leader or follower)."""
        if self.procs[i] is None or self.procs[i].poll() is not None:
            return False
        return self.mode(i) in ("standalone", "leader", "follower")

    def start(self, timeout=90.0):
        require_zookeeper()
        self._start_all(timeout)
        # a client write proves the quorum works, not only that members answer srvr
        c = self.client()
        c.ensure_path("/gwsync-test-ready")
        self.close_client(c)
        return self

    def close(self):
        for c in list(self._clients):
            self.close_client(c)
        _Members.close(self)

    # -------------------------------------------------------------- inspection
    def srvr(self, i):
        return four_letter(self.client_port(i), "srvr")

    def mode(self, i):
        """"standalone", "leader", "follower" or "" (not serving)."""
        for line in self.srvr(i).splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return ""

    def leader(self, timeout=30.0):
        """Index of the member that is leader now (waits for an election to end)."""
        if self.n == 1:
            return 0

        def find():
            for i in range(self.n):
                if self.alive(i) and self.mode(i) == "leader":
                    return (i,)
            return None
        return wait_until(find, timeout, "a ZooKeeper leader")[0]

    def connections(self, i):
        """Client connections member i holds (from `cons`), e.g. to find the agent's one."""
        return [l.strip() for l in four_letter(self.client_port(i), "cons").splitlines()
                if l.strip().startswith("/")]

    # -------------------------------------------------------------- clients
    def client(self, members=None, timeout=30.0):
        """A started kazoo client (closed with the server)."""
        from kazoo.client import KazooClient
        hosts = ",".join(self.servers[i] for i in (members or range(self.n)))
        c = KazooClient(hosts=hosts, timeout=10.0, connection_retry={"max_tries": -1, "delay": 0.1,
                                                                     "max_delay": 1.0})
        c.start(timeout=timeout)
        self._clients.append(c)
        return c

    def close_client(self, c):
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001
            pass
        if c in self._clients:
            self._clients.remove(c)

    def session_count(self, i=0):
        """Sessions the server holds (mntr zk_global_sessions / srvr-less fallback)."""
        for line in four_letter(self.client_port(i), "mntr").splitlines():
            parts = line.split("\t")
            if parts[0] == "zk_global_sessions":
                return int(parts[1])
        return None

    def session_alive(self, session_hex, i=None):
        """True while some member lists the session (`dump` on the leader / standalone)."""
        sid = int(session_hex, 16)
        members = [i] if i is not None else range(self.n)
        for k in members:
            if not self.alive(k):
                continue
            text = four_letter(self.client_port(k), "dump")
            if ("0x%x" % sid) in text.lower():
                return True
        return False


def expire_zk_session(zk, pid, session_hex, timeout=30.0):
    """Make the ZooKeeper server expire the session of the process `pid` (an agent): stop
    the process (SIGSTOP) until the server no longer lists session_hex ("0x..."), then let
    it run on (SIGCONT). On its next contact the client is told its session expired and
    must start a new one. Returns the seconds the process was stopped."""
    t0 = time.monotonic()
    os.kill(pid, signal.SIGSTOP)
    try:
        # `dump` lists sessions on the leader (standalone: the server) only
        leader = zk.leader()
        wait_until(lambda: not zk.session_alive(session_hex, leader), timeout,
                   "ZooKeeper to expire session %s" % session_hex, interval=0.1)
    finally:
        os.kill(pid, signal.SIGCONT)
    return time.monotonic() - t0


# ---------------------------------------------------------------------- etcd
def make_etcd_tls(directory):
    """Certificates for an etcd that asks clients for one: harness.make_test_ca()'s CA
    (and its unrelated "wrong_ca"), a client certificate ("client_cert"/"client_key")
    and a certificate for etcd itself ("cert"/"key") valid for both server and client
    use: etcd's JSON gateway connects to its own gRPC port with it."""
    import harness
    tls = harness.make_test_ca(directory)
    ca_key = os.path.join(directory, "ca.key")

    def issue(name, subject, ext_text):
        key, csr = os.path.join(directory, name + ".key"), os.path.join(directory, name + ".csr")
        cert, ext = os.path.join(directory, name + ".pem"), os.path.join(directory, name + ".ext")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=" + subject)
        with open(ext, "w") as f:
            f.write(ext_text)
        run("x509", "-req", "-in", csr, "-CA", tls["ca"], "-CAkey", ca_key,
            "-CAcreateserial", "-out", cert, "-days", "2", "-extfile", ext)
        return cert, key

    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=60)
    tls["client_cert"], tls["client_key"] = issue("client", "gwsync-client",
                                                  "extendedKeyUsage=clientAuth\n")
    tls["cert"], tls["key"] = issue("etcd", "127.0.0.1",
                                    "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                    "extendedKeyUsage=serverAuth,clientAuth\n")
    return tls


def require_etcd():
    if not os.access(ETCD, os.X_OK):
        raise unittest.SkipTest("etcd tests need the etcd server (Debian package etcd-server)")


def b64(s):
    if isinstance(s, str):
        s = s.encode("utf-8")
    return base64.b64encode(s).decode("ascii")


def unb64(s):
    return base64.b64decode(s or "")


def prefix_end(prefix):
    """etcd's range_end for "every key starting with prefix": its last byte + 1."""
    b = bytearray(prefix.encode("utf-8") if isinstance(prefix, str) else prefix)
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return b"\0"


def _boxed(x):
    """(x,) or None: wait_until() treats an index 0 as false."""
    return None if x is None else (x,)


class EtcdError(AssertionError):
    pass


def etcd_call(endpoint, path, body, timeout=10.0, token=None, tls=None):
    """POST a v3 JSON gateway call ("/v3/kv/put"...) to one endpoint; the parsed reply.
    token: an auth token (/v3/auth/authenticate), sent as the Authorization header.
    tls: {"ca", and for client certificates "client_cert", "client_key"} for https."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = token
    ctx = None
    if tls:
        import ssl
        ctx = ssl.create_default_context(cafile=tls["ca"])
        if tls.get("client_cert"):
            ctx.load_cert_chain(tls["client_cert"], tls["client_key"])
    req = urllib.request.Request(endpoint.rstrip("/") + path, data=json.dumps(body).encode(),
                                 method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return json.loads(r.read().decode("utf-8") or "{}")
    except urllib.error.HTTPError as e:
        raise EtcdError("etcd %s %s: HTTP %d %s" % (endpoint, path, e.code,
                                                    e.read().decode("utf-8", "replace")))


class Etcd(_Members):
    """etcd (Debian's etcd-server 3.4): one member or a cluster of `members`."""

    KIND = "etcd"

    def describe(self, i):
        return "at %s" % self.endpoint(i)

    def __init__(self, members=1, heartbeat_ms=100, election_ms=1000, tls=None):
        """tls: {"ca", "cert", "key"} (harness.make_test_ca) serves the clients https;
        with "client_cert"/"client_key" too, clients must present a certificate signed
        by "ca" (the tests' own calls use that one)."""
        self.n = members
        self.tls = tls
        self.heartbeat_ms = heartbeat_ms
        self.election_ms = election_ms
        self.tmp = tempfile.mkdtemp(prefix="gwsync-etcd-")
        self.ports = [tuple(free_ports(2)) for _ in range(members)]  # client, peer
        self.procs = [None] * members
        self.token = "gwsync-%d-%d" % (os.getpid(), self.ports[0][0])
        self.token_for_calls = None  # set by enable_auth(): the tests' root login

    def name(self, i):
        return "m%d" % i

    def endpoint(self, i):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.ports[i][0])

    @property
    def endpoints(self):
        """["http://127.0.0.1:port", ...]: the agent's etcd.endpoints."""
        return [self.endpoint(i) for i in range(self.n)]

    def log_path(self, i=0):
        return os.path.join(self.tmp, "m%d.log" % i)

    def start_member(self, i, wait=True):
        if self.alive(i):
            return
        cluster = ",".join("%s=http://127.0.0.1:%d" % (self.name(k), p[1])
                           for k, p in enumerate(self.ports))
        cmd = [ETCD, "--name", self.name(i),
               "--data-dir", os.path.join(self.tmp, "m%d.etcd" % i),
               "--listen-client-urls", self.endpoint(i),
               "--advertise-client-urls", self.endpoint(i),
               "--listen-peer-urls", "http://127.0.0.1:%d" % self.ports[i][1],
               "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.ports[i][1],
               "--initial-cluster", cluster, "--initial-cluster-state", "new",
               "--initial-cluster-token", self.token,
               "--heartbeat-interval", str(self.heartbeat_ms),
               "--election-timeout", str(self.election_ms),
               "--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
               "--enable-v2=false", "--auto-compaction-retention", "0"]
        if self.tls:
            cmd += ["--cert-file", self.tls["cert"], "--key-file", self.tls["key"]]
            if self.tls.get("client_cert"):
                cmd += ["--client-cert-auth", "--trusted-ca-file", self.tls["ca"]]
        log = open(self.log_path(i), "ab")
        try:
            self.procs[i] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, start_new_session=True,
                                             cwd=self.tmp)
        finally:
            log.close()
        if wait:
            self.wait_serving(i)

    def status(self, i, timeout=2.0):
        """/v3/maintenance/status of member i, or None."""
        try:
            return etcd_call(self.endpoint(i), "/v3/maintenance/status", {}, timeout=timeout,
                             tls=self.tls)
        except (OSError, EtcdError, ValueError):
            return None

    def serving(self, i):
        st = self.status(i)
        return bool(st and st.get("leader") and st["leader"] != "0")

    def start(self, timeout=60.0):
        require_etcd()
        self._start_all(timeout)
        # a write through each member proves the quorum works
        for i in range(self.n):
            self.call("/v3/kv/put", {"key": b64("/gwsync-test-ready"), "value": b64(str(i))}, i)
        return self

    # -------------------------------------------------------------- calls
    def live_members(self):
        return [i for i in range(self.n) if self.alive(i)]

    def call(self, path, body, member=None, timeout=10.0, deadline=60.0):
        """A v3 call to `member`, or to the first live member that answers; retried
        (as jetcd retries) while no member can serve it, e.g. during a leader election,
        up to `deadline` seconds. Every call the tests make is idempotent."""
        end = time.monotonic() + deadline
        last = None
        while True:
            members = [member] if member is not None else self.live_members()
            for i in members:
                try:
                    return etcd_call(self.endpoint(i), path, body, timeout, self.token_for_calls,
                                     self.tls)
                except (OSError, EtcdError) as e:
                    last = e
            if time.monotonic() >= end:
                raise EtcdError("no etcd member answered %s: %s" % (path, last))
            time.sleep(0.05)

    def revision(self):
        """The store's current revision."""
        r = self.call("/v3/kv/range", {"key": b64("/gwsync-test-ready")})
        return int(r["header"]["revision"])

    def compact(self, revision=None):
        """Compact the store at `revision` (default: the current one), physically, so a
        watch from an older revision is cancelled with compact_revision. Returns it."""
        rev = revision or self.revision()
        self.call("/v3/kv/compaction", {"revision": str(rev), "physical": True})
        return rev

    def enable_auth(self, root_password, user=None, password=None, prefix=None):
        """Turn on etcd authentication: user root (root_password) and, if given, `user`
        with read access to keys under `prefix` (what an agent needs). Later calls of
        this object authenticate as root."""
        self.call("/v3/auth/user/add", {"name": "root", "password": root_password})
        self.call("/v3/auth/user/grant", {"user": "root", "role": "root"})
        if user:
            role = "gwsync-reader"
            self.call("/v3/auth/role/add", {"name": role})
            self.call("/v3/auth/role/grant", {"name": role, "perm": {
                "permType": "READ", "key": b64(prefix),
                "range_end": b64(prefix_end(prefix))}})
            self.call("/v3/auth/user/add", {"name": user, "password": password})
            self.call("/v3/auth/user/grant", {"user": user, "role": role})
        self.call("/v3/auth/enable", {})
        r = self.call("/v3/auth/authenticate", {"name": "root", "password": root_password})
        self.token_for_calls = r["token"]

    def member_id(self, i):
        st = self.status(i)
        return st["header"]["member_id"] if st else None

    def leader(self, timeout=30.0):
        """Index of the member that is leader now (waits for an election to end)."""
        def find():
            ids = {}
            leader_id = None
            for i in self.live_members():
                st = self.status(i)
                if not st:
                    continue
                ids[st["header"]["member_id"]] = i
                if st.get("leader") and st["leader"] != "0":
                    leader_id = st["leader"]
            return ids.get(leader_id) if leader_id in ids else None
        return wait_until(lambda: _boxed(find()), timeout,
                          "an etcd leader")[0]
