"""Host-side schedule: which panels, at which widths and tile sizes, factor an n × n matrix."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from kernels.fast.config import ShapeConfig

MIN_PANEL_WIDTH = 4
MIN_BLOCK_M = 16
MAX_WARPS = 16
DOT_MIN = 16  # tl.dot needs every dimension ≥ 16


@dataclass(frozen=True)
class PanelStep:
    """One panel: columns [col, col + nb) ∩ [0, n), factored by a block_m × nb register tile."""

    col: int
    nb: int
    block_m: int
    warps: int

    @property
    def dot_width(self) -> int:
        """The panel width as the update's tl.dot sees it: padded to at least 16."""
        return max(DOT_MIN, self.nb)


@dataclass(frozen=True)
class Plan:
    """The panels of one n, with the trailing-update tiling shared by all of them."""

    n: int
    steps: tuple[PanelStep, ...]
    t_width: int
    """Side of the T buffer: the widest panel, padded to tl.dot's minimum."""
    shape: ShapeConfig


def next_pow2(x: int) -> int:
    """Smallest power of two ≥ x (x ≥ 1)."""
    return 1 << (x - 1).bit_length()


@functools.cache
def make_plan(n: int, shape: ShapeConfig) -> Plan | None:
    """The panel schedule for n under `shape`, or None when no panel fits the register budget."""
    steps: list[PanelStep] = []
    col = 0
    while col < n:
        block_m = max(MIN_BLOCK_M, next_pow2(n - col))
        nb = shape.panel_width
        while nb > MIN_PANEL_WIDTH and block_m * nb > shape.max_panel_elems:
            nb //= 2
        if block_m * nb > shape.max_panel_elems:
            return None
        threads = block_m * nb // shape.panel_elems_per_thread
        warps = min(MAX_WARPS, max(1, next_pow2(max(1, threads // 32))))
        steps.append(PanelStep(col=col, nb=nb, block_m=block_m, warps=warps))
        col += nb
    t_width = max(DOT_MIN, max(step.nb for step in steps))
    return Plan(n=n, steps=tuple(steps), t_width=t_width, shape=shape)
