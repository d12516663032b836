#!/usr/bin/env python3
"""valgrind (issue 5): memcheck finds no memory errors and no definite leaks in a `--once`
run against the emulator (the file and log plugins loaded), in a `--once` run served from
the snapshot, and in the daemon taking a change and stopping on SIGTERM.

Skipped when valgrind is not installed (./dev.sh deps installs it) or when the binary is
built with a sanitizer (they cannot run under valgrind)."""
import os
import re
import shutil
import signal
import subprocess
import unittest

import groupfiles
import harness
import synclog

VALGRIND = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite",
            "--error-exitcode=99", "--track-fds=no", "--num-callers=30"]


def skip_reason(binary):
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (./dev.sh deps installs it)"
    if not binary or not os.access(binary, os.X_OK):
        return "GWSYNCD is not set to a built gwsyncd (run through make check)"
    with open(binary, "rb") as f:
        image = f.read()
    for marker, name in ((b"__asan_init", "AddressSanitizer"), (b"__tsan_init", "ThreadSanitizer"),
                         (b"__msan_init", "MemorySanitizer")):
        if marker in image:
            return "gwsyncd is built with %s, which cannot run under valgrind" % name
    try:
        libs = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, text=True,
                              timeout=30).stdout
    except OSError:
        libs = ""
    if re.search(r"lib[at]san", libs):
        return "gwsyncd is linked with a sanitizer runtime, which cannot run under valgrind"
    return None


class Valgrind(harness.IntegrationTest):

    def setUp(self):
        why = skip_reason(harness.GWSYNCD)
        if why:
            raise unittest.SkipTest(why)

    def config(self, emu, tmp, **kw):
        subs = [groupfiles.file_subscriber(os.path.join(tmp, "files")),
                {"name": "gateway-log", "library": "log"}]
        return emu.config(log_level="debug", state_dir=os.path.join(tmp, "state"),
                          subscribers=subs, **kw)

    def assertClean(self, rc, output):
        self.assertIn("ERROR SUMMARY: 0 errors", output, output[-4000:])
        self.assertNotRegex(output, r"definitely lost: [1-9]")
        self.assertNotEqual(rc, 99, output[-4000:])

    def memcheck_once(self, config_path):
        r = subprocess.run(VALGRIND + [harness.GWSYNCD, "-c", config_path, "--once"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace", timeout=300)
        self.assertClean(r.returncode, r.stdout)
        return r

    def test_once_against_the_emulator_then_from_the_snapshot(self):
        emu = self.emulator(mode="shenyu", hold=2)
        tmp = self.tmpdir()
        d = harness.Daemon(self.config(emu, tmp), tmp=tmp)
        r = self.memcheck_once(d.config_path)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:])
        self.assertIn("--once: synced and delivered", r.stdout)
        groupfiles.wait_admin_data(os.path.join(tmp, "files"), emu, timeout=1)

        emu.stop()
        r = self.memcheck_once(d.config_path)
        self.assertEqual(r.returncode, 0, r.stdout[-4000:])
        self.assertRegex(r.stdout, r"from the snapshot in .* \(STALE")

    def test_daemon_takes_a_change_and_stops(self):
        emu = self.emulator(mode="shenyu", hold=1)
        tmp = self.tmpdir()
        d = harness.Daemon(self.config(emu, tmp, hold="1s", read_timeout="30s"), tmp=tmp)
        proc = subprocess.Popen(VALGRIND + [harness.GWSYNCD, "-c", d.config_path],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
        self.addCleanup(harness._stop_process, proc, signal.SIGKILL)
        files = os.path.join(tmp, "files")
        groupfiles.wait_admin_data(files, emu, timeout=120)
        harness.wait_until(lambda: emu.state()["held"] >= 1, timeout=60, message="a held poll")
        v = emu.upsert("RULE", synclog.rule("under-valgrind"))
        groupfiles.wait_version(files, "RULE", v["md5"], timeout=60)
        groupfiles.wait_version(os.path.join(tmp, "state"), "RULE", v["md5"], timeout=60)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=120)
        out = out.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, out[-4000:])
        self.assertClean(proc.returncode, out)


if __name__ == "__main__":
    harness.main()
