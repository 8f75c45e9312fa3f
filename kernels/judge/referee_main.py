"""The referee: `python -m qrsup.kernels.judge.referee_main REPORT_FD PARENT_PID`, 2 stdin lines.

The first line is the contestant's boundary, the second the run. The contestant is started on
the first, before the referee imports torch, so the two interpreters load their heavy modules
side by side, and both may do so before the candidate exists.
"""

from __future__ import annotations

import json
import os
import sys

from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.contestant_process import ContestantProcess
from qrsup.kernels.judge.processes import become_subreaper, die_with_parent, make_undumpable


def main() -> None:
    die_with_parent(int(sys.argv[2]))
    make_undumpable()
    become_subreaper()
    report_fd = int(sys.argv[1])
    # The first line is the boundary alone: the contestant starts on it, before any candidate
    # is known, so a referee can be started ahead of the run that will use it.
    launch = ContestantLaunch.from_dict(json.loads(sys.stdin.readline()))
    contestant = ContestantProcess(launch)
    # torch loads here, while the contestant starts; a profile run asks for the profile flow.
    from qrsup.kernels.judge.profile_referee import ProfileReferee
    from qrsup.kernels.judge.referee import Referee, Reporter

    line = sys.stdin.readline()  # the run: key, candidate and specs; none if it was discarded
    sys.stdin.close()
    if not line:
        contestant.close()
        return
    config = {**launch.to_dict(), **json.loads(line)}
    key = bytes.fromhex(config.pop("key"))
    reporter = Reporter(report_fd, key)
    flow = ProfileReferee if "profile" in config else Referee
    reporter.send(flow(config, reporter, contestant, lambda: ContestantProcess(launch)).run())
    os.close(report_fd)


if __name__ == "__main__":
    main()
