"""Following append-only files: new complete lines since the last read, nothing twice."""

from __future__ import annotations

import json
from pathlib import Path


def read_complete_lines(path: Path, offset: int, limit: int = -1) -> tuple[list[bytes], int]:
    """The complete lines from `offset` (reading at most `limit` bytes) and the offset after them.

    A torn last line, still being written, is left for the next read: it waits for its newline.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read(limit)
    except OSError:
        return [], offset
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    return data[:end].split(b"\n"), offset + end + 1


class EventTail:
    """Remembers an offset into one `events.jsonl`."""

    def __init__(self, path: Path, from_end: bool = False) -> None:
        self.path = path
        self.offset = path.stat().st_size if from_end and path.exists() else 0

    def read_new(self) -> list[dict]:
        lines, self.offset = read_complete_lines(self.path, self.offset)
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return events
