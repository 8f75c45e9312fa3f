"""The agent's steering inbox: one JSON file per message, written atomically, taken at the boundary.

Anyone (the TUI, the CLI, the advisor) drops a message with `send`. The agent takes them between
iterations: each is recorded as consumed in the store (exactly once, keyed by its id) and then
moved to `consumed/`, so nothing sent is ever lost.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

KINDS = ("steer", "goal", "advisor", "pause", "resume", "stop", "budget")


@dataclass(frozen=True)
class Message:
    """A steering message: `kind` is one of KINDS; `text` is free text, the goal for `goal`, or
    the new cost budget for `budget` (`$10`, `500k tokens`)."""

    id: str
    kind: str
    text: str
    sender: str
    created_at: float


def send(inbox: Path, kind: str, text: str = "", sender: str = "human") -> Message:
    """Write one message atomically (temp file, then rename) and return it."""
    if kind not in KINDS:
        raise ValueError(f"unknown message kind {kind!r} (one of {', '.join(KINDS)})")
    inbox.mkdir(parents=True, exist_ok=True)
    message = Message(uuid.uuid4().hex[:12], kind, text, sender, time.time())
    name = f"{time.time_ns()}-{message.id}.json"
    temp = inbox / f".{name}.tmp"
    temp.write_text(json.dumps(asdict(message)))
    with temp.open("rb") as handle:
        os.fsync(handle.fileno())
    temp.rename(inbox / name)
    return message


def pending(inbox: Path) -> list[tuple[Path, Message]]:
    """Messages waiting, oldest first; unreadable files are skipped, never deleted."""
    found = []
    for path in sorted(inbox.glob("*.json")):
        try:
            data = json.loads(path.read_text())
            found.append((path, Message(**data)))
        except (OSError, ValueError, TypeError):
            continue
    return found


def archive(path: Path) -> None:
    """Move a taken message to `consumed/` beside the inbox's files."""
    done = path.parent / "consumed"
    done.mkdir(exist_ok=True)
    path.rename(done / path.name)
