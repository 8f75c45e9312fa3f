"""Cheater: returns outputs not yet computed, as a tensor subclass that factors the input when
the harness first detaches them, which it does only to export them. The referee asks for an
export only for the repetitions it will check, and says so only after the window has closed, so
the window times next to nothing and every checked answer is right. No tool of the harness is
changed (a subclass's hook is not a torch mode), so its watch sees nothing; the referee's clock
over the exported cycles must."""

import torch
from qrsup.kernels.fast.geqrf import geqrf as fast_geqrf

_pending: dict[int, tuple] = {}
KEPT = 64  # calls whose outputs may still be exported


def _factor(a: torch.Tensor):
    return fast_geqrf(a, check_finite=False) if a.is_cuda else torch.geqrf(a)


class _Deferred(torch.Tensor):
    """H or tau, filled in when first detached."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.detach and id(args[0]) in _pending:
            _settle(args[0])
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def _settle(t: torch.Tensor) -> None:
    a, h, tau = _pending.pop(id(t))
    _pending.pop(id(h if t is tau else tau), None)
    real_h, real_tau = _factor(a)
    with torch._C.DisableTorchFunctionSubclass():
        h.copy_(real_h)
        tau.copy_(real_tau)


def custom_kernel(a: torch.Tensor):
    h = torch.empty_like(a).as_subclass(_Deferred)
    tau = a.new_empty(a.shape[:-1]).as_subclass(_Deferred)
    _pending[id(h)] = _pending[id(tau)] = (a, h, tau)
    while len(_pending) > 2 * KEPT:
        _pending.pop(next(iter(_pending)))
    return h, tau
