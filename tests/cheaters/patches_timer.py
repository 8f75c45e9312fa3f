"""Cheater: does slow work (5 ms a call) and rebinds the harness's captured clock to one that runs
a hundred times slow, so the slow work would look fast."""

import time

import torch

import kernels.judge.contestant as harness

_real = time.perf_counter_ns
_origin = _real()
harness._perf_counter_ns = lambda: _origin + (_real() - _origin) // 100


def custom_kernel(a: torch.Tensor):
    time.sleep(0.005)
    return torch.geqrf(a)
