"""What running a judge run as a Ray task costs: the same judge run, alternately on this host
(local executor) and as a Ray task on a local Ray instance, several rounds; medians of the wall
time, of the referee's own wall time, and of the Ray executor's stages. Also the size of the
reports that cross the wire and how fast the session's store takes their records.

`python scripts/measure_ray_overhead.py [--suite smoke|tiny] [--mode test] [--rounds 5]
[--address HOST:PORT]` prints one line per run and a JSON summary last. Without --address it
starts a local instance for the measurement (qrsup's own, as a session would) and stops it. The
Ray executor keeps its driver between runs, as an agent's does: the first run pays the connection.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import psutil
from qrsup.agents.session import RunPaths
from qrsup.agents.store import Store
from qrsup.kernels.executors.base import LOCAL, JudgeExecutor
from qrsup.kernels.executors.ray_executor import RayExecutor
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.judge.runner import JudgeConfig
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict
from qrsup.kernels.suites import Spec, Suite, get_suite
from qrsup.supervisor.local_ray import LocalRay

ROOT = Path(__file__).resolve().parent.parent
CANDIDATE = ROOT / "kernels/candidates/blocked_wy.py"
TINY = Suite(
    name="tiny", tests=(Spec(2, 16, 0, "dense", 1),), benchmarks=(Spec(2, 16, 1, "dense", 2),)
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--mode", default="test", choices=("test", "bench", "all"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--address", default="")
    args = parser.parse_args()
    suite = TINY if args.suite == "tiny" else get_suite(args.suite)
    config = JudgeConfig(suite=suite, mode=args.mode, device="cpu", rule="quick")
    with tempfile.TemporaryDirectory(prefix="qrsup-measure-") as temp, ExitStack() as stack:
        local_ray = LocalRay(RunPaths(Path(temp)))
        stack.callback(local_ray.stop)
        started = time.monotonic()
        target = RayTarget(args.address) if args.address else stack.enter_context(local_ray.use())
        print(f"Ray cluster at {target.address} ready in {time.monotonic() - started:.1f} s")
        executors = {"local": LOCAL, "ray": RayExecutor(lambda: target)}
        summary = measure(executors, config, args.rounds)
    summary.update(store_writes_per_s(summary["report_bytes"]["median"]))
    summary["load_average_1m"] = round(os.getloadavg()[0], 2)
    summary["cpus"] = os.cpu_count()
    print(json.dumps({"suite": suite.name, "mode": args.mode, **summary}, indent=1))


def measure(executors: dict[str, JudgeExecutor], config: JudgeConfig, rounds: int) -> dict:
    walls: dict[str, list[float]] = {name: [] for name in executors}
    referee: dict[str, list[float]] = {name: [] for name in executors}
    stages: dict[str, list[float]] = {"connect_s": [], "queued_s": [], "run_s": []}
    sizes: list[int] = []
    driver_rss: list[int] = []
    for round_index in range(rounds):
        for name, executor in executors.items():
            peak = PeakDriverRss()
            started = time.monotonic()
            with peak:
                report = executor.evaluate(CANDIDATE, config)
            wall = time.monotonic() - started
            walls[name].append(wall)
            referee[name].append(report.phases_s.get("wall", 0.0))
            size = len(json.dumps(report.to_dict()))
            if name == "ray":
                sizes.append(size)
                driver_rss.append(peak.bytes)
                for stage in stages:
                    stages[stage].append(report.placement.get(stage, 0.0))
            print(
                f"round {round_index} {name:5} verdict {report.verdict} wall {wall:6.2f} s "
                f"referee {report.phases_s.get('wall', 0.0):6.2f} s report {size} B "
                f"placement {json.dumps(report.placement)}",
                flush=True,
            )
    outside = {
        name: statistics.median(w - r for w, r in zip(walls[name], referee[name], strict=True))
        for name in executors
    }
    med = {name: statistics.median(values) for name, values in walls.items()}
    ref = {name: statistics.median(values) for name, values in referee.items()}
    return {
        "rounds": rounds,
        "median_wall_s": {k: round(v, 3) for k, v in med.items()},
        "median_referee_wall_s": {k: round(v, 3) for k, v in ref.items()},
        "ray_minus_local_wall_s": round(med["ray"] - med["local"], 3),
        # the cleanest figure on a shared host: per run, wall time outside the referee's own
        "median_wall_outside_referee_s": {k: round(v, 3) for k, v in outside.items()},
        "median_ray_stages_s": {k: round(statistics.median(v), 3) for k, v in stages.items()},
        "report_bytes": {"median": int(statistics.median(sizes)), "max": max(sizes)},
        "driver_peak_rss_mib": round(statistics.median(driver_rss) / 2**20, 1),
    }


class PeakDriverRss:
    """The largest resident size of a Ray driver (ray_submit) child while in the block."""

    def __init__(self) -> None:
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakDriverRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.1):
            for child in me.children():
                try:
                    if "qrsup.kernels.executors.ray_submit" in " ".join(child.cmdline()):
                        self.bytes = max(self.bytes, child.memory_info().rss)
                except psutil.Error:
                    continue


def store_writes_per_s(report_bytes: int, count: int = 500) -> dict:
    """An evaluated iteration's rows as the loop writes them (candidate, evaluation, iteration)."""
    report = {"verdict": "pass", "reason": "", "padding": "x" * max(0, report_bytes - 40)}
    with tempfile.TemporaryDirectory() as temp:
        store = Store(Path(temp) / "store.sqlite")
        try:
            started = time.monotonic()
            for i in range(count):
                row = Candidate(
                    f"c-{i}", f"{i:064x}", "src", None, "a1", "exploit", "f", "h", None, 0.0
                )
                store.add_candidate(row)
                store.add_evaluation(row.id, "a1", i, "quick", report, {0: 1.0})
                decision = Decision.REJECTED
                store.record_iteration(Iteration("a1", i, Verdict.PASS, decision, row.id))
            seconds = time.monotonic() - started
        finally:
            store.close()
    return {"store_iterations_per_s": round(count / seconds, 1)}


if __name__ == "__main__":
    main()
