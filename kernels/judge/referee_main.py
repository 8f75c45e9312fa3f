"""The referee: `python -m qrsup.kernels.judge.referee_main REPORT_FD PARENT_PID`, config on stdin.

The contestant is started before the referee imports torch, so the two interpreters load their
heavy modules side by side instead of one after the other.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from qrsup.kernels.judge.contestant_process import ContestantLaunch, ContestantProcess
from qrsup.kernels.judge.processes import become_subreaper, die_with_parent, make_undumpable
from qrsup.kernels.judge.sandbox import IsolationSettings


def main() -> None:
    die_with_parent(int(sys.argv[2]))
    make_undumpable()
    become_subreaper()
    report_fd = int(sys.argv[1])
    config = json.loads(sys.stdin.readline())
    key = bytes.fromhex(config.pop("key"))
    sys.stdin.close()
    launch = ContestantLaunch(
        device=config["device"],
        work_dir=Path(config["work_dir"]),
        candidate=Path(config["candidate"]),
        memory_limit_bytes=int(config["memory_limit_bytes"]),
        max_file_bytes=int(config["max_file_bytes"]),
        isolation=IsolationSettings.from_dict(config["isolation"]),
        triton_cache=Path(config["triton_cache"]) if config.get("triton_cache") else None,
    )
    contestant = ContestantProcess(launch)
    # torch loads here, while the contestant starts; a profile run asks for the profile flow.
    from qrsup.kernels.judge.profile_referee import ProfileReferee
    from qrsup.kernels.judge.referee import Referee, Reporter

    reporter = Reporter(report_fd, key)
    flow = ProfileReferee if "profile" in config else Referee
    reporter.send(flow(config, reporter, contestant).run())
    os.close(report_fd)


if __name__ == "__main__":
    main()
