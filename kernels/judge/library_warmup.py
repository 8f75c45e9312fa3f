"""What every candidate's first call would otherwise pay for the libraries, paid by the harness.

A contestant serves one candidate and is started ahead of it. On an H200 a fresh contestant's
first calls of the qr_v2 test specs took 2.1 s with the Triton cache warm
(`scripts/measure_first_calls.py`, docs/benchmarks.md, 2026-12-04): 0.44 s of it was Triton
hashing its own installation for the cache key (once a process), 0.14 s importing the Gluon
front end that Triton's code generator pulls in, and the first batched GEMM made cuBLAS's handle.
None of that depends on the candidate, and all of it landed in the first call's window, on the
judge's wall clock. Done here, before any candidate code exists in the process, it is the same
for every candidate, and it overlaps whatever the judge did before it needed this contestant.
"""

from __future__ import annotations

import importlib

import torch

# Imported by Triton's compile path on a kernel's first launch, even with the kernel cached.
TRITON_MODULES = ("triton", "triton.compiler.code_generator", "triton.experimental.gluon")


def warm_libraries(device: torch.device) -> list[str]:
    """Warm Triton and cuBLAS for `device`; the names of what was warmed. Nothing raises: a
    library missing or failing here is only a colder first call later. On the CPU candidates'
    kernels run in Triton's interpreter, which compiles nothing, so there is nothing to warm."""
    if device.type != "cuda":
        return []
    warmed = warm_triton()
    if _try(lambda: _warm_cublas(device)):
        warmed.append("cublas")
    return warmed


def warm_triton() -> list[str]:
    """Import Triton's compile path and compute its installation key (cached for the process);
    without Triton, nothing."""
    warmed = [name for name in TRITON_MODULES if _try(lambda n=name: importlib.import_module(n))]
    key = triton_key_function()
    if key is not None and _try(key):
        warmed.append("triton_key")
    return warmed


def triton_key_function():
    """Triton's cached hash of its own installation, where this Triton keeps it."""
    for module in ("triton.runtime.cache", "triton.compiler.compiler"):
        try:
            found = getattr(importlib.import_module(module), "triton_key", None)
        except Exception:
            continue
        if found is not None:
            return found
    return None


def _warm_cublas(device: torch.device) -> None:
    """One small batched GEMM on this thread's current stream: cuBLAS's handle and workspace."""
    x = torch.ones(2, 8, 8, device=device)
    torch.bmm(x, x)
    torch.cuda.synchronize(device)


def _try(action) -> bool:
    try:
        action()
    except Exception:
        return False
    return True
