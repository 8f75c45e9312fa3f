"""Where one factorization's device time goes, step by step, for the shipped fast kernel.

`python scripts/launch_profile.py [--shape 640x512 ...] [--configs FILE] [--repeats 5]` runs each
shape's plan (the qr_v2 benchmark shapes by default) once to warm up, then `--repeats` times with
a CUDA event pair around every step, and prints one table per shape: the steps grouped by what
they do (panels, updates inside a block by the panel width, trailing updates by the block width,
T factors), with their count, median device time over the runs and share of the whole.
torch.profiler's view per kernel name lumps an update inside a block with a trailing one; the
plan knows which is which.

On a CPU it runs in Triton's interpreter (TRITON_INTERPRET=1) with a wall clock, which checks
the script, not the kernel's speed.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.driver import Buffers, prescale, run_op, run_plan
from qrsup.kernels.fast.plan import (
    FusedOp,
    LookaheadOp,
    Op,
    OuterJoinOp,
    PanelOp,
    Plan,
    SplitPanelOp,
    TFactorOp,
    UpdateOp,
    make_plan,
)
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec, get_suite


def step_kind(op: Op) -> str:
    """A step's group in the table."""
    if isinstance(op, PanelOp):
        return f"panel {op.nb} wide"
    if isinstance(op, SplitPanelOp):
        return f"row-split panel {op.nb} wide"
    if isinstance(op, UpdateOp):
        how = ", cuBLAS" if op.library else ", rows split" if op.slab_rows else ""
        return f"update by {op.nb} reflectors{how}"
    if isinstance(op, TFactorOp):
        return f"T factor {op.width} wide" + (", rows split" if op.gram_rows else "")
    if isinstance(op, LookaheadOp):
        return f"update by {op.update.nb} + next panel"
    if isinstance(op, OuterJoinOp):
        return f"outer T join {op.width} wide, cuBLAS"
    return type(op).__name__


class StepClock:
    """Device time per step: CUDA events, or a wall clock around a synchronous CPU step."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.marks: list[tuple[str, object, object]] = []

    def time(self, kind: str, run: Callable[[], None]) -> None:
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
        else:
            start = time.perf_counter()
            run()
            end = time.perf_counter()
        self.marks.append((kind, start, end))

    def totals_us(self) -> dict[str, tuple[int, float]]:
        if self.cuda:
            torch.cuda.synchronize()
        totals: dict[str, tuple[int, float]] = defaultdict(lambda: (0, 0.0))
        for kind, start, end in self.marks:
            us = start.elapsed_time(end) * 1e3 if self.cuda else (end - start) * 1e6
            count, total = totals[kind]
            totals[kind] = (count + 1, total + us)
        return dict(totals)


def profile_plan(a: torch.Tensor, plan: Plan, repeats: int) -> dict[str, tuple[int, float]]:
    """(count, µs) per step kind: the median over `repeats` timed factorizations of `a`, after a
    warm-up run. One run alone is at the mercy of the GPU's clocks, which an idle machine lowers
    (two single runs of one tree differed by up to 40% in a step kind)."""
    if isinstance(plan.ops[0], FusedOp):
        raise SystemExit(f"{plan.batch}x{plan.n}: the fused path is one launch; nothing to split")
    run_plan(a, plan, Buffers.allocate(a, plan))  # the warm-up: every launch compiled
    runs = []
    for _ in range(repeats):
        out = Buffers.allocate(a, plan)
        clock = StepClock(a.device)
        clock.time("prescale", lambda out=out: prescale(a, plan, out))
        for op in plan.ops:
            clock.time(step_kind(op), lambda op=op, out=out: run_op(a, plan, op, out))
        runs.append(clock.totals_us())
    return {
        kind: (count, statistics.median(run[kind][1] for run in runs))
        for kind, (count, _) in runs[0].items()
    }


def table(label: str, totals: dict[str, tuple[int, float]]) -> str:
    whole = sum(us for _, us in totals.values())
    lines = [f"{label}: {whole:.0f} us over {sum(c for c, _ in totals.values())} steps"]
    for kind, (count, us) in sorted(totals.items(), key=lambda item: -item[1][1]):
        lines.append(f"  {kind:<36} x{count:<4} {us:>10.0f} us  {100 * us / whole:5.1f}%")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", default=[], help="BATCHxN (repeatable)")
    parser.add_argument("--configs", type=Path, default=None, help="a configs TOML file")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs; the median is shown")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config = load_config(args.configs)
    if args.shape:
        specs = [Spec(*map(int, s.lower().split("x")), 1, "dense", 7) for s in args.shape]
    else:
        specs = list(get_suite("qr_v2").benchmarks)
    seen = set()
    for spec in specs:
        if (spec.batch, spec.n) in seen:
            continue
        seen.add((spec.batch, spec.n))
        plan = make_plan(spec.batch, spec.n, config.for_shape(spec.batch, spec.n))
        if plan is None:
            print(f"{spec.batch}x{spec.n}: no plan (torch.geqrf answers)")
            continue
        a = generate_input(spec, device)
        label = f"{spec.batch}x{spec.n} ({plan.shape.name})"
        print(table(label, profile_plan(a, plan, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
