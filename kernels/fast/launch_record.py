"""Every launch and scratch write of a factorization goes through this module, so that a call can
be recorded once and then made again straight from the host (direct_launch.py).

Outside a recording `launch`, `zero` and `copy` are just `kernel[grid](...)`, `t.zero_()` and
`dst.copy_(src)`. Inside one they also append what they did, with every kernel parameter's value
in Triton's order (constexprs included, as its own launcher receives them).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from triton.compiler import CompiledKernel


@dataclass(frozen=True)
class LaunchRecord:
    compiled: CompiledKernel
    grid: tuple[int, int, int]
    args: tuple[object, ...]  # every parameter's value, in the kernel's order


@dataclass(frozen=True)
class ZeroRecord:
    target: torch.Tensor


@dataclass(frozen=True)
class CopyRecord:
    target: torch.Tensor
    source: torch.Tensor


Record = LaunchRecord | ZeroRecord | CopyRecord
_records: ContextVar[list[Record] | None] = ContextVar("qrsup_launch_records", default=None)


@contextmanager
def recording() -> Iterator[list[Record]]:
    """What the launches, zero fills and copies inside the block did, in order."""
    records: list[Record] = []
    token = _records.set(records)
    try:
        yield records
    finally:
        _records.reset(token)


def launch(kernel: object, grid: tuple[int, ...], *args: object, **kwargs: object) -> None:
    """`kernel[grid](*args, **kwargs)`, recorded inside `recording()`."""
    compiled = kernel[grid](*args, **kwargs)
    records = _records.get()
    if records is not None:
        signature = inspect.signature(kernel.fn)  # Triton's and its interpreter's kernels
        named = {k: v for k, v in kwargs.items() if k in signature.parameters}  # not options
        bound = signature.bind(*args, **named)
        bound.apply_defaults()
        full_grid = (*grid, 1, 1)[:3]
        records.append(LaunchRecord(compiled, full_grid, tuple(bound.arguments.values())))


def zero(target: torch.Tensor) -> None:
    target.zero_()
    records = _records.get()
    if records is not None:
        records.append(ZeroRecord(target))


def copy(target: torch.Tensor, source: torch.Tensor) -> None:
    target.copy_(source)
    records = _records.get()
    if records is not None:
        records.append(CopyRecord(target, source))
