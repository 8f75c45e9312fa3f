"""A plan's Triton launches replayed without Triton's dispatch (`direct_launch`).

Triton's dispatch binds the arguments, works out their specialization and looks up the compiled
kernel on every launch: 30–70 µs of Python a launch on the H200's host, against 20–100 µs of
device work for most of a plan's steps. A plan launched eagerly can then leave the GPU waiting on
the host, and its time depends on the host's speed (60×1024: 5.7 ms in one run, 12–15 ms in
the next, docs/benchmarks.md, 2026-12-03). A CUDA graph removes the waiting but copies A in and
H out on every call.

Here the first call of one plan on one input layout goes through Triton's dispatch, which returns
each launch's compiled kernel; later calls hand those kernels their arguments directly, as
single_launch.py does for a one-panel plan. Triton specializes a launch on its integer
arguments' values and its pointers' 16-byte alignment: for one plan every integer is fixed but
A's strides, and every pointer is a fresh buffer (aligned) or a view at an offset the plan fixes,
but A's; so the kernels are kept per A's strides, A's alignment and the device. Each launch is
checked against the kernel recorded at its place, so a driver change that reorders launches
fails loudly instead of running the wrong binary.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import triton

OPTIONS = ("num_warps", "num_stages")  # launch options, not kernel parameters

_ACTIVE: ContextVar[DirectLaunches | None] = ContextVar("direct_launches", default=None)


def launch(
    kernel: triton.JITFunction, grid: tuple[int, ...], *args: object, **kwargs: object
) -> None:
    """kernel[grid](*args, **kwargs), or its compiled kernel launched directly where a
    DirectLaunches is replaying."""
    replay = _ACTIVE.get()
    if replay is None:
        kernel[grid](*args, **kwargs)
    else:
        replay.launch(kernel, grid, args, kwargs)


class DirectLaunches:
    """The compiled kernels of one plan's launches for one input layout, in launch order."""

    def __init__(self) -> None:
        self._kernels: list[tuple[triton.JITFunction, object]] = []
        self._recorded = False
        self._next = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        """Launch through this replay while the block runs: the first complete run records,
        later runs replay; a run that fails while recording leaves nothing recorded."""
        self._next = 0
        token = _ACTIVE.set(self)
        try:
            yield
        except BaseException:
            if not self._recorded:
                self._kernels.clear()
            raise
        finally:
            _ACTIVE.reset(token)
        self._recorded = True

    def launch(
        self,
        kernel: triton.JITFunction,
        grid: tuple[int, ...],
        args: tuple[object, ...],
        kwargs: dict[str, object],
    ) -> None:
        if not self._recorded:
            self._kernels.append((kernel, kernel[grid](*args, **kwargs)))
            return
        recorded, compiled = self._kernels[self._next]
        if recorded is not kernel:
            raise RuntimeError(
                f"direct launch {self._next}: recorded {recorded.__name__}, "
                f"asked for {kernel.__name__}"
            )
        self._next += 1
        full_grid = (*grid, *(1,) * (3 - len(grid)))
        compiled[full_grid](*parameters_in_order(kernel, args, kwargs))


def parameters_in_order(
    kernel: triton.JITFunction, args: tuple[object, ...], kwargs: dict[str, object]
) -> list[object]:
    """Every parameter of `kernel`, constexprs too, in its signature's order: what a compiled
    kernel takes, as Triton's own launch passes them."""
    values = list(args)
    for name, default in _signature(kernel)[len(args) :]:
        if name in kwargs:
            values.append(kwargs[name])
        elif default is not inspect.Parameter.empty:
            values.append(default)
        else:
            raise TypeError(f"{kernel.__name__}: no value for {name}")
    return values


@functools.cache
def _signature(kernel: triton.JITFunction) -> tuple[tuple[str, object], ...]:
    """(name, default) of each parameter, read once per kernel: a replayed launch is where
    host microseconds count."""
    parameters = inspect.signature(kernel.fn).parameters.values()
    return tuple((param.name, param.default) for param in parameters)
