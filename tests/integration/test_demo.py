#!/usr/bin/env python3
"""The quick-start demo (tests/admin/demo.sh, ./dev.sh demo) as a person runs it, in a
terminal (a pty): Ctrl-C at its "press Enter" prompt ends it at once and cleanly (issue 31,
items 10 and 15): exit status 0, no traceback, gwsyncd stopped before the emulator with one
signal (so its log has no failed poll), its directory removed; its hints name the status
page. The gateway part is left out (GWSYNC_DEMO_GATEWAY=0): it is tested in tests/e2e."""
import os
import pty
import select
import signal
import socket
import time

import harness

DEMO = os.path.join(harness.SRCDIR, "tests", "admin", "demo.sh")


def port_busy(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class Demo(harness.IntegrationTest):

    def setUp(self):
        super().setUp()
        harness.require_daemon()
        if not harness.BUILDDIR:
            self.skipTest("needs GWSYNC_BUILDDIR")
        if port_busy(9095) or port_busy(9196):
            self.skipTest("the demo's ports 9095 and 9196 are in use")

    def read_until(self, fd, text, timeout):
        deadline = time.monotonic() + timeout
        while text not in self.out and time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # the child's side closed
                    return False
                if not chunk:
                    return False
                self.out += chunk.decode("utf-8", "replace")
        return text in self.out

    def test_ctrl_c_at_the_prompt_stops_everything_cleanly_and_removes_its_directory(self):
        demo_dir = os.path.join(self.tmpdir(), "demo")
        env = dict(os.environ, GWSYNC_DEMO_DIR=demo_dir, GWSYNC_DEMO_GATEWAY="0")
        pid, fd = pty.fork()
        if pid == 0:  # the child: the pty is its terminal, as in a person's shell
            os.execvpe("bash", ["bash", DEMO, harness.BUILDDIR], env)
        self.out = ""
        try:
            self.assertTrue(self.read_until(fd, "press Enter", 90), self.out)
            self.assertIn("http://127.0.0.1:9196/", self.out)  # the status page is named
            self.assertTrue(os.path.isdir(demo_dir))
            os.write(fd, b"\x03")  # Ctrl-C: SIGINT to the terminal's foreground group
            self.read_until(fd, "\x00never", 30)  # to the end of its output
            deadline = time.monotonic() + 10
            status = None
            while status is None and time.monotonic() < deadline:
                wpid, st = os.waitpid(pid, os.WNOHANG)
                if wpid:
                    status = st
                else:
                    time.sleep(0.1)
            self.assertIsNotNone(status, "the demo still runs after Ctrl-C:\n" + self.out)
            pid = 0
            self.assertTrue(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
                            "status %r\n%s" % (status, self.out))
        finally:
            if pid:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            os.close(fd)
        self.assertNotIn("Traceback", self.out)
        self.assertIn("removed", self.out)
        self.assertFalse(os.path.exists(demo_dir), self.out)
        # gwsyncd stopped first, with one signal: no poll failed against a stopped emulator
        self.assertNotIn("try 1 of", self.out)
        self.assertEqual(self.out.count("received, stopping"), 1, self.out)
        self.assertIn("SIGTERM received, stopping", self.out)


if __name__ == "__main__":
    harness.main()
