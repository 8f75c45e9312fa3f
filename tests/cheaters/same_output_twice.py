"""Cheater: reuses one output buffer, so every call returns the same H object."""

import torch

_buffers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def custom_kernel(a: torch.Tensor):
    h, tau = torch.geqrf(a)
    key = tuple(a.shape)
    if key not in _buffers:
        _buffers[key] = (torch.empty_like(h), torch.empty_like(tau))
    out_h, out_tau = _buffers[key]
    out_h.copy_(h)
    out_tau.copy_(tau)
    return out_h, out_tau
