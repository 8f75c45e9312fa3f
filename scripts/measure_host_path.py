"""Where the host's time goes in a one-launch call (20×32), piece by piece, and the call timed as
the contest times one.

At 20×32 the warp path's kernel takes about 8 µs of device time and a call 25–34 µs under the
contest rule (docs/benchmarks.md, 2026-12-05 twelfth session): the host sets the pace. This prints
- the candidate's call timed as the contest's harness times one (events around one call after a
  device sync): median and mean of REPS calls, in each of ROUNDS rounds;
- with --pieces, each piece of the call's host path on its own, ns per call (best of 40 rounds of
  50 calls, synchronising between rounds, not inside them). The pieces name the working tree's
  internals; the timing alone runs on any revision of kernels/fast, for an A/B of two trees.

`python scripts/measure_host_path.py [--shape 20x32] [--reps 2000] [--rounds 2] [--pieces]`
(on a GPU).
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
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

CALLS = 50  # calls per round: their launches fit the device's queue, so the host never waits
PIECE_ROUNDS = 40
CANDIDATE = Path(__file__).resolve().parent.parent / "kernels" / "candidates" / "fast_geqrf.py"


def host_ns(call: Callable[[], object]) -> float:
    """Best host ns per call over PIECE_ROUNDS rounds of CALLS calls."""
    best = float("inf")
    for _ in range(PIECE_ROUNDS):
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


def print_pieces(candidate: object, a: torch.Tensor) -> None:
    """Each piece of the host path, timed alone."""
    from qrsup.kernels.fast.geqrf import _validate, default_solver
    from triton.runtime import driver

    batch, n = a.shape[0], a.shape[-1]
    solver, device = default_solver(), a.get_device()
    _, direct = solver._plan(device, batch, n)
    assert direct is not None, f"{batch}x{n} has no direct launches"
    replay = next(iter(direct._layouts.values()))
    assert len(replay.steps) == 1, f"{batch}x{n} is not a one-launch plan"
    step = replay.steps[0]
    h, tau = torch.empty_like(a), a.new_empty((batch, n))
    tensors, addresses = (a, h, tau), (a.data_ptr(), h.data_ptr(), tau.data_ptr())
    out = a.new_empty(batch * n * (n + 1))
    active = driver.active
    get_device, get_stream = active.get_current_device, active.get_current_stream
    pieces: dict[str, Callable[[], object]] = {
        "custom_kernel(a), the candidate": lambda: candidate.custom_kernel(a),
        "geqrf solver(a, check_finite=False)": lambda: solver(a, check_finite=False),
        "direct plan (allocate, key, launch)": lambda: direct(a, device),
        "  validate A": lambda: _validate(a),
        "  torch.empty(H) with device=a.device": lambda: torch.empty(
            (batch, n, n), dtype=a.dtype, device=a.device
        ),
        "  a.new_empty(H)": lambda: a.new_empty((batch, n, n)),
        "  a.new_empty(H), a.new_empty(τ)": lambda: (
            a.new_empty((batch, n, n)),
            a.new_empty((batch, n)),
        ),
        "  one allocation, viewed as H and τ": lambda: (
            (o := a.new_empty(batch * n * (n + 1))).as_strided((batch, n, n), (n * n, n, 1)),
            o.as_strided((batch, n), (n, 1), batch * n * n),
        ),
        "  as_strided view": lambda: out.as_strided((batch, n), (n, 1), batch * n * n),
        "  layout key (device, strides, alignment)": lambda: (
            a.get_device(),
            a.stride(),
            a.data_ptr() % 16,
        ),
        "  current device and stream": lambda: get_stream(get_device()),
        "  launch, addresses, runner made once (DirectLaunch)": lambda: step(tensors, addresses),
        "  launch, tensors, runner made each call": lambda: step.kernel[step.grid](
            a, h, tau, *step.args[3:]
        ),
        "  event record": torch.cuda.Event(enable_timing=True).record,
    }
    for name, call in pieces.items():
        call()
        print(f"{name:<44} {host_ns(call):9.0f} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=parse_shape, default=(20, 32))
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pieces", action="store_true")
    args = parser.parse_args()
    batch, n = args.shape
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    spec = Spec(batch=batch, n=n, cond=1, case="dense", seed=5)
    inputs = [generate_input(spec.reseeded(i), "cuda") for i in range(args.reps)]
    module_spec = importlib.util.spec_from_file_location("candidate", CANDIDATE)
    candidate = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(candidate)
    candidate.custom_kernel(inputs[0])  # compile and load
    torch.cuda.synchronize()
    for round_ in range(1, args.rounds + 1):
        times = contest_us(candidate.custom_kernel, inputs)
        print(
            f"round {round_}: contest-style µs per call: median {statistics.median(times):6.2f}, "
            f"mean {statistics.fmean(times):6.2f} ({len(times)} calls)"
        )
    if args.pieces:
        print_pieces(candidate, inputs[0])


if __name__ == "__main__":
    main()
