"""Cheater: its timed calls return zeros, and an instance attribute named like the harness's
export method hides that method, so that the right answers are factored and written only when
the referee asks for outputs back, outside every timed window."""

import gc

import torch


def _hide_the_export(contestant):
    real = contestant._export

    def export():
        contestant.outputs = [torch.geqrf(a) for a in contestant.inputs]
        real()

    contestant._export = export


for _obj in gc.get_objects():
    if type(_obj).__name__ == "Contestant":
        _hide_the_export(_obj)


def custom_kernel(a: torch.Tensor):
    return torch.zeros_like(a), a.new_zeros(a.shape[:-1])
