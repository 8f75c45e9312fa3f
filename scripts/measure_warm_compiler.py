"""What an agent's compile ahead costs from a fresh Python each time, and from the warm compiler.

Both fill one Triton cache for the qr_v2 shapes; the cache is filled once first, so each timed
compile finds every kernel there, as most of a tuner's candidates' kernels are (on the H200
loop of 2026-12-02: "precompiled 0 kernels (15 already cached) in 4.1 s"). Prints the wall of
each compile, from the agent's side, and their medians. Needs Triton's CUDA backend and its
bundled ptxas, not a GPU.

`python scripts/measure_warm_compiler.py [--repeats 5] [--workers 2]`
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qrsup.agents.precompile import Precompiler
from qrsup.agents.spaces import FastKernelSpace
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import get_suite

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "kernels" / "fast" / "configs.toml"


def fresh_compile(configs: Path, cache: Path, shapes: list[str], workers: int) -> float:
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "qrsup.kernels.fast.precompile", str(configs), str(cache),
         "--arch=90", f"--workers={workers}", *(f"--shape={s}" for s in shapes)],
        check=True, capture_output=True,
    )  # fmt: skip
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    specs = get_suite("qr_v2").benchmarks
    shapes = list(dict.fromkeys(f"{s.batch}x{s.n}" for s in specs))
    space = FastKernelSpace(CONFIGS)
    source = space.render(space.default_point())
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        cache, configs = root / "triton", root / "configs.toml"
        configs.write_text(CONFIGS.read_text())
        print(f"filling the cache: {fresh_compile(configs, cache, shapes, args.workers):.1f} s")
        fresh = [fresh_compile(configs, cache, shapes, args.workers) for _ in range(args.repeats)]
        precompiler = Precompiler(cache, 90, root, args.workers)
        warm = []
        try:
            for i in range(args.repeats + 1):
                candidate = Candidate(
                    f"c-{i}", "", source, None, "a1", "exploit", "fast", "", {}, 0
                )
                start = time.monotonic()
                line = precompiler(candidate, specs)
                warm.append(time.monotonic() - start)
                print(f"warm compiler, job {i}: {line}")
        finally:
            precompiler.close()
    print("fresh Python per compile (s):", " ".join(f"{s:.2f}" for s in fresh))
    print("warm compiler (s), its start first:", " ".join(f"{s:.2f}" for s in warm))
    print(
        f"median: fresh {statistics.median(fresh):.2f} s, warm {statistics.median(warm[1:]):.2f} s"
    )


if __name__ == "__main__":
    main()
