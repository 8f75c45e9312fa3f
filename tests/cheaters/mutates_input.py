"""Cheater: factors correctly, then scribbles over its input."""

import torch


def custom_kernel(a: torch.Tensor):
    h, tau = torch.geqrf(a)
    a.mul_(2.0)
    return h, tau
