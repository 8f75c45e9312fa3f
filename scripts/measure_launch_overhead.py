"""Where a small shape's call goes: host dispatch, launches, or the device's own work.

At 20×32 the shipped kernel's call took 54 µs under the contest's timing, for a factorization
whose single panel is a few µs of arithmetic per matrix. Per shape this prints, as the contest
times a call (device synchronised, events around the call alone, median of REPS):
- shipped: `geqrf` as configured (a CUDA graph where the class says so);
- no graph: the same launches, each through Triton's dispatch;
- compiled: the single-panel launch through the compiled kernel, dispatch skipped (single-panel
  shapes only): what a dispatch-free launch path could reach;
- device: the captured launches replayed back to back, per replay: the device's own time;
and the host's enqueue time of each (the call, without waiting for the device).

`python scripts/measure_launch_overhead.py [--reps 200] [--shape 20x32 ...]` (on a GPU).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import statistics
import time
from collections.abc import Callable

import torch
import triton
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.driver import Buffers, run_plan
from qrsup.kernels.fast.geqrf import FastGeqrf
from qrsup.kernels.fast.panel import qr_panel_kernel
from qrsup.kernels.fast.plan import PanelOp, Plan, make_plan
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

DEFAULT_SHAPES = [(20, 32), (40, 176), (40, 352)]
Call = Callable[[torch.Tensor], object]


def timed_us(call: Call, inputs: list[torch.Tensor]) -> tuple[float, float]:
    """(median device-timed µs per call, median host µs to enqueue it), contest style."""
    device, host = [], []
    for a in inputs:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin = time.perf_counter_ns()
        start.record()
        call(a)
        end.record()
        host.append((time.perf_counter_ns() - begin) / 1e3)
        torch.cuda.synchronize()
        device.append(start.elapsed_time(end) * 1e3)
    return statistics.median(device), statistics.median(host)


def replay_us(a: torch.Tensor, plan: Plan, replays: int) -> float:
    """The plan's launches captured once and replayed back to back: device µs per replay."""
    out = Buffers.allocate(a, plan)
    run_plan(a, plan, out)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run_plan(a, plan, out)
    graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / replays


class CompiledPanel:
    """The single-panel launch through its compiled kernel: Triton's dispatch done once."""

    def __init__(self, plan: Plan) -> None:
        (op,) = plan.ops
        assert isinstance(op, PanelOp)
        self.plan, self.op = plan, op
        self.kernel: object | None = None

    def __call__(self, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        plan, op = self.plan, self.op
        out = Buffers.allocate(a, plan)
        t = out.t
        args = (
            a, out.h, out.tau, t, out.amax, plan.n, 0, *a.stride(), *out.h.stride(),
            out.tau.stride(0), t.stride(0), t.stride(1),
        )  # fmt: skip
        pair = plan.shape.panel_pair_reduce
        constexprs = dict(BLOCK_M=op.block_m, NB=op.nb, SELF_SCALE=True, PAIR_REDUCE=pair)
        if self.kernel is None:
            self.kernel = qr_panel_kernel[(plan.batch,)](*args, **constexprs, num_warps=op.warps)
        else:
            self.kernel[(plan.batch, 1, 1)](*args, *constexprs.values())
        return out.h, out.tau


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--shape", type=parse_shape, action="append", default=[])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    config = load_config().for_arch(90)
    for batch, n in args.shape or DEFAULT_SHAPES:
        shape = config.for_shape(batch, n)
        plan = make_plan(batch, n, shape)
        assert plan is not None
        spec = Spec(batch=batch, n=n, cond=1, case="dense", seed=5)
        inputs = [generate_input(spec.reseeded(i), "cuda") for i in range(args.reps)]
        shipped = FastGeqrf(config)
        ungraphed = dataclasses.replace(shape, graph=False)
        table = tuple(ungraphed if s is shape else s for s in config.shapes)
        plain = FastGeqrf(config.with_table(90, table))
        calls: dict[str, Call] = {
            f"shipped (graph={shape.graph})": functools.partial(shipped, check_finite=False),
            "no graph": functools.partial(plain, check_finite=False),
        }
        if len(plan.ops) == 1 and isinstance(plan.ops[0], PanelOp):
            compiled = CompiledPanel(plan)
            reference = shipped(inputs[0], check_finite=False)
            got = compiled(inputs[0])
            same = all(torch.equal(x, y) for x, y in zip(reference, got, strict=True))
            print(f"{batch}x{n}: compiled launch gives the shipped factors bit for bit: {same}")
            calls["compiled"] = compiled
        for name, call in calls.items():
            timed_us(call, inputs[:5])  # compile, load, capture
            device_us, host_us = timed_us(call, inputs)
            print(f"{batch}x{n} {name:>22}: {device_us:8.1f} µs per call, host {host_us:6.1f} µs")
        print(f"{batch}x{n} {'device':>22}: {replay_us(inputs[0], plan, args.reps):8.1f} µs")


if __name__ == "__main__":
    main()
