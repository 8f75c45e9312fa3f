"""Honest answers; in the first process that imports it, a repetition's calls also leave a
thread that, 3 ms later, holds the interpreter's lock for 30 ms while it sleeps, stalling the
harness after the timed window (wall time, no CPU). A process started later finds the marker
this one left and never stalls: the test's stand-in for a host that was busy at first and quiet
later. It needs the judge without isolation, whose private directories would hide the marker.
"""

import ctypes
import threading
from pathlib import Path

import torch

MARKER = Path(__file__).with_suffix(".stalled")
FIRST_PROCESS = not MARKER.exists()
MARKER.touch()
print(f"imported; first process: {FIRST_PROCESS}", flush=True)
_sleep_holding_the_lock = ctypes.PyDLL(None).usleep
_stall = threading.Timer(0, lambda: None)


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    global _stall
    if FIRST_PROCESS and not _stall.is_alive():
        _stall = threading.Timer(0.003, _sleep_holding_the_lock, args=(30_000,))
        _stall.start()
    return torch.geqrf(a)
