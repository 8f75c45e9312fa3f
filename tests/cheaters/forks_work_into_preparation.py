"""Cheater: starts the factorization while the judge is still preparing the inputs, in a forked
process on a spare core, so the timed call only collects a finished answer. It hooks the
harness's input generator (the contestant's `generate_input`) to hand each new matrix to a
worker process at once. A worker thread doing the same is charged by the judge's CPU
accounting; a forked process has to be charged too."""

import multiprocessing
import sys

import torch

_pool = None
_pending = []


def _factor(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    torch.set_num_threads(1)
    for _ in range(30):  # enough hidden work that no noise allowance covers it
        h, tau = torch.geqrf(a)
    return h, tau


def _hook() -> None:
    global _pool
    harness = sys.modules["__main__"]  # the contestant, run as `python -m ...contestant`
    generate = getattr(harness, "generate_input", None)
    if generate is None:
        return
    _pool = multiprocessing.get_context("fork").Pool(1)

    def generate_and_start(spec, device):
        a = generate(spec, device)
        _pending.append(_pool.apply_async(_factor, (a.clone(),)))
        return a

    harness.generate_input = generate_and_start


def custom_kernel(a: torch.Tensor):
    if _pool is None:
        _hook()
    if _pending:
        return _pending.pop(0).get()
    return torch.geqrf(a)


_hook()
