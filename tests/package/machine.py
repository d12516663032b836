"""What the package test changes on the machine, and putting it back (issue 21, item 6).

tests/package/test_package.py installs the real packages with dpkg, so it runs on the
machine itself (a throwaway root was weighed and not taken: a chroot needs a Debian
bootstrapped into it, minutes of a 2-core machine and a mirror; an overlay of / needs mount
rights a container often lacks; and the point of the test is the real dpkg, systemd-sysusers
and deb-systemd-helper of this system). So it records what is there before, refuses to run
where a gwsync is installed or its directories exist, and afterwards leaves the machine as
it found it:

- dpkg --purge removes the packages, /etc/gwsync, /var/lib/gwsync, /var/log/gwsync and the
  unit's enablement (the packaging's own job, checked here);
- the system user and group `gwsync`, which systemd-sysusers creates at install and Debian
  keeps on purge by policy, are removed again when they were not there before;
- the lock that keeps two package tests apart is removed (safely: see Lock).

`snapshot()` is everything compared; `leftovers(before)` what differs after the restore.
dpkg's own log (/var/log/dpkg.log) and apt's state keep the record of the install: that is
the package manager's history, not something the test made."""
import fcntl
import grp
import os
import pwd
import subprocess

USER = GROUP = "gwsync"
PACKAGES = ("gwsync", "gwsync-dev")
# Every path an install of the packages creates outside their file lists (or that a purge
# must take away): configuration, state, logs, the unit's enablement and its helper state.
PATHS = (
    "/etc/gwsync",
    "/var/lib/gwsync",
    "/var/log/gwsync",
    "/etc/systemd/system/multi-user.target.wants/gwsync.service",
    "/var/lib/systemd/deb-systemd-helper-enabled/gwsync.service.dsh-also",
    "/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/gwsync.service",
    "/var/lib/systemd/deb-systemd-helper-masked/gwsync.service",
    "/usr/sbin/gwsyncd",
    "/usr/lib/sysusers.d/gwsync.conf",
    "/lib/systemd/system/gwsync.service",
)
LOCK = "/run/lock/gwsync-package-test.lock"


def _exists(kind, name):
    try:
        (pwd.getpwnam if kind == "user" else grp.getgrnam)(name)
        return True
    except KeyError:
        return False


def package_status(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", pkg],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def snapshot():
    """{what: state} of everything the package test may change."""
    state = {"user " + USER: _exists("user", USER), "group " + GROUP: _exists("group", GROUP),
             "lock " + LOCK: os.path.lexists(LOCK)}
    for p in PATHS:
        state["path " + p] = os.path.lexists(p)
    for p in PACKAGES:
        state["package " + p] = package_status(p) not in ("", "un", "pn")
    return state


def restore(before, log=print):
    """Undo what the test made that a purge leaves by design: the user and group gwsync
    when they were not there before. Returns what was done."""
    done = []
    now = snapshot()
    if not before["user " + USER] and now["user " + USER]:
        # the purged package left no process or file of this user (the test checks both)
        r = subprocess.run(["userdel", USER], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        done.append("userdel %s: %s" % (USER, r.returncode if r.returncode else "done"))
        if r.returncode:
            log(r.stdout)
    if not before["group " + GROUP] and _exists("group", GROUP):
        r = subprocess.run(["groupdel", GROUP], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        done.append("groupdel %s: %s" % (GROUP, r.returncode if r.returncode else "done"))
        if r.returncode:
            log(r.stdout)
    return done


def leftovers(before, ignore=("lock " + LOCK,)):
    """["what: before -> now"] for everything that differs from `before`."""
    now = snapshot()
    return ["%s: %s -> %s" % (k, before[k], now[k]) for k in sorted(before)
            if k not in ignore and before[k] != now[k]]


def owned_files(user=USER, roots=("/etc", "/var", "/run", "/tmp", "/usr", "/opt", "/srv",
                                  "/home")):
    """Files anywhere in `roots` still owned by `user` (none may remain before userdel,
    or they would be left to whoever gets the uid next)."""
    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return []
    r = subprocess.run(["find"] + [d for d in roots if os.path.isdir(d)] +
                       ["-xdev", "-uid", str(uid), "-print"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return r.stdout.split()


class Lock:
    """One package test per machine at a time (two worktrees, two CI jobs), with no lock
    file left behind. The file is created on demand and unlinked by its holder before it
    lets go; a waiter that then gets the lock of an unlinked file sees the path gone or
    naming another file, and starts again, so two holders can never overlap."""

    def __init__(self, path=LOCK):
        self.path = path
        self.fd = None

    def acquire(self):
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # still held: nobody can be between open and check
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()
