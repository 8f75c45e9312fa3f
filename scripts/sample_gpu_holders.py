"""Every half second, which agents' processes use each GPU and which agents lease it (JSON lines).

Usage: python scripts/sample_gpu_holders.py RUN_DIR OUT.jsonl — runs until killed. Used on a
multi-GPU host to check that no two judges share a GPU unless sharing was asked for.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agents.session import RunPaths, SessionError
from supervisor.fleet import Fleet
from supervisor.gpu_stats import GpuStats
from supervisor.process_stats import ProcessStats


def main(run_dir: Path, out: Path) -> None:
    gpus, processes = GpuStats(), ProcessStats()
    with out.open("a") as sink:
        while True:
            try:
                fleet = Fleet(RunPaths(run_dir))
                statuses = fleet.statuses()
                leases = fleet.leases().holders()
            except (SessionError, OSError):
                time.sleep(0.5)
                continue
            loads = processes.sample({s.name: s.pid for s in statuses})
            trees = {name: load.pids for name, load in loads.items()}
            report = gpus.sample()
            line = {
                "t": round(time.time(), 2),
                "using": {g.index: list(g.holders(trees)) for g in report.gpus},
                "leased": leases,
                "note": report.note,
            }
            sink.write(json.dumps(line) + "\n")
            sink.flush()
            time.sleep(0.5)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
