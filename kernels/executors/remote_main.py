"""A judge run on a worker node: `python -m qrsup.kernels.executors.remote_main`.

This process plays the part the agent plays on one host: it is the judge's runner (subreaper,
non-dumpable, owner of the referee's report pipe), so the Ray worker that starts it stays an
ordinary, reusable process. The job arrives pickled on stdin, which the task keeps open: end of
file means the worker died (its node was lost, or its driver went away), and the run is then
interrupted so the judge's own cleanup kills the referee and the candidate; nothing of the run
outlives it. Protocol lines (JSON) go to the stdout it was started with; stray prints go to stderr.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import threading

from qrsup.kernels.executors.job import JudgeJob, run_job
from qrsup.kernels.judge.processes import descendants, kill_processes

CLEANUP_GRACE_S = 10.0


def main() -> int:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    job = pickle.load(sys.stdin.buffer)
    if not isinstance(job, JudgeJob):
        raise TypeError(f"expected a JudgeJob, got {type(job).__name__}")
    done = threading.Event()
    threading.Thread(target=_end_with_the_worker, args=(done,), daemon=True).start()

    def emit(kind: str, **data: object) -> None:
        protocol.write(json.dumps({"kind": kind, **data}) + "\n")

    result = run_job(job, lambda update: emit("frame", frame=update.to_frame()))
    done.set()
    emit("result", **result.to_dict())
    return 0


def _end_with_the_worker(done: threading.Event) -> None:
    """At end of file on stdin, interrupt the run; kill what is left if its cleanup hangs."""
    sys.stdin.buffer.read()
    if done.is_set():
        return
    os.kill(os.getpid(), signal.SIGINT)  # run_judge's finally kills the referee's tree
    if not done.wait(CLEANUP_GRACE_S):
        kill_processes(descendants(os.getpid()))
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
