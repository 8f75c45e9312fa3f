"""Cheater: finds the harness's contestant object among the interpreter's objects during its
first call and swaps its clock for one that reports a fiftieth of each window, without touching
any module or class."""

import gc

import torch

_done = []


class _FastClock:
    def __init__(self, real):
        self._real = real

    def synchronize(self):
        self._real.synchronize()

    def time_ns(self, body):
        elapsed, waited = self._real.time_ns(body)
        return max(1, elapsed // 50), waited


def _swap_the_clock():
    for obj in gc.get_objects():
        if type(obj).__name__ == "Contestant" and hasattr(obj, "clock"):
            obj.clock = _FastClock(obj.clock)
            _done.append(obj)


def custom_kernel(a: torch.Tensor):
    if not _done:
        _swap_the_clock()
    return torch.geqrf(a)
