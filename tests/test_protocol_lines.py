"""Lines over a pipe: a line past the reader's cap is a protocol error, and a reader given a
larger cap (the Ray driver's results carry traces) reads a long line whole."""

from __future__ import annotations

import os
import threading

import pytest
from qrsup.kernels.judge.protocol import MAX_LINE_BYTES, LineReader, ProtocolError


def feed(data: bytes) -> int:
    """A pipe's read end, written to (and closed) by a thread of its own."""
    read_fd, write_fd = os.pipe()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)

    threading.Thread(target=write, daemon=True).start()
    return read_fd


def test_a_line_past_the_cap_is_a_protocol_error():
    fd = feed(b"x" * (MAX_LINE_BYTES + 70_000) + b"\n")
    with pytest.raises(ProtocolError, match="longer than"):
        LineReader(fd).read_line()
    os.close(fd)


def test_a_reader_with_a_larger_cap_reads_a_long_line_whole_then_the_next():
    long = b"y" * (20 << 20)
    fd = feed(long + b"\nshort\n")
    reader = LineReader(fd, 32 << 20)
    assert reader.read_line() == long
    assert reader.read_line() == b"short"
    os.close(fd)
