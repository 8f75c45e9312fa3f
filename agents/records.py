"""Append-only records: the agent's `events.jsonl`, the workspace's `log.md`, the `agent.log`.

Each record is one `write` on a descriptor opened with O_APPEND, under an exclusive lock, then
fsync'd: a crash leaves whole records or none, and nothing is ever rewritten.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path


def append_atomically(path: Path, text: str) -> None:
    """Append `text` in one locked write and flush it to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short append to {path}: {written} of {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: Path, text: str) -> None:
    """Replace a small file whole (write a temp file, then rename): readers see old or new."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text)
    temp.replace(path)


def timestamp(at: float | None = None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at if at is not None else time.time()))


def append_event(path: Path, event: Mapping[str, object]) -> None:
    """One JSON object per line; `time` is added if missing."""
    record = {"time": timestamp(), **event}
    append_atomically(path, json.dumps(record, separators=(",", ":"), default=str) + "\n")


def read_events(path: Path) -> Iterator[dict]:
    """Every complete event in the file (a torn last line from a crash is skipped)."""
    try:
        handle = path.open()
    except FileNotFoundError:
        return
    with handle:
        for line in handle:
            if line.endswith("\n"):
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def format_ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.4g} ms"


def shorten(text: str, limit: int) -> str:
    """The first line of `text` in at most `limit` characters: cut at a word boundary, with an
    ellipsis, since a reason cut mid-word reads as another word ("cond" for "condition")."""
    lines = text.strip().splitlines()
    line = lines[0] if lines else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    word_start = cut.rfind(" ")
    if word_start > limit // 2:  # a long token (a path) is cut where it must be
        cut = cut[:word_start]
    return cut.rstrip(" ,;:") + "…"


def log_entry(event: Mapping[str, object]) -> str:
    """The human-readable `log.md` entry for one evaluated candidate."""
    means = event.get("spec_means_ns") or {}
    per_spec = " · ".join(f"{k}: {v / 1e6:.4g}" for k, v in sorted(means.items(), key=_index))
    lines = [
        f"\n## {event.get('time', timestamp())} · {event['agent']} · {event['candidate_id']} · "
        f"{event['verdict']} · {format_ms(event.get('geomean_ns'))}",
        "",
        f"- parent: {event.get('parent_id') or '—'} · role: {event.get('role')} · "
        f"iteration: {event.get('iteration')} · decision: {event.get('decision')}",
        f"- hypothesis: {event.get('hypothesis') or '—'}",
    ]
    if per_spec:
        lines.append(f"- per-spec (ms): {per_spec}")
    if event.get("reason"):
        lines.append(f"- reason: {shorten(str(event['reason']), 300)}")
    return "\n".join(lines) + "\n"


def log_submission(workspace: Path, event: Mapping[str, object]) -> None:
    """Append one candidate's entry to the workspace's `log.md`."""
    append_atomically(workspace / "log.md", log_entry(event))


def _index(item: tuple[object, object]) -> int:
    return int(str(item[0]))


class AgentLog:
    """The tail-friendly human log of one agent: one timestamped line per event."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, message: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        text = "".join(f"{stamp} {line}\n" for line in message.rstrip("\n").splitlines() or [""])
        append_atomically(self.path, text)
