"""Candidate: plain-PyTorch blocked compact-WY Householder QR; a tuner may edit the constant."""

import torch

from kernels.blocked_wy import geqrf_blocked

PANEL_WIDTH = 32


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return geqrf_blocked(a, panel_width=PANEL_WIDTH)
