#!/usr/bin/env python3
"""Odd files (issue 20, item 1): a FIFO, a directory or a device where the agent expects a
file it reads (the configuration, password_file, the token files, the TLS files, a snapshot,
a subscriber's library, the log file) is refused with "FILE: not a regular file" (exit 2 for the configuration's
files) and never hangs the agent; SIGTERM is obeyed at every moment of start-up.

Every run has a deadline: before the fix, opening a FIFO blocked for ever with SIGTERM
blocked too, so these runs ended only by SIGKILL (subprocess.run's timeout)."""
import os
import signal
import subprocess
import time

import harness

# A run that does not end by itself within this long has hung (generous for a loaded
# machine: a refusal takes milliseconds).
DEADLINE = 20.0


class OddFiles(harness.IntegrationTest):

    def fifo(self, name="fifo"):
        path = os.path.join(self.tmpdir(), name)
        os.mkfifo(path, 0o600)
        return path

    def check_refused(self, config, what, args=("--check",)):
        """gwsyncd ARGS on `config` exits 2 at once, naming `what` as not a regular file."""
        d = self.daemon(config, start=False)
        try:
            r = d.run(*args, timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail("gwsyncd %s hung on %s (killed after %.0f s)" % (" ".join(args), what,
                                                                     DEADLINE))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("not a regular file", r.stderr)
        self.assertIn(what, r.stderr)
        return r

    def test_a_fifo_as_the_configuration_is_refused(self):
        fifo = self.fifo("gwsync.yaml")
        for args in (["--check"], [], ["--once"]):
            try:
                r = subprocess.run([harness.GWSYNCD, "-c", fifo] + args, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.fail("gwsyncd %s hung on a FIFO configuration" % " ".join(args))
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("%s: not a regular file (a FIFO)" % fifo, r.stderr)

    def test_a_directory_or_device_as_the_configuration_is_refused(self):
        for path, kind in ((self.tmpdir(), "a directory"), ("/dev/zero", "a character device")):
            r = subprocess.run([harness.GWSYNCD, "-c", path, "--check"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=DEADLINE)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("%s: not a regular file (%s)" % (path, kind), r.stderr)

    def test_a_fifo_as_password_file_is_refused(self):
        fifo = self.fifo()
        cfg = harness.make_config(["http://127.0.0.1:1"], username="admin", password_file=fifo)
        r = self.check_refused(cfg, fifo)
        self.assertIn("admin.password_file: %s: not a regular file (a FIFO)" % fifo, r.stderr)
        # the daemon itself, not only --check
        self.check_refused(cfg, fifo, args=())

    def test_a_fifo_as_a_token_file_is_refused(self):
        fifo = self.fifo()
        cfg = harness.make_config(["http://127.0.0.1:1"], status={"token_file": fifo})
        r = self.check_refused(cfg, fifo)
        self.assertIn("status.token_file: %s: not a regular file" % fifo, r.stderr)
        cfg = harness.make_config(["ws://127.0.0.1:1/websocket"],
                                  admin_extra={"websocket": {"token_file": fifo}})
        r = self.check_refused(cfg, fifo)
        self.assertIn("admin.websocket.token_file: %s: not a regular file" % fifo, r.stderr)

    def test_pause_with_a_fifo_token_file_does_not_hang(self):
        # gwsyncd --pause reads status.token_file for its HTTP fallback: a FIFO there is
        # an absent token, never a hang.
        fifo = self.fifo()
        cfg = harness.make_config(["http://127.0.0.1:1"],
                                  status={"listen": "127.0.0.1:%d" % harness.free_port(),
                                          "token_file": fifo})
        d = self.daemon(cfg, start=False)
        try:
            r = d.run("--pause", timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail("gwsyncd --pause hung on a FIFO status.token_file")
        self.assertNotEqual(r.returncode, 0, r.stderr)

    def test_fifo_tls_files_are_refused(self):
        # the other two are regular files: only the FIFO is refused (nothing connects)
        plain = os.path.join(self.tmpdir(), "plain.pem")
        with open(plain, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\n")
        for key in ("ca_file", "cert_file", "key_file"):
            fifo = self.fifo()
            tls = {"ca_file": plain, "cert_file": plain, "key_file": plain}
            tls[key] = fifo
            for url in ("https://127.0.0.1:1", "wss://127.0.0.1:1/websocket"):
                cfg = harness.make_config([url], tls=tls)
                r = self.check_refused(cfg, fifo)
                self.assertIn("admin.tls.%s: %s: not a regular file (a FIFO)" % (key, fifo),
                              r.stderr)

    def test_a_fifo_as_a_subscriber_library_is_refused(self):
        # the loader opens a plugin by path, blocking: a FIFO there hung dlopen()
        fifo = self.fifo("plugin.so")
        cfg = harness.make_config(["http://127.0.0.1:1"],
                                  subscribers=[{"name": "odd", "library": fifo}])
        r = self.check_refused(cfg, fifo)
        self.assertIn("%s: not a regular file (a FIFO)" % fifo, r.stderr)

    def test_a_fifo_log_file_without_a_reader_is_refused(self):
        fifo = self.fifo("gwsync.log")
        cfg = harness.make_config(["http://127.0.0.1:1"], log={"file": fifo})
        d = self.daemon(cfg, start=False)
        try:
            r = d.run(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.fail("gwsyncd hung opening a FIFO log file with no reader")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("log file %s" % fifo, r.stderr)
        self.assertIn("a FIFO with no reader", r.stderr)

    def test_a_fifo_snapshot_is_ignored_and_sigterm_still_stops_the_agent(self):
        # No admin answers: the agent falls back to the snapshot, where RULE.json is a FIFO.
        cfg = harness.make_config(["http://127.0.0.1:%d" % harness.free_port()],
                                  retry=(1, "100ms", "200ms"), connect_timeout="500ms")
        d = self.daemon(cfg, start=False)
        os.makedirs(d.state_dir)
        os.mkfifo(os.path.join(d.state_dir, "RULE.json"), 0o600)
        d.start()
        # log wording is the behaviour here: the warning names the file and what it is
        d.wait_log(r"warn  snapshot: ignoring snapshot \S+/RULE\.json: not a regular file "
                   r"\(a FIFO\)",
                   timeout=DEADLINE)
        rc, seconds = d.stop(signal.SIGTERM, timeout=10)
        self.assertEqual(rc, 0, d.tail())
        self.assertLess(seconds, 5)

    def test_sigterm_is_obeyed_at_every_moment_of_start_up(self):
        # A stop at any moment from exec to running ends the agent promptly: before the
        # signal thread exists it is the default action (killed by SIGTERM), afterwards a
        # clean exit 0. Never a hang.
        emu = self.emulator(hold=1)
        d = self.daemon(emu.config(), start=False)
        for delay_ms in (0, 2, 5, 10, 20, 40, 80, 160):
            p = subprocess.Popen([harness.GWSYNCD, "-c", d.config_path],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
            time.sleep(delay_ms / 1000.0)
            p.send_signal(signal.SIGTERM)
            try:
                _, err = p.communicate(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                self.fail("gwsyncd ignored SIGTERM %d ms into start-up" % delay_ms)
            self.assertIn(p.returncode, (0, -signal.SIGTERM), err.decode(errors="replace"))


if __name__ == "__main__":
    harness.main()
