"""Cheater: swaps the code inside the harness clock's timing method, keeping the function object
itself, so every window on the CPU reports a fiftieth of its real time. (This passed with a
geomean fifty times too good while the watch compared only which object each name held.)"""

import sys

import torch


def _fiftieth(self, body):  # runs with the harness's globals once it is the method's code
    self.synchronize()
    waited_before = _schedstat()[1]  # noqa: F821 (the harness's name)
    start = _perf_counter_ns()  # noqa: F821
    body()
    return max(1, (_perf_counter_ns() - start) // 50), _schedstat()[1] - waited_before  # noqa: F821


_clock = getattr(sys.modules["__main__"], "DeviceClock", None)  # the harness runs as __main__
if _clock is not None:
    _clock.time_ns.__code__ = _fiftieth.__code__


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
