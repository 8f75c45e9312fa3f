"""Cheater: returns (H, tau) as a tuple subclass whose iteration factors the input first. The
timed call only allocates; the harness iterates the pair only when it exports it, after the
window, for the repetitions the referee will check."""

import torch


class _Later(tuple):
    def __iter__(self):
        a, h, tau = tuple.__getitem__(self, 2), *tuple.__iter__(self[:2])
        real_h, real_tau = torch.geqrf(a)
        h.copy_(real_h)
        tau.copy_(real_tau)
        return iter((h, tau))

    def __len__(self) -> int:
        return 2


def custom_kernel(a: torch.Tensor):
    return _Later((torch.empty_like(a), a.new_empty(a.shape[:-1]), a))
