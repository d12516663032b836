"""The Apollo demo's config service (tests/apollo/demo.sh): the emulator on 127.0.0.1:PORT
with an access key, ShenYu's publisher writing a random but realistic dataset into app
`shenyu`, namespace `application`, as a 2.7 admin does; on SIGUSR1 one rule is edited
(two releases: the rule's key, then its list key), as an admin's edit would be.
    demo.py PORT SECRET
"""
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import apollo_emulator  # noqa: E402
import apollo_publisher  # noqa: E402


def main():
    port, secret = int(sys.argv[1]), sys.argv[2]
    emu = apollo_emulator.Emulator(app_id="shenyu", secret=secret, port=port).start()
    pub = apollo_publisher.Publisher(emu)
    data = apollo_publisher.random_data(seed=7)
    for g in apollo_publisher.GROUPS:
        pub.write_many(g, data.items[g])
    print("[demo] Apollo config service emulator on %s: app shenyu, namespace application, "
          "%d releases" % (emu.url, pub.writes), file=sys.stderr, flush=True)
    edit = threading.Event()
    done = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: edit.set())
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    while not done.is_set():
        if edit.wait(0.2):
            edit.clear()
            rule = dict(data.items["RULE"][0], name="demo: edited at runtime")
            data.items["RULE"][0] = rule
            pub.write("RULE", rule)
            print("[demo] RULE %s is now '%s' (released in Apollo)" % (rule["id"], rule["name"]),
                  file=sys.stderr, flush=True)
    emu.stop()


if __name__ == "__main__":
    main()
