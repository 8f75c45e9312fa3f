"""Judges that share one device take turns on it, whoever started them: a GPU, or the CPU.

Two judges on one GPU slow each other's timed windows and stretch each other's input preparation,
which the timing-integrity gate cannot tell from work hidden on a side stream: honest candidates
fail it. Turns per spec inside the referee were not enough on an H200 (CUDA contexts starting and
ending still met a neighbour's timing), so a whole judge run, from the referee's start until its
process tree is gone, is one turn. What needs no GPU still overlaps: a model proposing, static
checks, recording, git.

The CPU is one device too: judges timing candidates on the CPU at once share its cores, and
each slows the other's timed windows, which makes their comparisons unfair. They take turns on
one file for the whole machine.

The turn file belongs to the device, not to a session: agents sharing a GPU, two sessions, and a
person's `qrsup bench` on a GPU the agents use all wait for each other. It lives in a directory of
the user's own (another user's judges do not coordinate with these). A candidate cannot take the
turn from a neighbour: its own judge holds it for as long as the candidate lives. One that unlinks
the file lets the next judge time beside it, which slows both and helps neither.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from qrsup.kernels.judge.environment import physical_gpu
from qrsup.kernels.judge.locks import file_lock


class DeviceTurns:
    """Turns on one device through an exclusive file lock; no file means no one to wait for.

    `on_wait` is told when a turn has to wait, so progress can say why nothing moves.
    """

    def __init__(self, path: Path | None, on_wait: Callable[[], None] | None = None) -> None:
        self.path = path
        self.on_wait = on_wait
        self.waited_s = 0.0

    @contextmanager
    def turn(self) -> Iterator[None]:
        if self.path is None:
            yield
            return
        asked = time.monotonic()
        with file_lock(self.path, self.on_wait):
            self.waited_s += time.monotonic() - asked
            yield


def turn_file(device: str, environ: Mapping[str, str]) -> Path:
    """The turn file of the device behind `device` as this process sees it: the GPU's, or the
    machine's one file for the CPU."""
    turns = Path(tempfile.gettempdir()) / f"qrsup-{os.getuid()}" / "gpu-turns"
    if not device.startswith("cuda"):
        return turns.parent / "cpu.turns"
    return turns / f"{physical_gpu(device, environ)}.turns"
