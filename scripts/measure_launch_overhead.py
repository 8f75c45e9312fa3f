"""Where a small shape's call goes: host dispatch, launches, or the device's own work.

At 20×32 the shipped kernel's call took 44–54 µs in the judge, and its captured launches 27 µs
of device time per replay (docs/benchmarks.md, 2026-12-02): the host set the pace. Per shape
this prints, timed as the judge times a small spec (a window of WINDOW calls on fresh inputs
between two events, after a device sync; median over REPS windows), µs per call:
- geqrf: the shipped entry as configured (one-launch plans launch straight from the host,
  fast/direct_launch.py);
- CUDA graph: the plan's launches replayed from a graph on a static copy, outputs copied out;
- Triton dispatch: the plan's launches each through Triton's dispatch, into fresh buffers;
- device: the captured launches replayed back to back: the device's own time;
and the host's time to enqueue each call.

`python scripts/measure_launch_overhead.py [--reps 50] [--window 8] [--shape 20x32 ...]`
(on a GPU).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable

import torch
import triton
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.driver import Buffers, run_plan
from qrsup.kernels.fast.geqrf import FastGeqrf
from qrsup.kernels.fast.graphs import GraphCache
from qrsup.kernels.fast.plan import Plan, make_plan
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

DEFAULT_SHAPES = [(20, 32), (40, 176), (40, 352)]
Call = Callable[[torch.Tensor], object]


def timed_us(call: Call, inputs: list[torch.Tensor], window: int) -> tuple[float, float]:
    """(median device-timed µs per call, median host µs to enqueue one), in windows of calls."""
    device, host = [], []
    for first in range(0, len(inputs) - window + 1, window):
        batch = inputs[first : first + window]
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        begin = time.perf_counter_ns()
        for a in batch:
            call(a)
        host.append((time.perf_counter_ns() - begin) / 1e3 / window)
        end.record()
        torch.cuda.synchronize()
        device.append(start.elapsed_time(end) * 1e3 / window)
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


def graph_call(graphs: GraphCache, plan: Plan) -> Call:
    """The CUDA-graph path as `geqrf` takes it: replay on a static copy, fresh output copies."""

    def call(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        static = graphs.run(a, plan)
        return static.h.clone(), static.tau.clone()

    return call


def dispatched_call(plan: Plan) -> Call:
    """Each launch through Triton's dispatch, into fresh buffers."""

    def call(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = Buffers.allocate(a, plan)
        run_plan(a, plan, out)
        return out.h, out.tau

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--shape", type=parse_shape, action="append", default=[])
    args = parser.parse_args()
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    config = load_config().for_arch(90)
    for batch, n in args.shape or DEFAULT_SHAPES:
        shape = config.for_shape(batch, n)
        plan = make_plan(batch, n, shape)
        assert plan is not None
        spec = Spec(batch=batch, n=n, cond=1, case="dense", seed=5)
        inputs = [generate_input(spec.reseeded(i), "cuda") for i in range(args.reps * args.window)]
        shipped = FastGeqrf(config)
        calls: dict[str, Call] = {
            "geqrf": functools.partial(shipped, check_finite=False),
            "CUDA graph": graph_call(GraphCache(), plan),
            "Triton dispatch": dispatched_call(plan),
        }
        for name, call in calls.items():
            timed_us(call, inputs[: 2 * args.window], args.window)  # compile, load, capture
            device_us, host_us = timed_us(call, inputs, args.window)
            print(f"{batch}x{n} {name:>22}: {device_us:8.1f} µs per call, host {host_us:6.1f} µs")
        print(f"{batch}x{n} {'device':>22}: {replay_us(inputs[0], plan, 200):8.1f} µs")


if __name__ == "__main__":
    main()
