"""Line-delimited JSON over pipes, with size caps, deadlines and signed frames.

The referee and the contestant talk over two private pipes. The referee reports to the runner
over a third pipe whose frames carry an HMAC under a key only the runner and the referee know,
so bytes injected by anything else are detected rather than believed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import select
import time
from collections.abc import Callable

MAX_LINE_BYTES = 1 << 20
# Bound once, at import. The contestant runs this module beside the candidate, whose code could
# rebind `json.dumps` or `os.read` to rewrite a reply's claimed time or read the referee's seeds
# as they arrive; the harness calls these objects, whatever the modules' names hold later.
_json_error = json.JSONDecodeError
_read, _write, _select, _monotonic = os.read, os.write, select.select, time.monotonic


def _made_encoder() -> Callable[[object], str]:
    """Compact JSON, no NaN. `json.dumps` runs JSONEncoder's methods, looked up on the class at
    each call (a candidate that divided each claimed time by ten passed the smoke suite at 8.9
    times torch.geqrf's speed that way); the C encoder made here from bound ones does not."""
    encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
    make = json.encoder.c_make_encoder
    if make is None:  # an interpreter without json's C part
        return encoder.encode
    ascii_strings = json.encoder.encode_basestring_ascii
    chunks = make(None, encoder.default, ascii_strings, None, ":", ",", False, False, False)
    return lambda value: "".join(chunks(value, 0))


def _made_decoder() -> Callable[[str], object]:
    """JSON text to a value, through a C scanner made here: `json.loads` runs JSONDecoder's
    methods, looked up on the class at each call, where a wrapper would see each seed."""
    decoder = json.JSONDecoder()
    make = json.scanner.c_make_scanner
    if make is None:
        return decoder.decode
    scan = make(decoder)

    def decode_text(text: str) -> object:
        start = len(text) - len(text.lstrip())
        try:
            value, end = scan(text, start)
        except StopIteration as stop:
            raise _json_error("Expecting value", text, stop.value) from None
        if text[end:].strip():
            raise _json_error("Extra data", text, end)
        return value

    return decode_text


_to_json, _from_json = _made_encoder(), _made_decoder()


class ChannelClosed(EOFError):
    """The other end closed its pipe (it exited or crashed)."""


class ChannelTimeout(TimeoutError):
    """No complete message arrived before the deadline."""


class ProtocolError(ValueError):
    """The other end sent bytes that are not a valid message."""


class LineReader:
    """Reads newline-terminated messages from a fd without blocking past a deadline."""

    def __init__(self, fd: int, max_line_bytes: int = MAX_LINE_BYTES) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._scanned = 0  # the buffer's bytes known to hold no newline
        self._max = max_line_bytes

    def read_line(
        self, deadline: float | None = None, on_tick: Callable[[], None] | None = None
    ) -> bytes:
        """The next line (without its newline); `on_tick` runs about every 50 ms while waiting."""
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)  # a long line is searched once, not per chunk
            if len(self._buffer) > self._max:
                raise ProtocolError(f"message longer than {self._max} bytes")
            wait = 0.05
            if deadline is not None:
                remaining = deadline - _monotonic()
                if remaining <= 0:
                    raise ChannelTimeout("deadline passed")
                wait = min(wait, remaining)
            ready, _, _ = _select([self._fd], [], [], wait)
            if ready:
                chunk = _read(self._fd, 1 << 16)
                if not chunk:
                    raise ChannelClosed("pipe closed")
                self._buffer.extend(chunk)
            elif on_tick is not None:
                on_tick()


def encode(message: dict) -> bytes:
    return _to_json(message).encode() + b"\n"


def decode(line: bytes) -> dict:
    try:
        message = _from_json(line.decode())
    except (UnicodeDecodeError, _json_error) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("message is not a JSON object")
    return message


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def sign(key: bytes, message: dict) -> bytes:
    """A frame: hex HMAC-SHA256 of the JSON payload, a space, the payload, a newline."""
    payload = _to_json(message).encode()
    mac = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    return mac + b" " + payload + b"\n"


def verify(key: bytes, line: bytes) -> dict:
    """The frame's message if its HMAC is right; a ProtocolError otherwise."""
    mac, sep, payload = line.partition(b" ")
    if not sep:
        raise ProtocolError("unsigned frame")
    expected = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(mac, expected):
        raise ProtocolError("frame with a bad signature")
    return decode(payload)
