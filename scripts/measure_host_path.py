"""Where the host's time goes in a one-launch call (20×32), and what launching without Triton's
per-call set-up saves.

At 20×32 the warp path's kernel takes about 8 µs of device time and a call 30–34 µs under the
contest rule (docs/benchmarks.md, 2026-12-05 twelfth session): the host sets the pace. This prints
- each piece of the call's host path on its own, ns per call (best of ROUNDS rounds of CALLS calls,
  synchronising between rounds, not inside them);
- the call timed as the contest times one (events around one call after a device sync; median
  and mean of REPS calls), with the compiled kernel launched directly (fast/single_launch.py's
  `CompiledLayout.launch`) and through Triton's runner, the two sides alternated.

`python scripts/measure_host_path.py [--shape 20x32] [--reps 2000] [--rounds 2]` (on a GPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import triton
from qrsup.kernels.fast.geqrf import _validate, default_solver
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.fast.single_launch import CompiledLayout
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec
from triton import knobs
from triton.runtime import driver

CALLS = 50  # calls per round: their launches fit the device's queue, so the host never waits
ROUNDS = 40
CANDIDATE = Path(__file__).resolve().parent.parent / "kernels" / "candidates" / "fast_geqrf.py"


def host_ns(call: Callable[[], object]) -> float:
    """Best host ns per call over ROUNDS rounds of CALLS calls."""
    best = float("inf")
    for _ in range(ROUNDS):
        torch.cuda.synchronize()
        begin = time.perf_counter_ns()
        for _ in range(CALLS):
            call()
        best = min(best, (time.perf_counter_ns() - begin) / CALLS)
    torch.cuda.synchronize()
    return best


def contest_us(call: Callable[[torch.Tensor], object], inputs: list[torch.Tensor]) -> list[float]:
    """µs of each call timed as the contest's harness times one: sync, event, call, event, sync."""
    times = []
    for a in inputs:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        call(a)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return times


def launch_through_runner(
    self: CompiledLayout, a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor
) -> None:
    """The launch as it was: Triton's runner, which finds the stream and builds the hooks'
    metadata on every call."""
    self.kernel[(self.programs, 1, 1)](a, h, tau, *self.tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=parse_shape, default=(20, 32))
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    batch, n = args.shape
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    spec = Spec(batch=batch, n=n, cond=1, case="dense", seed=5)
    inputs = [generate_input(spec.reseeded(i), "cuda") for i in range(args.reps)]
    a = inputs[0]
    module_spec = importlib.util.spec_from_file_location("candidate", CANDIDATE)
    candidate = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(candidate)
    solver = default_solver()
    candidate.custom_kernel(a)  # compile and load
    torch.cuda.synchronize()
    _, single = solver._plan(a.get_device(), batch, n)
    assert single is not None, f"{batch}x{n} is not a one-launch plan"
    layout = next(iter(single._layouts.values()))
    h, tau = torch.empty_like(a), a.new_empty((batch, n))
    active = driver.active
    get_device, get_stream = active.get_current_device, active.get_current_stream
    pieces: dict[str, Callable[[], object]] = {
        "custom_kernel(a), the candidate": lambda: candidate.custom_kernel(a),
        "geqrf solver(a, check_finite=False)": lambda: solver(a, check_finite=False),
        "single launch (allocate, key, launch)": lambda: single(a),
        "  validate A": lambda: _validate(a),
        "  torch.empty(H) with device=a.device": lambda: torch.empty(
            (batch, n, n), dtype=a.dtype, device=a.device
        ),
        "  a.new_empty(H)": lambda: a.new_empty((batch, n, n)),
        "  layout key (device, strides, alignment)": lambda: (
            a.get_device(),
            a.stride(),
            a.data_ptr() % 16,
        ),
        "  current device and stream": lambda: get_stream(get_device()),
        "  launch, direct (CompiledLayout.launch)": lambda: layout.launch(a, h, tau),
        "  launch, Triton's runner": lambda: launch_through_runner(layout, a, h, tau),
        "  launch hooks' emptiness": lambda: knobs.runtime.launch_enter_hook.calls,
        "  event record": torch.cuda.Event(enable_timing=True).record,
    }
    for name, call in pieces.items():
        call()
        print(f"{name:<44} {host_ns(call):9.0f} ns")
    direct = CompiledLayout.launch
    for round_ in range(1, args.rounds + 1):
        for side, launch in (("direct", direct), ("runner", launch_through_runner)):
            CompiledLayout.launch = launch
            times = contest_us(candidate.custom_kernel, inputs)
            print(
                f"round {round_} {side:>6}: contest-style µs per call: median "
                f"{statistics.median(times):6.2f}, mean {statistics.fmean(times):6.2f} "
                f"({len(times)} calls)"
            )
    CompiledLayout.launch = direct


if __name__ == "__main__":
    main()
