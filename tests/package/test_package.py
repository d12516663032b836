#!/usr/bin/env python3
"""The Debian packages as an operator meets them (issue 15): install dist/gwsync*.deb on this
machine with dpkg, check the shipped configuration with the installed gwsyncd, run the
installed daemon against the admin emulator as the unit runs it (ExecStart=, User=,
StateDirectory= read from the installed unit; no systemd needed), build the -dev package's
example plugin with pkg-config, then remove (configuration and state kept) and purge
(both gone).

Run by `./dev.sh check` after `./dev.sh package` (GWSYNC_DEB_DIR=dist). It changes the
machine, so it runs only as root, only when no gwsync package and none of the paths it
would make (tests/package/machine.py: /etc/gwsync, /var/lib/gwsync, the unit, ...) are there
already; otherwise every test is skipped, saying why. It leaves the machine as it found it,
even on failure: the purge removes the packages and what they made, then the system user
and group gwsync (which Debian keeps on purge) are deleted when they were not there before,
and the lock file goes too; the last test fails naming anything that still differs."""
import configparser
import glob
import grp
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
import harness  # noqa: E402  (the admin emulator and free_port)
sys.path.insert(0, os.path.join(SRC, "tests", "package"))
import named_paths  # noqa: E402  (the paths the documents name)
import machine  # noqa: E402  (what the test changes on this machine, and undoing it)

DEB_DIR = os.environ.get("GWSYNC_DEB_DIR", os.path.join(SRC, "dist"))
UNIT = "/lib/systemd/system/gwsync.service"
CONF = "/etc/gwsync/gwsync.yaml"
STATE = "/var/lib/gwsync"
WANTS = "/etc/systemd/system/multi-user.target.wants/gwsync.service"


def run(*cmd, check=True, **kw):
    r = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       stdin=subprocess.DEVNULL, timeout=kw.pop("timeout", 300), **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stdout))
    return r


def installed(pkg):
    r = run("dpkg-query", "-W", "-f=${Status}", pkg, check=False)
    return r.returncode == 0 and "installed" in r.stdout and "not-installed" not in r.stdout


def why_not():
    if os.geteuid() != 0:
        return "needs root (dpkg -i on this machine)"
    if not shutil.which("dpkg"):
        return "needs dpkg"
    if not glob.glob(os.path.join(DEB_DIR, "gwsync_*.deb")):
        return "no dist/gwsync_*.deb: run ./dev.sh package first"
    for p in ("gwsync", "gwsync-dev"):
        r = run("dpkg-query", "-W", "-f=${db:Status-Abbrev}", p, check=False)
        if r.returncode == 0 and r.stdout.strip() not in ("", "un"):
            return "a gwsync package is already on this machine (%s): not touching it" % r.stdout.strip()
    for path in machine.PATHS:
        if os.path.lexists(path):
            return "%s exists already: not touching this machine's gwsync" % path
    if not shutil.which("setpriv"):
        return "needs setpriv (util-linux)"
    return None


def unit_settings(path):
    """The [Service] settings of a systemd unit (the last value of each key)."""
    p = configparser.ConfigParser(strict=False, interpolation=None)
    p.optionxform = str
    with open(path, encoding="utf-8") as f:
        p.read_string(f.read())
    return dict(p["Service"])


SKIP = why_not()


@unittest.skipIf(SKIP, SKIP or "")
class Package(unittest.TestCase):
    """One install, the checks in name order, and the removal last (test_z)."""

    @classmethod
    def setUpClass(cls):
        # One package test per machine at a time (two worktrees, two CI jobs).
        cls.lock = machine.Lock().acquire()
        cls.before = machine.snapshot()  # after the lock: another test's install is gone
        cls.before["lock " + machine.LOCK] = False  # ours: removed at the end
        if any(cls.before["path " + p] for p in machine.PATHS):
            cls.lock.release()  # another run installed while we waited for the lock
            raise unittest.SkipTest("a gwsync is on this machine now: not touching it")
        cls.tmp = tempfile.mkdtemp(prefix="gwsync-pkg-")
        cls.debs = sorted(glob.glob(os.path.join(DEB_DIR, "gwsync_*.deb")) +
                          glob.glob(os.path.join(DEB_DIR, "gwsync-dev_*.deb")))
        r = run("dpkg", "-i", *cls.debs, check=False, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        if r.returncode != 0:
            cls.tearDownClass()
            raise AssertionError("dpkg -i failed:\n" + r.stdout)

    @classmethod
    def tearDownClass(cls):
        # what test_z does and checks, again in case a test failed before it
        if any(machine.package_status(p) not in ("", "un", "pn") for p in machine.PACKAGES):
            run("dpkg", "--purge", "gwsync-dev", "gwsync", check=False)
        for f in ("/etc/gwsync/admin-password",):
            if os.path.exists(f) and not os.path.exists("/etc/gwsync/gwsync.yaml"):
                os.unlink(f)
        if os.path.isdir("/etc/gwsync") and not os.listdir("/etc/gwsync"):
            os.rmdir("/etc/gwsync")
        machine.restore(cls.before)
        shutil.rmtree(cls.tmp, ignore_errors=True)
        cls.lock.release()

    # ------------------------------------------------------------------ installed
    def test_a_installed_files(self):
        self.assertTrue(os.access("/usr/sbin/gwsyncd", os.X_OK))
        arch = run("dpkg-architecture", "-qDEB_HOST_MULTIARCH", check=False).stdout.strip() or "*"
        plugins = sorted(os.path.basename(p) for p in glob.glob("/usr/lib/%s/gwsync/*.so" % arch))
        self.assertEqual(plugins, ["file.so", "lmdb.so", "log.so"])
        conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "gwsync").stdout
        self.assertIn(CONF, conffiles)
        # it may hold the admin's password: 0640 root:gwsync (issue 31, item 14)
        st = os.stat(CONF)
        self.assertEqual((st.st_mode & 0o777, st.st_uid, grp.getgrgid(st.st_gid).gr_name),
                         (0o640, 0, "gwsync"))
        # the extra library of the lmdb plugin is a dependency of the package that ships it
        self.assertIn("liblmdb0", run("dpkg-query", "-W", "-f=${Depends}", "gwsync").stdout)
        for page in ("gwsyncd.8", "gwsync.yaml.5", "gwsync-subscriber.3"):
            sec = page.rsplit(".", 1)[1]
            path = "/usr/share/man/man%s/%s.gz" % (sec, page)
            self.assertTrue(os.path.exists(path), path)
        self.assertTrue(os.path.exists("/usr/share/gwsync/nginx/lua/gwsync/router.lua"))
        self.assertTrue(os.path.exists("/usr/share/gwsync/prometheus/gwsync.rules.yml"))
        self.assertTrue(os.path.exists("/etc/logrotate.d/gwsync"))
        # the user, by systemd-sysusers
        self.assertEqual(pwd.getpwnam("gwsync").pw_dir, STATE)
        # enabled (a wants link), never started by the package
        self.assertTrue(os.path.islink(WANTS), "gwsync.service not enabled")

    def test_b_check_the_shipped_configuration(self):
        r = run("/usr/sbin/gwsyncd", "--check", "-c", CONF, check=False)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("configuration OK", r.stdout)
        with open(CONF, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("123456", text)  # no demo password
        self.assertIn("state_dir: /var/lib/gwsync", text)
        self.assertIn('listen: "127.0.0.1:', text)

    def test_b2_every_path_the_unit_man_pages_and_readme_name_exists(self):
        # issue 21: the unit's Documentation=, gwsyncd(8) and gwsync.yaml(5) named
        # operations.md while dh_compress had installed operations.md.gz
        files = run("dpkg-query", "-L", "gwsync", "gwsync-dev").stdout.split("\n")
        pages = sorted(f for f in files if f.startswith("/usr/share/man/man") and
                       os.path.isfile(f))
        self.assertTrue(pages, "no man pages installed")
        texts = {os.path.basename(p): named_paths.read_text(p) for p in pages}
        readme = [p for p in ("/usr/share/doc/gwsync/README.md", "/usr/share/doc/gwsync/README.md.gz")
                  if os.path.exists(p)]
        self.assertTrue(readme, "no README in /usr/share/doc/gwsync")
        texts["README"] = named_paths.read_text(readme[0])
        bad = named_paths.missing("/", texts, units={UNIT: named_paths.read_text(UNIT)},
                                  config_file=CONF)
        self.assertEqual(bad, [], "named, but not on the machine after the install")
        doc, _ = named_paths.unit_documentation(named_paths.read_text(UNIT))
        self.assertIn("/usr/share/doc/gwsync/operations.md", doc)

    # ------------------------------------------------------------------ as the unit runs it
    def test_c_the_unit_runs_the_installed_daemon(self):
        unit = unit_settings(UNIT)
        self.assertEqual(unit["Type"], "notify")
        user, group = unit["User"], unit.get("Group", unit["User"])
        argv = shlex.split(unit["ExecStart"])
        self.assertEqual(argv[:3], ["/usr/sbin/gwsyncd", "-c", CONF])

        emu = harness.Emulator(hold=1).start()
        self.addCleanup(emu.close)  # stops it and removes its temporary directory
        status_port = harness.free_port()
        with open(CONF, encoding="utf-8") as f:
            text = f.read()
        # The operator's edits: the admin, its login, the status port (the documented way:
        # a password file readable by the gwsync group only).
        text = text.replace('servers: [ "http://127.0.0.1:9095" ]',
                            'servers: [ "http://127.0.0.1:%d" ]\n  hold: 1s\n  read_timeout: 3s' % emu.port)
        text = text.replace("# username: admin", "username: admin")
        text = text.replace("# password_file: /etc/gwsync/admin-password",
                            "password_file: /etc/gwsync/admin-password")
        text = text.replace('listen: "127.0.0.1:9196"', 'listen: "127.0.0.1:%d"' % status_port)
        with open(CONF, "w", encoding="utf-8") as f:
            f.write(text)
        pw = "/etc/gwsync/admin-password"
        with open(pw, "w", encoding="utf-8") as f:
            f.write("123456\n")
        os.chown(pw, 0, pwd.getpwnam(user).pw_gid)
        os.chmod(pw, 0o640)

        # The documented check before a start: the sync it would do and the listener call a
        # running agent makes, accepted by this admin (the emulator as documented: ShenYu
        # 2.7, eight groups). Issue 21: the sample's five groups passed --check, reached
        # READY=1, then every poll was refused.
        r = run("/usr/sbin/gwsyncd", "--once", "--dry-run", "-c", CONF, check=False)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertRegex(r.stdout, r"(?m)^listener http://127\.0\.0\.1:%d: accepted the 8 "
                                   r"configured group\(s\)" % emu.port)

        # What systemd does before ExecStart: StateDirectory= owned by the user, the umask.
        state = os.path.join("/var/lib", unit["StateDirectory"])
        os.makedirs(state, exist_ok=True)
        uid = pwd.getpwnam(user).pw_uid
        gid = pwd.getpwnam(user).pw_gid
        os.chown(state, uid, gid)
        os.chmod(state, int(unit.get("StateDirectoryMode", "0755"), 8))

        # NOTIFY_SOCKET as systemd's: READY=1 must arrive.
        sockdir = tempfile.mkdtemp(prefix="notify-", dir=self.tmp)
        os.chmod(self.tmp, 0o755)
        os.chmod(sockdir, 0o755)
        path = os.path.join(sockdir, "notify")
        ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        ns.bind(path)
        os.chmod(path, 0o777)
        self.addCleanup(ns.close)

        umask = int(unit.get("UMask", "0022"), 8)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "NOTIFY_SOCKET": path}
        log = open(os.path.join(self.tmp, "gwsyncd.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen(["setpriv", "--reuid", user, "--regid", group, "--init-groups", "--"] + argv,
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, preexec_fn=lambda: os.umask(umask))

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)

        ns.settimeout(30)
        ready = False
        deadline = time.monotonic() + 30
        while not ready and time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = b"READY=1" in ns.recv(4096)
            except socket.timeout:
                break
        log.seek(0)
        self.assertTrue(ready, "no READY=1:\n" + log.read())
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % status_port, timeout=10) as r:
            self.assertEqual(r.status, 200)
        # its polls are accepted, not only its start-up fetch
        harness.wait_until(lambda: [q for q in emu.requests("listener") if q.get("code") == 200],
                           timeout=30, message="a listener call answered with code 200")
        # (a poll still held by the emulator has no code yet)
        self.assertEqual([q for q in emu.requests("listener")
                          if "code" in q and q["code"] != 200], [])
        # the sample's cache, written as the service user
        data = os.path.join(state, "cache", "data.mdb")
        self.assertTrue(os.path.exists(data), data)
        self.assertEqual(os.stat(data).st_uid, uid)
        self.assertEqual(os.stat(data).st_mode & 0o007, 0, "the cache is readable by others")
        proc.terminate()
        self.assertEqual(proc.wait(timeout=15), 0)

    # ------------------------------------------------------------------ gwsync-dev
    def test_d_the_dev_example_builds_against_the_package(self):
        work = os.path.join(self.tmp, "example")
        shutil.copytree("/usr/share/doc/gwsync-dev/examples", work)
        self.assertEqual(run("pkg-config", "--modversion", "gwsync").stdout.strip(),
                         run("dpkg-query", "-W", "-f=${Version}", "gwsync-dev").stdout.strip())
        run("make", "-C", work)
        r = run("make", "-C", work, "check", check=False)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("counter: all tests passed", r.stdout)

    # ------------------------------------------------------------------ remove, purge
    def test_z_remove_keeps_configuration_and_state_purge_removes_them(self):
        run("dpkg", "--remove", "gwsync-dev", "gwsync")
        self.assertFalse(os.path.exists("/usr/sbin/gwsyncd"))
        self.assertTrue(os.path.exists(CONF), "configuration removed by dpkg --remove")
        self.assertTrue(os.path.isdir(STATE), "state removed by dpkg --remove")
        # the operator's password file, made as the sample says, is kept by a removal ...
        self.assertTrue(os.path.exists("/etc/gwsync/admin-password"))
        r = run("dpkg", "--purge", "gwsync-dev", "gwsync")
        # ... and goes with the purge (issue 21: it stayed, and /etc/gwsync with it)
        for path in ("/etc/gwsync/admin-password", "/etc/gwsync", STATE, "/var/log/gwsync",
                     WANTS):
            self.assertFalse(os.path.lexists(path), "%s left after purge:\n%s" % (path, r.stdout))

    def test_zz_the_machine_is_as_it_was(self):
        # nothing of the service user may outlive it (its uid would pass to the next user)
        self.assertEqual(machine.owned_files(), [])
        done = machine.restore(self.before)
        self.assertEqual(machine.leftovers(self.before), [], "after: %s" % done)


if __name__ == "__main__":
    unittest.main(verbosity=2)
