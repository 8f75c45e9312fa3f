"""What generating a `mixed` input costs: torch operations per generation (each a kernel launch
on a GPU) and wall time, over several seeds.

`python scripts/measure_generators.py [LABEL]` prints, for 640 and 60 matrices, the top-level
torch operations of one generation per seed, then the median wall time and its spread on this
machine's device for a few shapes.
"""

from __future__ import annotations

import sys
import time

import torch
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec
from torch.profiler import ProfilerActivity, profile

SEEDS = range(5)
TIMED = ((640, 64), (640, 128), (60, 256))


def operations(batch: int) -> list[int]:
    """Top-level torch operations of one generation, per seed (n does not change the count)."""
    counts = []
    for seed in SEEDS:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            generate_input(Spec(batch, 8, 2, "mixed", seed=seed))
        top = [e for e in prof.events() if e.name.startswith("aten::") and e.cpu_parent is None]
        counts.append(len(top))
    return counts


def wall_ms(batch: int, n: int, device: torch.device) -> tuple[float, float]:
    """Median and spread (max − median) over 7 seeds, in ms."""
    times = []
    for seed in range(7):
        start = time.perf_counter()
        generate_input(Spec(batch, n, 2, "mixed", seed=seed), device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[3], times[-1] - times[3]


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "now"
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for batch in (640, 60):
        print(f"{label} {batch}xN mixed: top-level torch ops per seed: {operations(batch)}")
    generate_input(Spec(4, 8, 2, "mixed", seed=0), device)  # warm-up
    for batch, n in TIMED:
        median, spread = wall_ms(batch, n, device)
        print(
            f"{label} {batch}x{n} mixed on {device.type}: median {median:.1f} ms, "
            f"spread {spread:.1f} ms"
        )


if __name__ == "__main__":
    main()
