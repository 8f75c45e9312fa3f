"""An agent's judge run as the cluster sees it: queued, running where, or waiting for the cluster.

The Ray executor rewrites this small file (`judge.json` in the agent's directory) as its run
moves; the TUI reads every agent's to show who holds which GPU and who waits in the queue.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

SLOT_STATES = ("idle", "queued", "running", "waiting")


@dataclass(frozen=True)
class JudgeSlot:
    """`state` since `since` (epoch seconds); the node and GPUs once Ray has placed the run."""

    state: str = "idle"
    since: float = 0.0
    node_id: str = ""
    node_ip: str = ""
    gpus: tuple[str, ...] = field(default_factory=tuple)
    detail: str = ""

    def __post_init__(self) -> None:
        if self.state not in SLOT_STATES:
            raise ValueError(f"judge slot state must be one of {SLOT_STATES}, not {self.state!r}")


def write_slot(path: Path, slot: JudgeSlot) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps({**asdict(slot), "gpus": list(slot.gpus)}))
    temp.replace(path)


def read_slot(path: Path) -> JudgeSlot | None:
    try:
        data = json.loads(path.read_text())
        return JudgeSlot(**{**data, "gpus": tuple(data.get("gpus") or ())})
    except (OSError, ValueError, TypeError):
        return None


class SlotWriter:
    """Keeps one agent's slot file current; does nothing without a path."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def set(self, state: str, **placement: object) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_slot(self.path, JudgeSlot(state, time.time(), **placement))  # type: ignore[arg-type]
