"""The agent's side of the Polaris tests: a gwsyncd whose source is `polaris:` with a file
subscriber, the recorder and the status endpoint, following one Publisher. What it
delivered is read as the path-store tests read it (tests/kv/kvagent.py)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("GWSYNC_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRCDIR, "tests", "kv"))
import kvagent  # noqa: E402  (puts tests/integration on the path)
import harness  # noqa: E402

import polpub  # noqa: E402


def _load_emulator():
    """tests/polaris/emulator.py under a name of its own: tests/admin/emulator.py (the
    admin emulator, which the harness imports) already holds the name "emulator"."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("polaris_emulator",
                                                  os.path.join(HERE, "emulator.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


emulator = _load_emulator()

WAIT = 30.0  # convergence limit: generous for a busy 2-core box and TSan builds
FAST_RETRY = {"attempts": 3, "interval": "200ms", "backoff": "1s"}


def config(servers, groups=polpub.KV_GROUPS, files=None, recorder=None, status_port=None,
           state_dir="@TMP@/state", retry=FAST_RETRY, log_level="debug", **section):
    sec = {"servers": list(servers)}
    if groups is not None:
        sec["groups"] = list(groups)
    if retry is not None:
        sec["retry"] = retry
    sec.update({k: v for k, v in section.items() if v is not None})
    doc = {"polaris": sec}
    if state_dir is not None:
        doc["state_dir"] = state_dir
    if log_level:
        doc["log"] = {"level": log_level}
    if status_port:
        doc["status"] = {"listen": "127.0.0.1:%d" % status_port}
    subs = []
    if files:
        subs.append({"name": "files", "library": "file", "config": {"dir": files}})
    if recorder:
        subs.append({"name": "rec", "library": "recorder", "config": {"out": recorder}})
    if subs:
        doc["subscribers"] = subs
    return harness.to_yaml(doc)


class Agent:
    """One gwsyncd following `pub` through the emulator at `servers`."""

    def __init__(self, test, pub, servers, groups=None, start=True, state_dir=None, **section):
        self.test = test
        self.pub = pub
        self.files = test.tmpdir()
        self.rec = os.path.join(test.tmpdir(), "recorder.log")
        self.port = harness.free_port()
        self.ep = kvagent.Endpoint(self.port)
        self.groups = list(groups or polpub.KV_GROUPS)
        if pub.layout == "2.7" and "shenyu_namespace" not in section:
            section["shenyu_namespace"] = pub.shenyu_ns
        if pub.layout != "2.7" and "layout" not in section:
            section["layout"] = {"2.6.1": "plain", "2.6.0": "legacy"}[pub.layout]
        if pub.ns != "default":
            section.setdefault("namespace", pub.ns)
        if pub.group != "shenyu":
            section.setdefault("file_group", pub.group)
        cfg = config(servers, groups=self.groups, files=self.files, recorder=self.rec,
                     status_port=self.port, state_dir=state_dir or "@TMP@/state", **section)
        self.d = test.daemon(cfg, start=start)

    def want(self):
        return self.pub.published(self.groups)

    def wait_converged(self, want=None, timeout=WAIT):
        try:
            kvagent.wait_converged(self.files, want if want is not None else self.want(),
                                   timeout)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, self.d.tail(25)))
        self.wait_status(lambda d: all(s["inStep"] for s in d["subscribers"]),
                         "every subscriber in step", timeout)

    def items(self, group):
        return kvagent.file_items(self.files, group)

    def applies(self, group=None, since=0):
        return [x for x in kvagent.applies(self.rec)[since:] if group in (None, x.group)]

    def accepted(self, group=None, since=0):
        return kvagent.accepted(self.d, group, since)

    def status(self):
        return self.ep.status()

    def conn(self):
        return kvagent.connection(self.status())

    def wait_status(self, predicate, message, timeout=WAIT):
        return self.ep.wait_status(predicate, timeout=timeout, message=message)
