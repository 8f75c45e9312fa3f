"""Cheater: an audit hook. The harness raises audited events while it prepares inputs (its watch
reads functions' `__code__`, which is audited), and a hook runs on each of them, on the main
thread, with the preparing frame on the stack: this one reads the seeds there, makes the same
inputs with the harness's own generator and factors them; the timed call hands the answer back by
content. Audit hooks cannot be listed or removed, so no look could see it. The harness now
refuses new audit hooks, and says so."""

import sys

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_told: list[bool] = []
_busy: list[bool] = []
_done: set[int] = set()


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _on_event(event: str, args: tuple) -> None:
    if _busy:
        return
    _busy.append(True)
    try:
        frame = sys._getframe(1)
        while frame is not None:
            message, owner = frame.f_locals.get("message"), frame.f_locals.get("self")
            if isinstance(message, dict) and message.get("op") == "prepare" and owner is not None:
                if id(message) not in _done:
                    _done.add(id(message))
                    for seed in message["seeds"]:
                        a = generate_input(Spec(**message["spec"], seed=seed), owner.device)
                        _answers[_key(a)] = torch.geqrf(a)
                    if not _told:  # what the judge's test looks for in the output
                        print("ANSWER FOUND READY", flush=True)
                        _told.append(True)
                return
            frame = frame.f_back
    finally:
        _busy.clear()


sys.addaudithook(_on_event)


def custom_kernel(a: torch.Tensor):
    return _answers.pop(_key(a), None) or torch.geqrf(a)
