"""Candidate that would run on a side cuda stream (the contest bans the word)."""

import torch


def custom_kernel(a: torch.Tensor):
    return torch.geqrf(a)
