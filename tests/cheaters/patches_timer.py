"""Cheater: does slow work (5 ms a call) and rebinds the harness's captured clock to one that runs
a hundred times slow, so the slow work would look fast."""

import sys
import time

import torch

harness = sys.modules["__main__"]  # the contestant harness runs as the main module

_real = time.perf_counter_ns
_origin = _real()
harness._perf_counter_ns = lambda: _origin + (_real() - _origin) // 100


def custom_kernel(a: torch.Tensor):
    time.sleep(0.005)
    return torch.geqrf(a)
