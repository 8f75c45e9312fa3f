"""Where a timed window's wall clock goes beyond the candidate's own events, per repetition.

The referee's window accounting failed the shipped kernel at 2×4096 on an H200 (3.3 ms per
repetition of two calls beyond the do-nothing window, 2.8 ms allowed), while 8×2048 stretched
0.3 ms. This drives the contestant's harness in this process, without the judge around it
(prepare on fresh seeds, then go), and prints each repetition's wall clock over `go` less the
claimed time, for the variants asked: inputs per repetition, and the collector off.

`python scripts/window_gap.py --shape 2x4096 --inputs 1 2 --reps 6 [--candidate FILE]`
"""

from __future__ import annotations

import argparse
import gc
import secrets
import statistics
import time
from pathlib import Path

import torch
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.judge.contestant import Contestant

FAST = Path(__file__).resolve().parent.parent / "kernels" / "candidates" / "fast_geqrf.py"


def gaps_ms(contestant: Contestant, shape: dict, inputs: int, reps: int) -> list[float]:
    """Each repetition's wall clock over `go`, less its claimed time, in ms."""
    gaps = []
    for _ in range(reps):
        seeds = [secrets.randbits(62) for _ in range(inputs)]
        assert contestant.prepare({"spec": shape, "seeds": seeds})["ok"]
        start = time.perf_counter_ns()
        reply = contestant.go({})
        wall = time.perf_counter_ns() - start
        gaps.append((wall - reply["elapsed_ns"]) / 1e6)
    return gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", type=parse_shape, default="2x4096", help="BATCHxN")
    parser.add_argument("--case", default="dense")
    parser.add_argument("--inputs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--candidate", type=Path, default=FAST)
    args = parser.parse_args()
    batch, n = args.shape
    shape = {"batch": batch, "n": n, "cond": 1, "case": args.case}
    contestant = Contestant(torch.device("cuda"))
    assert contestant.import_candidate(args.candidate)["ok"]
    gaps_ms(contestant, shape, 1, 2)  # compiles, captures, warms
    for collector in ("on", "off"):
        if collector == "off":
            gc.disable()
        for inputs in args.inputs:
            gaps = gaps_ms(contestant, shape, inputs, args.reps)
            line = " ".join(f"{g:.3f}" for g in gaps)
            print(
                f"{batch}x{n} inputs {inputs} collector {collector}: median "
                f"{statistics.median(gaps):.3f} ms beyond the events; each: {line}",
                flush=True,
            )
        gc.enable()


if __name__ == "__main__":
    main()
