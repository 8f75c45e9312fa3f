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
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ChannelTimeout("deadline passed")
                wait = min(wait, remaining)
            ready, _, _ = select.select([self._fd], [], [], wait)
            if ready:
                chunk = os.read(self._fd, 1 << 16)
                if not chunk:
                    raise ChannelClosed("pipe closed")
                self._buffer.extend(chunk)
            elif on_tick is not None:
                on_tick()


def encode(message: dict) -> bytes:
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def decode(line: bytes) -> dict:
    try:
        message = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("message is not a JSON object")
    return message


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def sign(key: bytes, message: dict) -> bytes:
    """A frame: hex HMAC-SHA256 of the JSON payload, a space, the payload, a newline."""
    payload = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
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
