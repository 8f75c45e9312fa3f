"""Following append-only JSONL files: new complete lines since the last read, nothing twice."""

from __future__ import annotations

import json
from pathlib import Path


class EventTail:
    """Remembers an offset into one `events.jsonl`; a torn last line waits for its newline."""

    def __init__(self, path: Path, from_end: bool = False) -> None:
        self.path = path
        self.offset = path.stat().st_size if from_end and path.exists() else 0

    def read_new(self) -> list[dict]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self.offset += end + 1
        events = []
        for line in data[: end + 1].splitlines():
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return events
