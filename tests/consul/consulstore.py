"""ShenYu's admin writing to Consul, for tests/kv/publisher.Publisher: the store behind its
put / delete / delete_tree / read_tree interface, as ConsulDataChangedListener (2.6.1+,
over AbstractPathDataChangedListener) writes through Ecwid's consul-api client:

- createOrUpdate(path, data): consulClient.setKVValue(path, GsonUtils.toJson(data)):
  PUT /v1/kv/ + path, the value the Gson text (Publisher makes it);
- deleteNode(path): consulClient.deleteKVValue(path): DELETE /v1/kv/ + path, one key;
- deletePathRecursive(path): consulClient.deleteKVValues(path): DELETE ...?recurse, a pure
  string prefix (no '/' added: a plugin's REFRESH or DELETE under "selector/divide" also
  takes "selector/divideX/...", as ShenYu's own does).

Paths are the admin's "/{ns}/shenyu/..."; Ecwid builds "/v1/kv/" + path and the double '/'
reaches Consul collapsed, so the key is the path without its leading '/' (PROTOCOL-PUSH.md
4.2, issue #5545's wire log). Keys are percent-encoded in the URL so that a 2.6 layout's
URL-encoded metaData key ("%2F...") is stored as the admin named it.
"""
import base64
import importlib.util
import json
import os
import urllib.error
import urllib.parse
import urllib.request


class ConsulError(Exception):
    def __init__(self, status, text):
        super().__init__("HTTP %d: %s" % (status, text))
        self.status = status
        self.text = text


class ConsulStore:
    kind = "consul"

    def __init__(self, url, token=None, cafile=None):
        self.url = url.rstrip("/")
        self.token = token
        self.context = None
        if cafile:
            import ssl
            self.context = ssl.create_default_context(cafile=cafile)

    @staticmethod
    def key(path):
        return path.lstrip("/")

    def call(self, method, key, body=None, query=""):
        url = "%s/v1/kv/%s%s" % (self.url, urllib.parse.quote(key, safe="/"), query)
        req = urllib.request.Request(url, data=body, method=method)
        if self.token:
            req.add_header("X-Consul-Token", self.token)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.context) as r:
                return r.status, r.read(), r.headers
        except urllib.error.HTTPError as e:
            text = e.read()
            if e.code == 404 and method == "GET":
                return 404, text, e.headers
            raise ConsulError(e.code, text.decode("utf-8", "replace")) from None

    def put(self, path, value):
        data = value.encode("utf-8") if isinstance(value, str) else value
        self.call("PUT", self.key(path), data)

    def delete(self, path):
        self.call("DELETE", self.key(path))

    def delete_tree(self, path):
        self.call("DELETE", self.key(path), query="?recurse")

    def read_tree(self, root):
        status, body, _ = self.call("GET", self.key(root.rstrip("/")) + "/", query="?recurse")
        out = {}
        if status == 404:
            return out
        for e in json.loads(body):
            if e.get("Value"):
                out["/" + e["Key"]] = base64.b64decode(e["Value"])
        return out

    def ensure_empty(self, path):
        self.put(path, b"")


def load_emulator():
    """tests/consul/emulator.py as a module of its own name (tests/admin/emulator.py, the
    admin's, is on the path too under "emulator")."""
    if "consul_emulator" in __import__("sys").modules:
        return __import__("sys").modules["consul_emulator"]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "emulator.py")
    spec = importlib.util.spec_from_file_location("consul_emulator", path)
    mod = importlib.util.module_from_spec(spec)
    __import__("sys").modules["consul_emulator"] = mod
    spec.loader.exec_module(mod)
    return mod
