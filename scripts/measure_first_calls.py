"""Where a fresh contestant's first call of a shape goes.

In the loop's judge runs on an H200 (docs/benchmarks.md, 2026-12-04), the first call of each spec
took 0.92 s a run in all: 0.5–1.0 s for the first spec of each shape class, a few ms for the rest.
Every contestant is new, so each run pays this again. This script runs the shipped candidate as a
fresh contestant would, with the Triton cache already warm: per test spec of the suite it times
the first call and a second one, and prints where the first calls' time went (cProfile, by the
functions that spent it) and which CUDA-side steps (context, cuBLAS, module loads) were first.

`python scripts/measure_first_calls.py [--suite qr_v2] [--top 30] [--warm]` on a GPU; run it once
before to fill the Triton cache, as the loop's precompile does. `--warm` first warms the libraries
as the judge's contestant now does before it loads a candidate (judge/library_warmup.py).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import pstats
import time
from pathlib import Path

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.judge.library_warmup import warm_libraries
from qrsup.kernels.suites import get_suite

CANDIDATE = Path(__file__).resolve().parents[1] / "kernels" / "candidates" / "fast_geqrf.py"


def timed_s(call, a: torch.Tensor) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    call(a)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="qr_v2")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--warm", action="store_true", help="warm the libraries as the judge does")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.zeros(1, device="cuda").add_(1)
    torch.cuda.synchronize()
    print(f"CUDA context and a first kernel: {time.perf_counter() - started:.3f} s")
    if args.warm:
        started = time.perf_counter()
        warmed = warm_libraries(torch.device("cuda"))
        print(f"libraries warmed ({', '.join(warmed)}): {time.perf_counter() - started:.3f} s")
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location("candidate", CANDIDATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(f"import of the candidate: {time.perf_counter() - started:.3f} s")
    profiler = cProfile.Profile()
    total = 0.0
    for test in get_suite(args.suite).tests:
        a = generate_input(test, torch.device("cuda"))
        second = a.clone()
        profiler.enable()
        first_s = timed_s(module.custom_kernel, a)
        profiler.disable()
        again_s = timed_s(module.custom_kernel, second)
        total += first_s
        print(f"{test.label:>24}: first {first_s * 1e3:8.1f} ms, second {again_s * 1e3:8.1f} ms")
    print(f"first calls in all: {total:.3f} s")
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(args.top)
        print(f"--- first calls by {order} ---")
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:12000])


if __name__ == "__main__":
    main()
