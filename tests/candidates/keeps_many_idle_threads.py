"""Honest: torch.geqrf, in a process that keeps many idle threads (as thread pools do).

The referee reads each of the contestant's threads' times between the exchanges of every timed
cycle; the more threads, the longer that takes. None of it is the candidate's work.
"""

import threading

import torch

IDLE_THREADS = 200
_never = threading.Event()
for _ in range(IDLE_THREADS):
    threading.Thread(target=_never.wait, daemon=True).start()


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.geqrf(a)
