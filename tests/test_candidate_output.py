"""What the judge keeps of a candidate's own output (kernels/judge/referee_process.py)."""

from __future__ import annotations

from qrsup.kernels.judge.referee_process import (
    OUTPUT_HEAD_BYTES,
    OUTPUT_TAIL_BYTES,
    read_output,
)


def test_a_flooded_output_keeps_its_head_and_tail_and_says_what_was_left_out(tmp_path):
    """Only the head and the tail are read: a candidate may fill the file to its size limit."""
    path = tmp_path / "output.log"
    middle = 3_000_000
    path.write_bytes(b"H" * OUTPUT_HEAD_BYTES + b"\xff" * middle + b"T" * OUTPUT_TAIL_BYTES)
    text = read_output(path)
    head, omitted, tail = text.split("\n")
    assert head == "H" * OUTPUT_HEAD_BYTES and tail == "T" * OUTPUT_TAIL_BYTES
    assert omitted == f"[… {middle} bytes omitted …]"


def test_a_short_output_is_kept_whole_and_a_missing_one_is_empty(tmp_path):
    path = tmp_path / "output.log"
    path.write_text("hello\nthere\n")
    assert read_output(path) == "hello\nthere\n"
    assert read_output(tmp_path / "none.log") == ""
