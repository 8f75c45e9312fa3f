"""What a profile adds to one research-loop iteration, so the loop can budget it.

Run from the repository root:
`PYTHONPATH=$PWD python scripts/measure_profile_overhead.py [--device cpu|cuda] [--repeats 3]`.
Each repeat times the loop's judge stages for one candidate (quick, then full: what an iteration
that reaches the beam pays) and then one `profile_candidate` call, which the loop makes for each
candidate entering the beam. It prints the medians and the profile's share.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from qrsup.agents.evaluation import Evaluator
from qrsup.kernels.profiling.candidate import profile_candidate, trace_path_for
from qrsup.kernels.profiling.summary import ProfileSummary
from qrsup.kernels.suites import get_suite

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {  # device → (candidate, suite, benchmark index, stopping rule)
    "cpu": ("kernels/candidates/blocked_wy.py", "smoke", 1, "quick"),
    "cuda": ("kernels/candidates/fast_geqrf.py", "qr_v2", 3, "contest"),
}


def timed(body: Callable[[], object]) -> tuple[float, object]:
    start = time.monotonic()
    result = body()
    return time.monotonic() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=sorted(DEFAULTS), default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    candidate, suite_name, spec, rule = DEFAULTS[args.device]
    path = ROOT / candidate
    suite = get_suite(suite_name)
    evaluator = Evaluator(suite, args.device, rule)
    stages, profiles = [], []
    with tempfile.TemporaryDirectory(prefix="qrsup-overhead-") as scratch:
        trace = trace_path_for(Path(scratch) / path.name)
        for repeat in range(args.repeats):
            quick_s, quick = timed(lambda: evaluator.quick(path))
            full_s, full = timed(lambda: evaluator.full(path))
            profile_s, result = timed(
                lambda: profile_candidate(
                    path, suite, args.device, spec, rule=rule, trace_out=trace
                )
            )
            if not (quick.passed and full.passed and isinstance(result, ProfileSummary)):
                raise SystemExit(f"repeat {repeat}: a stage failed: {result.to_text()}")
            stages.append((quick_s, full_s))
            profiles.append(profile_s)
            print(
                f"repeat {repeat}: quick {quick_s:.1f} s, full {full_s:.1f} s, "
                f"profile {profile_s:.1f} s, trace {trace.stat().st_size / 2**20:.1f} MiB"
            )
    quick_s = statistics.median(q for q, _ in stages)
    full_s = statistics.median(f for _, f in stages)
    profile_s = statistics.median(profiles)
    device = torch.cuda.get_device_name() if args.device == "cuda" else platform.machine()
    threads = torch.get_num_threads()
    print(f"host: {platform.node()} · {device} · {threads} threads · torch {torch.__version__}")
    print(f"candidate: {candidate} · {suite_name} · profiled benchmark {spec} · rule {rule}")
    print(
        f"median of {args.repeats}: quick {quick_s:.1f} s + full {full_s:.1f} s = "
        f"{quick_s + full_s:.1f} s per iteration that reaches the beam"
    )
    print(
        f"median profile: {profile_s:.1f} s = +{profile_s / (quick_s + full_s):.0%} on such an "
        "iteration (the loop profiles only candidates that enter the beam)"
    )
    print(f"last profile:\n{result.to_text()}")


if __name__ == "__main__":
    main()
