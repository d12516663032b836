#!/usr/bin/env python3
"""The package test's lock leaves no file behind and still keeps two runs apart (issue 21,
item 6: `./dev.sh check` left /run/lock/gwsync-package-test.lock). Run here, on a lock file
of its own in a temporary directory, because the package test itself runs only in
`./dev.sh check` and changes the machine. Several processes take the lock in turn while
each checks that nobody else is inside; at the end the file is gone."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SRC = os.environ.get("GWSYNC_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "package"))
import machine  # noqa: E402

# One contender: take the lock N times; inside, a marker file must not exist (another
# holder), is created, held a moment, removed.
CONTENDER = r"""
import os, sys, time
sys.path.insert(0, sys.argv[1])
import machine
lock, inside, rounds = sys.argv[2], sys.argv[3], int(sys.argv[4])
for _ in range(rounds):
    with machine.Lock(lock):
        fd = os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if shared
        time.sleep(0.005)
        os.close(fd)
        os.unlink(inside)
"""


class PackageMachine(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gwsync-lock-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_the_lock_is_exclusive_and_leaves_no_file(self):
        lock = os.path.join(self.tmp, "package-test.lock")
        inside = os.path.join(self.tmp, "inside")
        procs = [subprocess.Popen([sys.executable, "-c", CONTENDER,
                                   os.path.join(SRC, "tests", "package"), lock, inside, "40"],
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        errors = []
        for p in procs:
            _, err = p.communicate(timeout=300)
            if p.returncode:
                errors.append(err)
        self.assertEqual(errors, [], "two holders at once, or a failure")
        self.assertFalse(os.path.exists(lock), "the lock file was left behind")
        self.assertFalse(os.path.exists(inside))

    def test_a_waiter_on_a_removed_lock_file_starts_again(self):
        lock = os.path.join(self.tmp, "package-test.lock")
        first = machine.Lock(lock).acquire()
        waiter = subprocess.Popen([sys.executable, "-c",
                                   "import sys; sys.path.insert(0, sys.argv[1]); import machine, os\n"
                                   "l = machine.Lock(sys.argv[2]).acquire()\n"
                                   "print(os.fstat(l.fd).st_ino == os.stat(sys.argv[2]).st_ino)\n"
                                   "l.release()",
                                   os.path.join(SRC, "tests", "package"), lock],
                                  stdout=subprocess.PIPE, text=True)
        time.sleep(0.3)  # the waiter has opened the file and waits in flock()
        first.release()  # unlinks the file it waits on
        out, _ = waiter.communicate(timeout=60)
        self.assertEqual(out.strip(), "True", "the waiter held a lock nobody else can see")
        self.assertFalse(os.path.exists(lock))

    def test_the_snapshot_names_what_the_package_test_compares(self):
        state = machine.snapshot()
        for key in ("user gwsync", "group gwsync", "lock " + machine.LOCK,
                    "path /etc/gwsync", "path /var/lib/gwsync", "package gwsync"):
            self.assertIn(key, state)
        self.assertEqual(machine.leftovers(state), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
