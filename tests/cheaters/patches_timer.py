"""Cheater: rebinds the harness's captured clock to one that runs a hundred times slow."""

import time

import torch

import kernels.judge.contestant as harness

_real = time.perf_counter_ns
_origin = _real()
harness._perf_counter_ns = lambda: _origin + (_real() - _origin) // 100


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
