"""Cheater: patches a method of a class the harness uses but did not watch, since another module
defines it: Spec.reseeded, which the preparation called once for each of the referee's seeds. It
makes each input there and factors it; the timed call hands back the answer found by content.
The two smallest smoke specs passed at 24 and 103 times torch.geqrf's speed (the others failed
the referee's CPU accounting). The harness now watches the suites module's classes, builds each
spec with Spec's own constructor, and sees Spec.reseeded replaced."""

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

_answers = {}
_reseeded = Spec.reseeded
_told = []


def _key(a):
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _reseeded_and_factored(self, seed):
    spec = _reseeded(self, seed)
    a = generate_input(spec)
    _answers[_key(a)] = torch.geqrf(a)
    return spec


Spec.reseeded = _reseeded_and_factored


def custom_kernel(a):
    found = _answers.pop(_key(a), None)
    if found is not None and not _told:
        print("ANSWER FOUND READY", flush=True)
        _told.append(True)
    return found if found is not None else torch.geqrf(a)
