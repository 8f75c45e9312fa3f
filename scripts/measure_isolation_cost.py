"""What the judge's boundary costs per judge run: the same small judge run, alternately with the
boundary on and off, several rounds; medians of the wall time and of each phase.

`python scripts/measure_isolation_cost.py [--device cuda] [--rounds 5]` prints one line per run
and a summary last. The candidate is `torch.geqrf` (no compilation), so the difference is the
boundary's own start-up: namespaces, the built root, the user switch.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from qrsup.kernels.judge.runner import JudgeConfig, evaluate
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.suites import Spec, Suite

CANDIDATE = Path(__file__).resolve().parent.parent / "kernels/candidates/torch_geqrf.py"
SMALL = Suite(name="small", tests=(Spec(2, 16, 0, "dense", 1),), benchmarks=())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"on": [], "off": []}
    phases: dict[str, dict[str, list[float]]] = {"on": {}, "off": {}}
    for round_index in range(args.rounds):
        for mode, isolation in (("on", "auto"), ("off", "off")):
            config = JudgeConfig(
                suite=SMALL, device=args.device, isolation=IsolationSettings(mode=isolation)
            )
            started = time.monotonic()
            report = evaluate(CANDIDATE, config)
            wall = time.monotonic() - started
            walls[mode].append(wall)
            for name, seconds in report.phases_s.items():
                phases[mode].setdefault(name, []).append(seconds)
            print(
                f"round {round_index} isolation {mode:3} verdict {report.verdict} "
                f"wall {wall * 1000:7.0f} ms  user {report.isolation.get('user', '')!r} "
                f"missing {report.isolation.get('missing', [])}",
                flush=True,
            )
    print("\nmedians (ms)            on      off   on-off")
    rows = [("wall", walls["on"], walls["off"])]
    rows += [(n, v, phases["off"].get(n, [0.0])) for n, v in phases["on"].items() if n != "wall"]
    for name, on, off in rows:
        a, b = statistics.median(on) * 1000, statistics.median(off) * 1000
        print(f"{name:20} {a:8.0f} {b:8.0f} {a - b:+8.0f}")


if __name__ == "__main__":
    main()
