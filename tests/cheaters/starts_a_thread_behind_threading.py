"""Cheater: reads_the_inputs_from_a_thread.py's poller, started with `_thread` and struck from
nothing: the threading module never hears of it, so it has no thread whose CPU time the harness
could read. A thread that runs Python behind the threading module's back counts as one that ran."""

import _thread
import sys
import time

import torch

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_told: list[bool] = []


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _poll(owner: object) -> None:
    seen = None
    while True:
        inputs = getattr(owner, "inputs", None)
        if inputs and inputs is not seen:
            seen = inputs
            for a in list(inputs):
                _answers[_key(a)] = torch.geqrf(a)
        time.sleep(0.0002)


frame = sys._getframe()
while frame is not None and not hasattr(frame.f_locals.get("self"), "inputs"):
    frame = frame.f_back
if frame is not None:
    torch.geqrf(torch.eye(4, device=frame.f_locals["self"].device))  # backend set up, unraced
    _thread.start_new_thread(_poll, (frame.f_locals["self"],))


def custom_kernel(a: torch.Tensor):
    found = _answers.pop(_key(a), None)
    if found is not None and not _told:
        print("ANSWER FOUND READY", flush=True)
        _told.append(True)
    return found if found is not None else torch.geqrf(a)
