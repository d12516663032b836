"""The server side of RFC 6455 (WebSocket), written by hand.

Why by hand: the emulator is Python standard library only (it must run wherever python3
does, with nothing to install), and it is a test emulator, so it needs only the server
half, and it needs to be able to break the protocol on purpose (bad frames, garbage,
stalls) which a library would not let it do. The agent itself uses libwebsockets.

What is here: the handshake answer (Sec-WebSocket-Accept), reading client frames (which
must be masked), reassembling fragmented messages with control frames in between,
writing unmasked server frames, splitting a large text message into fragments at UTF-8
character boundaries (as Tomcat's encoder buffer does), and close payloads. No
extensions (permessage-deflate is never negotiated) and no subprotocols.
"""
import base64
import binascii
import hashlib
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONT, OP_TEXT, OP_BINARY = 0x0, 0x1, 0x2
OP_CLOSE, OP_PING, OP_PONG = 0x8, 0x9, 0xA
DATA_OPS = (OP_CONT, OP_TEXT, OP_BINARY)
CONTROL_OPS = (OP_CLOSE, OP_PING, OP_PONG)

# Close codes used here (RFC 6455 7.4.1).
NORMAL, GOING_AWAY, PROTOCOL_ERROR, UNSUPPORTED = 1000, 1001, 1002, 1003
NO_STATUS, INVALID_DATA, TOO_BIG, INTERNAL = 1005, 1007, 1009, 1011


class ProtocolError(Exception):
    """The client broke RFC 6455: the server closes with `code`."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code = code
        self.reason = reason


def accept_key(key):
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key.strip() + GUID).encode("ascii")).digest()).decode("ascii")


def valid_key(key):
    """A Sec-WebSocket-Key must be base64 of 16 bytes (RFC 6455 4.2.1)."""
    try:
        return len(base64.b64decode(key.strip().encode("ascii"), validate=True)) == 16
    except (binascii.Error, ValueError, UnicodeEncodeError, AttributeError):
        return False


def header_has_token(value, token):
    """A comma-separated header (Connection, Upgrade) contains `token`, case-insensitively."""
    return any(part.strip().lower() == token for part in (value or "").split(","))


# ---------------------------------------------------------------------- writing
def frame(opcode, payload=b"", fin=True, rsv=0, mask=None, length=None):
    """One frame. Server frames are unmasked; `mask` and `length` (a lying length) exist so
    faults can build invalid frames."""
    n = len(payload) if length is None else length
    head = bytearray([(0x80 if fin else 0) | ((rsv & 7) << 4) | (opcode & 0xF)])
    bit = 0x80 if mask is not None else 0
    if n < 126:
        head.append(bit | n)
    elif n < 1 << 16:
        head.append(bit | 126)
        head += struct.pack(">H", n)
    else:
        head.append(bit | 127)
        head += struct.pack(">Q", n)
    if mask is not None:
        head += mask
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes(head) + payload


def utf8_pieces(data, size):
    """Split UTF-8 bytes into pieces of at most `size` bytes without cutting a character
    (a piece is shorter when the next character would not fit, as Tomcat's encoder)."""
    if size <= 0 or len(data) <= size:
        return [data]
    out, start = [], 0
    while start < len(data):
        end = min(start + size, len(data))
        if end < len(data):
            while end > start and (data[end] & 0xC0) == 0x80:  # a continuation byte
                end -= 1
            if end == start:
                end = start + size
        out.append(data[start:end])
        start = end
    return out


def text_frames(data, fragment_size):
    """The frames of one text message: one frame, or a text frame with FIN clear, then
    continuation frames, the last with FIN set."""
    pieces = utf8_pieces(data, fragment_size)
    last = len(pieces) - 1
    return [frame(OP_TEXT if i == 0 else OP_CONT, p, fin=(i == last)) for i, p in enumerate(pieces)]


def close_payload(code=None, reason=""):
    if code is None:
        return b""
    return struct.pack(">H", code) + reason.encode("utf-8")[:123]


def parse_close(payload):
    """(code, reason) of a close frame; code None when there is none."""
    if len(payload) == 0:
        return None, ""
    if len(payload) == 1:
        raise ProtocolError(PROTOCOL_ERROR, "close frame with a 1-byte payload")
    code = struct.unpack(">H", payload[:2])[0]
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(INVALID_DATA, "close reason is not UTF-8")
    return code, reason


# ---------------------------------------------------------------------- reading
def _read_exact(rfile, n):
    data = rfile.read(n) if n else b""
    if len(data) < n:
        raise EOFError("connection closed mid-frame" if data else "connection closed")
    return data


class Reader:
    """Reads client frames from a file object and returns whole messages and control frames:
    ("text", str), ("binary", bytes), ("ping", bytes), ("pong", bytes), ("close", code, reason).
    EOFError when the peer closes the TCP connection; ProtocolError on a violation."""

    def __init__(self, rfile, max_message):
        self.rfile = rfile
        self.max_message = max_message
        self.frames = 0
        self.bytes = 0
        self.parts, self.kind = [], None   # a fragmented message in progress

    def _frame(self):
        b0, b1 = _read_exact(self.rfile, 2)
        fin, rsv, opcode = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF
        masked, n = bool(b1 & 0x80), b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", _read_exact(self.rfile, 2))[0]
        elif n == 127:
            n = struct.unpack(">Q", _read_exact(self.rfile, 8))[0]
            if n >> 63:
                raise ProtocolError(PROTOCOL_ERROR, "64-bit length with the top bit set")
        if rsv:
            raise ProtocolError(PROTOCOL_ERROR, "RSV bits set without an extension")
        if opcode not in DATA_OPS + CONTROL_OPS:
            raise ProtocolError(PROTOCOL_ERROR, "reserved opcode %#x" % opcode)
        if opcode in CONTROL_OPS and (not fin or n > 125):
            raise ProtocolError(PROTOCOL_ERROR, "fragmented or oversized control frame")
        if not masked:
            raise ProtocolError(PROTOCOL_ERROR, "client frame is not masked")
        if opcode in DATA_OPS and n > self.max_message:
            raise ProtocolError(TOO_BIG, "message too big")
        mask = _read_exact(self.rfile, 4)
        data = _read_exact(self.rfile, n)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(data)) if n < 4096 else _unmask(data, mask)
        self.frames += 1
        self.bytes += 2 + n
        return fin, opcode, payload

    def receive(self):
        """Control frames may come between the fragments of a message: they are returned
        at once and the message in progress is kept for the next call."""
        parts = self.parts
        while True:
            fin, opcode, payload = self._frame()
            if opcode == OP_PING:
                return ("ping", payload)
            if opcode == OP_PONG:
                return ("pong", payload)
            if opcode == OP_CLOSE:
                code, reason = parse_close(payload)
                return ("close", code, reason)
            if opcode == OP_CONT:
                if self.kind is None:
                    raise ProtocolError(PROTOCOL_ERROR, "continuation frame without a message")
            else:
                if self.kind is not None:
                    raise ProtocolError(PROTOCOL_ERROR, "new message inside a fragmented one")
                self.kind = opcode
            parts.append(payload)
            if sum(len(p) for p in parts) > self.max_message:
                raise ProtocolError(TOO_BIG, "message too big")
            if fin:
                data, kind = b"".join(parts), self.kind
                del parts[:]
                self.kind = None
                if kind == OP_BINARY:
                    return ("binary", data)
                try:
                    return ("text", data.decode("utf-8"))
                except UnicodeDecodeError:
                    raise ProtocolError(INVALID_DATA, "text message is not UTF-8")


def _unmask(data, mask):
    """XOR a large payload with the 4-byte mask quickly (int arithmetic, no per-byte loop)."""
    n = len(data)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(data, "big") ^ key).to_bytes(n, "big")
