"""Candidate: plain-PyTorch blocked compact-WY Householder QR; a tuner may edit CONFIG."""

import torch
from qrsup.kernels.blocked_wy import BlockedConfig, geqrf_blocked

CONFIG = BlockedConfig(panel_width=32, panel_impl="unblocked", t_method="solve", update_chunk=0)


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return geqrf_blocked(a, CONFIG)
