#!/usr/bin/env python3
"""Running without systemd (issue 21, item 5): in a container or under another supervisor
nothing makes state_dir the way the unit's StateDirectory= does. The agent, as an ordinary
user, creates it itself (exactly 0750, whatever the umask) when the parent lets it, and the
lmdb plugin then makes its cache inside; when the parent does not, every mode stops at once
(exit 2) with the command that makes it, instead of a plugin's `cannot create
/var/lib/gwsync/cache`. The agent runs as `nobody` when the test runs as root (root may
write anywhere), else as the user running the tests."""
import os
import pwd
import grp
import shutil
import stat
import subprocess

import harness

GWSYNCD = os.environ.get("GWSYNCD")


class WithoutSystemd(harness.IntegrationTest):

    def setUp(self):
        harness.require_daemon()
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                self.skipTest("needs setpriv (util-linux) to run the agent as nobody")
            self.user = pwd.getpwnam("nobody")
            self.group = grp.getgrgid(self.user.pw_gid).gr_name
            self.prefix = ["setpriv", "--reuid", str(self.user.pw_uid), "--regid",
                           str(self.user.pw_gid), "--clear-groups", "--"]
        else:
            self.user = pwd.getpwuid(os.geteuid())
            self.group = grp.getgrgid(os.getegid()).gr_name
            self.prefix = []
        # a directory the agent's user may enter and read (its config lives here)
        self.work = self.tmpdir()
        os.chmod(self.work, 0o755)

    def agent(self, config, *args):
        path = os.path.join(self.work, "gwsync.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(config)
        os.chmod(path, 0o644)
        return subprocess.run(self.prefix + [GWSYNCD, "-c", path] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True, errors="replace",
                              timeout=120, preexec_fn=lambda: os.umask(0o077))

    def owned_dir(self, name, mode):
        """A directory of the agent's user (what an operator gives a container's volume)."""
        d = os.path.join(self.work, name)
        os.mkdir(d)
        os.chown(d, self.user.pw_uid, self.user.pw_gid)
        os.chmod(d, mode)
        return d

    def config(self, emu, state):
        return emu.config(state_dir=state, log_level="info", subscribers=[
            {"name": "cache", "library": "lmdb",
             "config": {"path": os.path.join(state, "cache"), "mode": "0640"}}])

    def test_state_dir_is_created_0750_when_its_parent_allows(self):
        emu = self.emulator(mode="shenyu", hold=2)
        state = os.path.join(self.owned_dir("volume", 0o755), "gwsync", "state")

        r = self.agent(self.config(emu, state), "--check")  # changes nothing
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.dirname(state)))

        r = self.agent(self.config(emu, state), "--once")
        self.assertEqual(r.returncode, 0, r.stderr)
        st = os.stat(state)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o750, "the unit's StateDirectoryMode=")
        self.assertEqual(st.st_uid, self.user.pw_uid)
        # the plugin's business, inside it: the cache, and the snapshot beside it
        self.assertTrue(os.path.exists(os.path.join(state, "cache", "data.mdb")), r.stderr)
        self.assertTrue(os.path.exists(os.path.join(state, "RULE.json")))

    def test_a_state_dir_nobody_can_make_stops_every_mode_naming_the_command(self):
        emu = self.emulator(mode="shenyu", hold=2)
        if os.geteuid() == 0:
            parent = os.path.join(self.work, "root-only")  # like /var/lib for user gwsync
            os.mkdir(parent, 0o755)
        else:
            parent = "/gwsync-test-no-such-dir"  # under /, which an ordinary user cannot write
            self.assertFalse(os.path.exists(parent))
        state = os.path.join(parent, "gwsync")
        want = "install -d -m 0750 -o %s -g %s %s" % (self.user.pw_name, self.group, state)
        for args in (["--check"], ["--once"], []):
            r = self.agent(self.config(emu, state), *args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            line = r.stderr.strip().splitlines()[-1]
            self.assertTrue(line.startswith("gwsyncd: state_dir %s: cannot create" % state), line)
            self.assertIn("StateDirectory=", line)
            self.assertIn(want, line)
            self.assertNotIn("cache", r.stderr)  # stopped before the plugin tripped over it
        self.assertFalse(os.path.exists(state))

        # the command it names is the fix (run as root, as it says)
        if os.geteuid() != 0:
            return
        subprocess.run(want.split(), check=True)
        r = self.agent(self.config(emu, state), "--once")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(state, "cache", "data.mdb")))


if __name__ == "__main__":
    harness.main()
