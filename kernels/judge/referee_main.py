"""Entry of the referee process: `python -m kernels.judge.referee_main REPORT_FD`, config on stdin.

The contestant is started before the referee imports torch, so the two interpreters load their
heavy modules side by side instead of one after the other.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from kernels.judge.contestant_process import ContestantProcess
from kernels.judge.processes import become_subreaper, make_undumpable


def main() -> None:
    make_undumpable()
    become_subreaper()
    report_fd = int(sys.argv[1])
    config = json.loads(sys.stdin.readline())
    key = bytes.fromhex(config.pop("key"))
    sys.stdin.close()
    device = "cuda:0" if config["device"].startswith("cuda") else "cpu"
    contestant = ContestantProcess(
        device,
        Path(config["work_dir"]) / "candidate-output.log",
        int(config["memory_limit_bytes"]),
    )
    from kernels.judge.referee import Reporter, run  # torch loads while the contestant starts

    reporter = Reporter(report_fd, key)
    reporter.send(run(config, reporter, contestant))
    os.close(report_fd)


if __name__ == "__main__":
    main()
