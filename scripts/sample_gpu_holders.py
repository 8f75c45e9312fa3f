"""Every half second, which agents' processes use each GPU and which agents lease it (JSON lines).

Usage: python scripts/sample_gpu_holders.py RUN_DIR OUT.jsonl — runs until killed. Used on a
multi-GPU host to check that no two judges share a GPU unless sharing was asked for. The samples
are the TUI's own (its fleet sampler), written down instead of shown.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from qrsup.agents.session import RunPaths
from qrsup.supervisor.messages import AgentsSampled, Fact
from qrsup.supervisor.watchers import FleetSampler


def main(run_dir: Path, out: Path) -> None:
    with out.open("a") as sink:

        def write(message: Fact) -> None:
            if not isinstance(message, AgentsSampled):
                return
            trees = {name: load.pids for name, load in message.loads.items()}
            line = {
                "t": round(time.time(), 2),
                "using": {gpu.index: list(gpu.holders(trees)) for gpu in message.gpus.gpus},
                "leased": message.leases,
                "note": message.gpus.note,
            }
            sink.write(json.dumps(line) + "\n")
            sink.flush()

        FleetSampler(RunPaths(run_dir), write, interval_s=0.5, min_gap_s=0.0).start()
        threading.Event().wait()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
