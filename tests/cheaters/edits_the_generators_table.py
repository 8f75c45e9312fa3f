"""Cheater: swaps the dense builder in the generator's table (`generators.BUILDERS`, data the
harness reads rather than a function it calls) for one that factors each input as it is made,
and hands the answer back in the timed call, found by the input's content. Before the harness
watched its modules' data, this passed the smoke suite on the CPU, since only a small spec's
work hid inside the cycle's allowance."""

import torch
from qrsup.kernels import generators

_done: dict = {}
_dense = generators.BUILDERS["dense"]


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


def _factoring_dense(a, gen, cond):
    made = _dense(a, gen, cond)
    if made.dim() == 3:
        _done[_key(made)] = torch.geqrf(made)
    return made


generators.BUILDERS["dense"] = _factoring_dense


def custom_kernel(a: torch.Tensor):
    return _done.pop(_key(a), None) or torch.geqrf(a)
