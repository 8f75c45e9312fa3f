"""Cheater: no hook, no patch. A finalizer on each H it returns fires when the harness lets the
last outputs go, which it did at the start of the next preparation, with the referee's new seeds
in that frame. The finalizer makes the same inputs from them with the harness's own generator
and factors them there; the timed call hands back the answer found by content. On a GPU, a small
spec's whole kernel fits in the referee's allowance for a cycle. The harness now lets outputs go
at the end of their inspection, before any new seed is in the process."""

import sys
import weakref

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_told: list[bool] = []


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _factor_the_next_inputs() -> None:
    frame = sys._getframe(1)
    while frame is not None:
        message, owner = frame.f_locals.get("message"), frame.f_locals.get("self")
        if isinstance(message, dict) and message.get("op") == "prepare" and owner is not None:
            spec = Spec(**message["spec"], seed=0)
            for seed in message["seeds"]:
                a = generate_input(spec.reseeded(seed), owner.device)
                _answers[_key(a)] = torch.geqrf(a)
            return
        frame = frame.f_back


def custom_kernel(a: torch.Tensor):
    found = _answers.pop(_key(a), None)
    if found is not None and not _told:  # what the judge's test looks for in the output
        print("ANSWER FOUND READY", flush=True)
        _told.append(True)
    h, tau = found if found is not None else torch.geqrf(a)
    weakref.finalize(h, _factor_the_next_inputs)
    return h, tau
