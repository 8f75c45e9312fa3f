"""A session's local Ray instance: `python -m qrsup.supervisor.ray_host RUN_DIR IDLE_GRACE_S`.

It starts Ray with `ray.init()` (this process is the instance's owner; Ray's processes end when
it calls `ray.shutdown()`, or, should it be killed, through Ray's own reaper), records the address
for the session's judge runs, and stays up while anything uses it: a live agent of the session,
a live process registered in `ray/users/`, or a start request in the last IDLE_GRACE_S. Then it
shuts Ray down; SIGTERM (the session ending) does so at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import psutil
from qrsup.agents.session import RunPaths
from qrsup.kernels.executors.ray_target import instance_pid, write_instance
from qrsup.kernels.judge.locks import file_lock
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.local_ray import LocalRay, lease_age_s

POLL_S = 1.0


def main(argv: list[str]) -> int:
    paths = RunPaths(Path(argv[0]))
    local = LocalRay(paths, idle_grace_s=float(argv[1]))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    import ray

    # "local": a new instance, never a cluster found through RAY_ADDRESS or a `ray start` here
    ray.init("local", include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    try:
        address = ray.get_runtime_context().gcs_address
        # ray.init() turned token authentication on for itself (unless RAY_AUTH_MODE said
        # otherwise); drivers joining by address need to be told the same.
        write_instance(paths.ray_instance, address, os.environ.get("RAY_AUTH_MODE"), os.getpid())
        ray_pids = " ".join(str(child.pid) for child in psutil.Process().children(recursive=True))
        print(f"local Ray instance at {address} (pid {os.getpid()})", flush=True)
        print(f"Ray's processes: {ray_pids}", flush=True)  # all end with the instance
        while not stop.wait(POLL_S):
            if _in_use(paths, local):
                continue
            with file_lock(local.lock):  # no start request can slip in between
                if not _in_use(paths, local):
                    print("nothing uses the instance any more; stopping", flush=True)
                    break
    finally:
        if instance_pid(paths.ray_instance) == os.getpid():
            paths.ray_instance.unlink(missing_ok=True)
        ray.shutdown()
    return 0


def _in_use(paths: RunPaths, local: LocalRay) -> bool:
    """A live agent of the session, a live registered user, or a fresh start request."""
    if lease_age_s(local.lease) <= local.idle_grace_s:
        return True
    if paths.config.exists():  # a host for a single command (`qrsup test`) has no session
        fleet = Fleet(paths)
        if any(fleet.pid(name) is not None for name in fleet.names()):
            return True
    users = paths.ray_users.glob("*") if paths.ray_users.is_dir() else []
    for user in users:
        if user.name.isdigit() and _alive(int(user.name)):
            return True
        user.unlink(missing_ok=True)  # its process is gone without saying so
    return False


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
