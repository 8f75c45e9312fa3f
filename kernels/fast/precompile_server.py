"""A compiler kept warm for one agent: `precompile`'s work, one job at a time, in one process.

A fresh `python -m qrsup.kernels.fast.precompile` per candidate paid for Python, torch and Triton
each time, and on the H200 loop of 2026-12-02 the next candidate's compile was what the loop
waited for between judge runs: 4 s from a verdict to the next judge run (median), for compiles
such as "precompiled 0 kernels (15 already cached) in 4.1 s" (docs/benchmarks.md). This process
imports once, then serves jobs: a JSON line in,
`{"id": ID, "configs": PATH, "cache": DIR, "shapes": [[batch, n], ...]}`, a JSON line out,
`{"id": ID, "summary": LINE, "failures": [...]}` or `{"id": ID, "error": LINE}`. Each job's
compiler workers are forked from it afresh, so a job sees nothing of the last one's compiles but
the cache on disk; this process itself never compiles. Candidate code never runs here: a config
arrives as a file.

`python -m qrsup.kernels.fast.precompile_server --arch 90 [--workers N] [--parent PID]`; it ends
at the end of its input, or with the process `--parent` names.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from triton.backends.compiler import GPUTarget

from ..judge.processes import die_with_parent
from .aot import driver_kernels
from .config import load_config
from .precompile import WARP_SIZE, precompile


def answer(job: dict, target: GPUTarget, workers: int) -> dict:
    """One job's reply line."""
    try:
        config = load_config(Path(job["configs"])).for_arch(target.arch)
        shapes = [(int(batch), int(n)) for batch, n in job["shapes"]]
        cache = Path(job["cache"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        return {"error": f"cannot read the job {job!r}: {error}"}
    done = precompile(config, shapes, target, cache, workers)
    return {"summary": done.summary(), "failures": list(done.failures)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qrsup.kernels.fast.precompile_server")
    parser.add_argument("--arch", type=int, required=True, help="compute capability, e.g. 90")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--parent", type=int, help="a pid: end when that process ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        die_with_parent(args.parent)
    target = GPUTarget("cuda", args.arch, WARP_SIZE)
    missing = None if driver_kernels() else "no compiled kernels to warm: TRITON_INTERPRET is set"
    for line in sys.stdin:
        try:
            job = json.loads(line)
        except json.JSONDecodeError as error:
            job, reply = None, {"error": f"not a JSON job line: {error}"}
        else:
            reply = {"error": missing} if missing else answer(job, target, args.workers)
        reply["id"] = job.get("id") if isinstance(job, dict) else None
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
