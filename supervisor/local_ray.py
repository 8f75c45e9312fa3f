"""The session's local Ray instance: started on demand, found again, stopped with the session.

When neither `--ray-address` nor `RAY_ADDRESS` names a cluster, qrsup starts one with Ray's own
`ray.init()` in a host process of its own (`ray_host`), since agents outlive the supervisor
that started them. The host stays up while anything uses it (the session's agents, or a process
registered under `ray/users/`) and shuts Ray down soon after the last one has gone.

Starting and the host's decision to stop both happen under one lock, and every start request
renews the host's lease, so an agent started just as the host was about to stop finds it up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.kernels.executors.ray_target import RayTarget, instance_pid, read_instance
from qrsup.kernels.judge.locks import file_lock

START_TIMEOUT_S = 180.0
IDLE_GRACE_S = 15.0  # how long the host waits for a user after the last one went
STOP_TIMEOUT_S = 60.0
HOST_MODULE = "qrsup.supervisor.ray_host"


class LocalRayError(RuntimeError):
    """The local instance could not be started; the one-line reason says why."""


class LocalRay:
    """One session's local instance, as seen from any process of the session."""

    def __init__(self, paths: RunPaths, gpus: str = "", idle_grace_s: float = IDLE_GRACE_S) -> None:
        self.paths = paths
        self.gpus = gpus  # the session's `--gpus`: the instance sees only these
        self.idle_grace_s = idle_grace_s
        self.lock = paths.ray_instance.with_name("start.lock")
        self.lease = paths.ray_instance.with_name("lease")
        self.log = paths.ray_instance.with_name("host.log")

    def host_pid(self) -> int | None:
        """The host process, if it is alive and really is this session's host."""
        pid = instance_pid(self.paths.ray_instance)
        if pid is None:
            return None
        try:
            process = psutil.Process(pid)
            alive = process.status() != psutil.STATUS_ZOMBIE
            return pid if alive and HOST_MODULE in process.cmdline() else None
        except psutil.Error:
            return None

    def ensure(self, timeout_s: float = START_TIMEOUT_S) -> RayTarget:
        """The running instance, started first if there is none."""
        with file_lock(self.lock):
            self.lease.parent.mkdir(parents=True, exist_ok=True)
            self.lease.touch()
            target = read_instance(self.paths.ray_instance)
            if target is not None and self.host_pid() is not None:
                return target
            return self._start(timeout_s)

    @contextmanager
    def use(self, pid: int | None = None) -> Iterator[RayTarget]:
        """Keep the instance up for this process (a promotion, `qrsup test`) while in the block."""
        user = self.paths.ray_users / str(pid or os.getpid())
        user.parent.mkdir(parents=True, exist_ok=True)
        user.touch()
        try:
            yield self.ensure()
        finally:
            user.unlink(missing_ok=True)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Shut the instance down now (the session ended); Ray's processes go with it."""
        pid = self.host_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        try:
            psutil.Process(pid).wait(timeout_s)
        except psutil.NoSuchProcess:
            return
        except psutil.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)

    def _start(self, timeout_s: float) -> RayTarget:
        self.paths.ray_instance.unlink(missing_ok=True)
        env = dict(os.environ)
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = self.gpus
        with open(self.log, "ab") as log:
            host = subprocess.Popen(
                [sys.executable, "-m", HOST_MODULE, str(self.paths.root), str(self.idle_grace_s)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # it outlives the supervisor, as the agents do
                env=env,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            target = read_instance(self.paths.ray_instance)
            if target is not None and instance_pid(self.paths.ray_instance) == host.pid:
                return target
            if host.poll() is not None:
                raise LocalRayError(f"the local Ray instance did not start: {self._last_line()}")
            time.sleep(0.2)
        host.kill()
        raise LocalRayError(f"the local Ray instance did not start in {timeout_s:g} s")

    def _last_line(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else f"no output (log: {self.log})"


def lease_age_s(lease: Path) -> float:
    """Seconds since a start request last renewed the host's lease."""
    try:
        return time.time() - lease.stat().st_mtime
    except OSError:
        return float("inf")


def ensure_session_instance(
    paths: RunPaths, session: SessionConfig, error: type[Exception] = LocalRayError
) -> None:
    """Start the session's local instance unless it has one or names a cluster of its own."""
    if session.executor == "ray" and not session.ray_address:
        try:
            LocalRay(paths, session.gpus).ensure()
        except LocalRayError as exc:
            raise error(f"cannot start the session's local Ray instance: {exc}") from None


@contextmanager
def session_instance_in_use(
    paths: RunPaths, session: SessionConfig, error: type[Exception] = LocalRayError
) -> Iterator[None]:
    """Keep the session's local instance (if it uses one) up for this process in the block."""
    with ExitStack() as stack:
        if session.executor == "ray" and not session.ray_address:
            try:
                stack.enter_context(LocalRay(paths, session.gpus).use())
            except LocalRayError as exc:
                raise error(f"cannot start the session's local Ray instance: {exc}") from None
        yield
