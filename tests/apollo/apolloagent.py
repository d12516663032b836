"""The agent's side of the Apollo tests: an apollo: configuration for the built gwsyncd
against the emulator (tests/apollo/emulator.py, run in the test's own process), with a
`file` subscriber, the `recorder` subscriber and the status endpoint; readers of what it
delivered come from tests/kv/kvagent.py (file items, recorder applies, accepted lines).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "kv"))
import kvagent  # noqa: E402  (puts tests/integration on the path)
import harness  # noqa: E402

import apollo_publisher as publisher  # noqa: E402

WAIT = 30.0  # convergence limit: generous for a busy 2-core box and TSan builds
FAST_RETRY = {"attempts": 3, "interval": "200ms", "backoff": "1s"}


def config(url, app_id, namespace, files, rec, status_port, secret=None, groups=None,
           extra=None, top=None, log_level="debug"):
    """YAML for an agent following app_id/default/namespace at the emulator `url` (None:
    no servers, for a meta: in extra)."""
    sec = {"app_id": app_id, "namespace": namespace,
           "groups": list(groups or publisher.GROUPS), "retry": FAST_RETRY}
    if url:
        sec["servers"] = [url]
    if secret:
        sec["secret"] = secret
    sec.update(extra or {})
    doc = {"apollo": sec, "state_dir": "@TMP@/state", "log": {"level": log_level},
           "status": {"listen": "127.0.0.1:%d" % status_port},
           "subscribers": [{"name": "files", "library": "file", "config": {"dir": files}},
                           {"name": "rec", "library": "recorder", "config": {"out": rec}}]}
    doc.update(top or {})
    return harness.to_yaml(doc)


class Agent:
    """One running gwsyncd following one Apollo namespace of the emulator, and the
    publisher writing to that namespace."""

    def __init__(self, test, pub, secret=None, start=True, groups=None, extra=None, top=None,
                 url=None):
        self.test = test
        self.pub = pub
        self.files = test.tmpdir()
        self.rec = os.path.join(test.tmpdir(), "recorder.log")
        self.port = harness.free_port()
        self.ep = kvagent.Endpoint(self.port)
        self.groups = list(groups or publisher.GROUPS)
        cfg = config(url or pub.emu.url, pub.emu.app_id, pub.apollo_namespace, self.files,
                     self.rec, self.port, secret=secret, groups=self.groups, extra=extra,
                     top=top)
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

    def failures(self, kind):
        return self.conn()["errors"].get(kind, 0)

    def wait_failure(self, kind, message, since=0, timeout=WAIT):
        """Wait until the connection has counted more than `since` failures of `kind`
        ("auth", "parse"...)."""
        return self.wait_status(
            lambda d: kvagent.connection(d)["errors"].get(kind, 0) > since, message, timeout)
