"""The admin's reply bodies, byte for byte as a ShenYu admin writes them.

ShenYu serializes with Gson: compact JSON, UTF-8, null fields omitted (an error result has
no "data" key at all). The listener and the 401 of the auth filter are written with
println(), so those bodies end with a newline. A fetch reply is assembled from each group
version's cached JSON text (see state.Version) instead of being serialized again.

A Reply is what the HTTP layer sends; faults (faults.py) rewrite it before it goes out.
"""
import json

from dataset import compact

JSON_UTF8 = "application/json;charset=UTF-8"
TOKEN_ERROR = {"code": 600, "message": "token is error"}
BUSY = "The system is busy, please try again later"


class Reply:
    """One HTTP reply, plus what faults need to rewrite it.

    doc: the JSON document of the body when there is one (None for fetch replies, which
    are assembled from cached bytes: see fetch_parts). Transport tricks: drop ("close" or
    "reset": no reply at all), send_limit (advertise the whole body, send only this many
    bytes, then close), chunked (Transfer-Encoding: chunked), pad_to (spaces added before
    the final '}' until the body is this long, streamed), trickle (send the body at this
    many bytes a second; trickle_head: the headers too)."""

    def __init__(self, status=200, body=b"", content_type=JSON_UTF8, doc=None, headers=None):
        self.status = status
        self.body = body
        self.content_type = content_type
        self.doc = doc
        self.headers = list(headers or [])
        self.fetch_parts = None   # [(group, state.Version)] for a fetch reply
        self.newline = False
        self.drop = None
        self.send_limit = None
        self.chunked = False
        self.pad_to = None
        self.trickle = None
        self.trickle_head = False

    # A big fetch reply stays a list of pieces (the groups' cached JSON texts) until a
    # fault needs the whole body: joining 50 MB costs more than sending it.
    @property
    def body(self):
        if self._body is None:
            self._body = b"".join(self._pieces)
            self._pieces = None
        return self._body

    @body.setter
    def body(self, value):
        self._body, self._pieces = value, None

    def set_pieces(self, pieces):
        self._body, self._pieces = None, list(pieces)

    def pieces(self):
        return [self._body] if self._body is not None else self._pieces

    def code(self):
        return self.doc.get("code") if isinstance(self.doc, dict) else (200 if self.fetch_parts is not None else None)


def result(code, message, data=None, newline=False, status=200):
    """A ShenyuAdminResult; data None is omitted as Gson does."""
    doc = {"code": code, "message": message}
    if data is not None:
        doc["data"] = data
    return doc_reply(doc, newline=newline, status=status)


def doc_reply(doc, newline=False, status=200):
    r = Reply(status=status, doc=doc)
    r.newline = newline
    r.body = encode_doc(doc, newline)
    return r


def encode_doc(doc, newline=False):
    return (compact(doc) + ("\n" if newline else "")).encode("utf-8")


def error(message, code=500):
    return result(code, message)


def token_error():
    return doc_reply(dict(TOKEN_ERROR), newline=True, status=401)


def config_data(version, md5=None, time_ms=None, items=None):
    """One group's ConfigData JSON text as pieces; overrides let faults bend a field."""
    md5_json = json.dumps(version.md5 if md5 is None else md5)
    time_json = json.dumps(version.time if time_ms is None else time_ms)
    head = '{"md5":%s,"lastModifyTime":%s,"data":' % (md5_json, time_json)
    return [head.encode(), version.body if items is None else items, b"}"]


def fetch_body(fragments, code_json=b"200", data=None):
    """The fetch reply's pieces around [(group, ConfigData bytes or pieces)]; `data`
    replaces the whole data value with raw JSON bytes."""
    out = [b'{"code":' + code_json + b',"message":"success","data":']
    if data is not None:
        out.append(data)
    else:
        out.append(b"{")
        for i, (g, frag) in enumerate(fragments):
            out.append((b"," if i else b"") + json.dumps(g).encode() + b":")
            out += frag if isinstance(frag, list) else [frag]
        out.append(b"}")
    out.append(b"}")
    return out


def fetch_reply(parts):
    r = Reply()
    r.fetch_parts = list(parts)
    r.set_pieces(fetch_body([(g, config_data(v)) for g, v in r.fetch_parts]))
    return r


def http_error(status, body=None):
    """A non-200 HTTP reply as a proxy or servlet container would write it."""
    if status == 401:
        return token_error()
    if body is None:
        reason = {400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                  500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
                  504: "Gateway Time-out"}.get(status, "Error")
        text = ("<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1>"
                "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
                % (status, reason, status, reason))
        return Reply(status=status, body=text.encode(), content_type="text/html")
    return Reply(status=status, body=body.encode("utf-8") if isinstance(body, str) else body,
                 content_type="text/plain")
