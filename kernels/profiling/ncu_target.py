"""A one-shot run of a candidate for Nsight Compute: a warm-up, then one NVTX-marked repetition.

Run as `python -m qrsup.kernels.profiling.ncu_target REQUEST.json` under ncu, by the referee's
profile flow. Compilation and graph capture happen in the warm-up, outside the range; ncu
measures only the kernels launched inside it. Nothing here feeds a verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from qrsup.kernels.judge.contestant import Contestant
from qrsup.kernels.profiling.ncu import NCU_RANGE


def main() -> None:
    request = json.loads(Path(sys.argv[1]).read_text())
    contestant = Contestant(torch.device(request["device"]))
    loaded = contestant.import_candidate(Path(request["candidate"]))
    if not loaded["ok"]:
        sys.exit(loaded["error"])
    inputs = {"spec": request["spec"], "seeds": request["seeds"]}
    contestant.prepare(inputs)
    contestant.go({})
    contestant.prepare(inputs)
    torch.cuda.nvtx.range_push(NCU_RANGE)
    contestant.go({})
    torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    main()
