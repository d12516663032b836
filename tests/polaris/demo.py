#!/usr/bin/env python3
"""The quick-start demo against Polaris (GWSYNC_DEMO_SOURCE=polaris ./dev.sh demo): the
Polaris emulator (emulator.py) on 127.0.0.1:8090 holding a ShenYu 2.7 dataset as the admin's
PolarisDataChangedListener publishes it (polpub.py), and gwsyncd with a polaris: section,
its log and file subscribers, in the foreground. Press Enter (or wait GWSYNC_DEMO_WAIT
seconds without a terminal) and the admin makes one random edit: watch it arrive in the log
lines and in /tmp/gwsync-demo-polaris/out/*.json. Ctrl-C stops both.
    tests/polaris/demo.py BUILD_DIR"""
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import polagent  # noqa: E402
import polpub  # noqa: E402

PORT = 8090
DEMO = "/tmp/gwsync-demo-polaris"


def say(text):
    sys.stderr.write("\033[1;36m[demo] %s\033[0m\n" % text)
    sys.stderr.flush()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build")
    shutil.rmtree(DEMO, ignore_errors=True)
    os.makedirs(os.path.join(DEMO, "out"))
    try:
        emu = polagent.emulator.PolarisEmulator(port=PORT).start()
    except OSError as e:
        say("cannot listen on 127.0.0.1:%d (%s); stop what holds it first" % (PORT, e))
        return 1
    pub = polpub.Publisher(emu, shenyu_ns=polpub.DEFAULT_NAMESPACE)
    data = polpub.with_tcp(polpub.RandomData(seed=7, namespace=polpub.DEFAULT_NAMESPACE))
    pub.sync_all(data.items)
    say("Polaris emulator on %s: %d files in default/shenyu (ShenYu 2.7 node layout)"
        % (emu.url, len(emu.file_names("default", "shenyu"))))
    config = os.path.join(DEMO, "gwsync.yaml")
    with open(config, "w") as f:
        f.write(polagent.config([emu.url], files=os.path.join(DEMO, "out"),
                                state_dir=os.path.join(DEMO, "state"), status_port=9200,
                                retry=None, log_level="info"))
        f.write("  - name: log\n    library: log\n")
    env = dict(os.environ, GWSYNC_PLUGIN_PATH=":".join(
        os.path.join(build, "plugins", p, ".libs") for p in ("log", "file", "lmdb")))
    say("starting gwsyncd -c %s (status: http://127.0.0.1:9200/status)" % config)
    agent = subprocess.Popen([os.path.join(build, "gwsyncd"), "-c", config], env=env)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    try:
        time.sleep(2)
        while agent.poll() is None:
            if sys.stdin.isatty():
                say("press Enter for an admin edit (Ctrl-C stops)")
                if not sys.stdin.readline():
                    break
            else:
                time.sleep(float(os.environ.get("GWSYNC_DEMO_WAIT", "30")))
            say("admin edit: %s" % data.random_edit(pub))
            if not sys.stdin.isatty():
                time.sleep(2)
                break
    except KeyboardInterrupt:
        pass
    finally:
        say("stopping gwsyncd and the Polaris emulator")
        if agent.poll() is None:
            agent.terminate()
            agent.wait(timeout=10)
        emu.stop()
        say("stopped; %s kept (its configuration, state and output, to look at; the next "
            "demo starts it afresh)" % DEMO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
