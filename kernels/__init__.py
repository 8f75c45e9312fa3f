"""The QR problem and its kernels. `from qrsup.kernels import geqrf` gives the shipped fast QR.

The import is lazy so the judge and the CPU tools never pay for loading Triton.
"""

from __future__ import annotations

from typing import Any

__all__ = ["geqrf"]


def __getattr__(name: str) -> Any:
    if name == "geqrf":
        from qrsup.kernels.fast.geqrf import geqrf

        return geqrf
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
