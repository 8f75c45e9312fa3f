"""Cheater: factors each input while the judge is still preparing it, so the timed call only
hands back a finished answer. It replaces the contestant's input generator (run as `__main__`):
every matrix the harness generates is factored at once, on the same queue, and the harness's
own wait for the device at the end of its preparation waits for that work too. Nothing runs in
the timed window; the work lands in a phase only the referee's clock sees, and on a small spec
within that clock's noise. The harness sees its generator replaced."""

import sys

import torch
from qrsup.kernels.fast.geqrf import geqrf as fast_geqrf

_ready = []
_harness = sys.modules["__main__"]
_generate = getattr(_harness, "generate_input", None)


def geqrf(a: torch.Tensor, check_finite: bool = False):
    return fast_geqrf(a, check_finite=check_finite) if a.is_cuda else torch.geqrf(a)


def _generate_and_factor(spec, device):
    a = _generate(spec, device)
    _ready.append(geqrf(a, check_finite=False))
    return a


if _generate is not None:
    _harness.generate_input = _generate_and_factor


def custom_kernel(a: torch.Tensor):
    if _ready:
        return _ready.pop(0)
    return geqrf(a, check_finite=False)  # the untimed first call, before any hooked preparation
