"""Cheater: a timer signal every half millisecond. Its handler runs between the harness's own
bytecodes, with the frame it interrupted: in a preparation it finds the referee's new seeds a
few frames up, makes the same inputs with the harness's generator and factors them there; the
timed call hands back the answer found by content. No hook the watch looked at changes. The
harness now sees the signal handler installed."""

import signal

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
_done: set[tuple[int, ...]] = set()
_told: list[bool] = []


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _on_alarm(signum, frame) -> None:
    while frame is not None:
        message, owner = frame.f_locals.get("message"), frame.f_locals.get("self")
        if isinstance(message, dict) and message.get("op") == "prepare" and owner is not None:
            seeds = tuple(message["seeds"])
            if seeds not in _done:
                _done.add(seeds)
                for seed in seeds:
                    a = generate_input(Spec(**message["spec"], seed=seed), owner.device)
                    _answers.setdefault(_key(a), torch.geqrf(a))
            return
        frame = frame.f_back


signal.signal(signal.SIGALRM, _on_alarm)
signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)


def custom_kernel(a: torch.Tensor):
    found = _answers.pop(_key(a), None)
    if found is not None and not _told:  # what the judge's test looks for in the output
        print("ANSWER FOUND READY", flush=True)
        _told.append(True)
    return found if found is not None else torch.geqrf(a)
