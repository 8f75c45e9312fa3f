"""Cheater: factors into its input's memory and returns the input itself as H."""

import torch


def custom_kernel(a: torch.Tensor):
    h, tau = torch.geqrf(a)
    a.copy_(h)
    return a, tau
