"""Loop throughput: run N tuner agents for a fixed time on a suite and report what they did.

Usage: python scripts/measure_loop.py --agents 2 --minutes 5 [--suite smoke] [--device cpu]
[--executor local ray] [--warm on off]
Prints the session's summary (`qrsup.supervisor.session_summary`: candidates and judge runs per
hour, the judge's overhead and where a run's time goes) and the largest resident size of an
agent process and of a Ray driver. With `ray` the session runs on its own local Ray instance,
stopped afterwards. `--warm off` writes `[judge] warm = false` into the workspace's qrsup.toml:
agents on a GPU then start each referee on demand (agents on the CPU always do).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import psutil
from qrsup.agents.git_workspace import init_repo
from qrsup.agents.session import RunPaths, SessionConfig, save_session
from qrsup.agents.store import Store
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.launch import default_agents
from qrsup.supervisor.local_ray import LocalRay
from qrsup.supervisor.session_summary import summarize


def measure(
    agents: int, minutes: float, suite: str, device: str, executor: str = "local", warm: bool = True
) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="qrsup-loop-") as scratch:
        workspace = Path(scratch) / "ws"
        init_repo(workspace).close()
        if not warm:
            (workspace / "qrsup.toml").write_text("[judge]\nwarm = false\n")
        specs = default_agents(agents, "tuner", "geomean < 1ns", None, device)
        config = SessionConfig(
            name="m", workspace=workspace, suite=suite, agents=specs, executor=executor
        )
        paths = RunPaths.of(workspace, "m")
        save_session(paths, config)
        fleet = Fleet(paths)
        fleet.start_all()
        peaks = sample_rss(minutes * 60)
        for name in fleet.names():
            fleet.stop(name)
        fleet.wait_stopped(fleet.names(), 900)
        LocalRay(paths).stop()
        with Store.reader(paths.store) as store:
            summary = summarize(store.evaluations(), store.iterations())
    return {
        "agents": agents,
        "executor": executor,
        "warm": warm,
        "load_average_1m": round(os.getloadavg()[0], 2),
        **summary.to_dict(),
        **{f"peak_rss_mib_{kind}": round(peak / 2**20, 1) for kind, peak in peaks.items()},
    }


def sample_rss(seconds: float) -> dict[str, int]:
    """Largest resident size seen of an agent process and of a Ray driver, every 2 s."""
    kinds = {"agent": "qrsup.agents.agent_main", "ray_driver": "qrsup.kernels.executors.ray_submit"}
    peaks = dict.fromkeys(kinds, 0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for process in psutil.Process().children(recursive=True):
            try:
                command = " ".join(process.cmdline())
                for kind, module in kinds.items():
                    if module in command:
                        peaks[kind] = max(peaks[kind], process.memory_info().rss)
            except psutil.Error:
                continue
        time.sleep(2.0)
    return peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--suite", default="smoke")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--executor", nargs="+", default=["local"], choices=("local", "ray"))
    parser.add_argument("--warm", nargs="+", default=["on"], choices=("on", "off"))
    args = parser.parse_args()
    for count in args.agents:
        for executor in args.executor:
            for warm in args.warm:
                result = measure(
                    count, args.minutes, args.suite, args.device, executor, warm == "on"
                )
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
