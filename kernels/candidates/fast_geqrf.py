"""Candidate: the shipped fast kernel (qrsup.kernels.fast.geqrf, Triton blocked compact-WY QR).

The contest's inputs are finite, so the host-synchronising NaN/Inf check is skipped. On a CPU
without TRITON_INTERPRET=1 the Triton kernels cannot run, and torch.geqrf answers instead.
"""

import torch
from qrsup.kernels.fast.geqrf import geqrf
from triton import knobs


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if not a.is_cuda and not knobs.runtime.interpret:
        return torch.geqrf(a)
    return geqrf(a, check_finite=False)
