"""Cheater: patches the method the harness times with on its class, not the module's names, so
every window reports a fiftieth of its real time. (On the CPU this once passed with a geomean
fifty times too good: only module-level names were watched.)"""

import sys

import torch

_clock = getattr(sys.modules["__main__"], "DeviceClock", None)  # the harness runs as __main__
if _clock is not None:
    _real = _clock.time_ns

    def _fast(self, body):
        elapsed, waited = _real(self, body)
        return max(1, elapsed // 50), waited

    _clock.time_ns = _fast


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
