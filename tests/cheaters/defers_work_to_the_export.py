"""Cheater: returns unfilled outputs at once and factors the inputs only when the harness exports
them. The referee asks for an export only for the repetitions it will check, and says so only
after the window has closed, so the window times next to nothing and every checked answer is
right. It wraps the harness's export on the one contestant object (run as `__main__`), which the
harness's watch over its own module does not see; the referee's clock over the exported cycles
must."""

import gc

import torch
from qrsup.kernels.fast.geqrf import geqrf as fast_geqrf


def _factor(a: torch.Tensor):
    return fast_geqrf(a, check_finite=False) if a.is_cuda else torch.geqrf(a)


def _defer_to_the_export(contestant) -> None:
    export = contestant._export

    def factor_then_export() -> None:
        for a, (h, tau) in zip(contestant.inputs, contestant.outputs, strict=True):
            real_h, real_tau = _factor(a)
            h.copy_(real_h)
            tau.copy_(real_tau)
        export()

    contestant._export = factor_then_export


for _obj in gc.get_objects():
    if type(_obj).__name__ == "Contestant":
        _defer_to_the_export(_obj)


def custom_kernel(a: torch.Tensor):
    return torch.empty_like(a), torch.empty(a.shape[:-1], device=a.device)
