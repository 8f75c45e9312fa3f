"""Cheater: gives the harness's clock object a subclass of its own class that reports a fiftieth
of each window, leaving the clock's attributes and the original class as they were. (On the CPU
this passed with a geomean fifty times too good while the watch did not note an object's class.)"""

import gc

import torch

for _obj in gc.get_objects():
    if type(_obj).__name__ == "DeviceClock":
        _base = type(_obj)

        class _Clock(_base):
            def time_ns(self, body):
                elapsed, waited = super().time_ns(body)
                return max(1, elapsed // 50), waited

        _obj.__class__ = _Clock


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
