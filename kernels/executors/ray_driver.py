"""The Ray driver process an executor keeps between its judge runs (`ray_submit`).

Connecting costs a Python start, importing Ray and joining the cluster, and a new driver is a new
Ray job whose worker processes start cold; a driver kept for the next run pays none of that
again. A driver that reported the cluster lost, died, or was interrupted is closed, and the next
run starts a fresh one. Requests go pickled to its stdin; its lines come back on a private pipe.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
from typing import IO

from qrsup.kernels.executors.ray_submit import SubmitRequest
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.judge.processes import kill_tree
from qrsup.kernels.judge.protocol import LineReader

EXIT_WAIT_S = 10.0
# A run's result is one line, its kept files inside it: a profile's Chrome trace of one smoke spec
# on the CPU was 13.6 MB, 18 MB in base64; the protocol's default 1 MiB cap made every such
# result look like the driver's death, and the run waited for a cluster that was there.
MAX_RESULT_LINE_BYTES = 1 << 30


class RayDriver:
    """One driver child, connected (or connecting) to `target`; one request at a time."""

    def __init__(self, target: RayTarget) -> None:
        self.target = target
        self.fresh = True  # it has not answered a request yet: it still has to connect
        self.unreadable = False  # it sent a line that could not be read: its lines are out of step
        read_fd, write_fd = os.pipe()
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "qrsup.kernels.executors.ray_submit", str(write_fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            pass_fds=(write_fd,),
            env={**os.environ, **target.env},
        )
        os.close(write_fd)
        self._read_fd = read_fd
        self.reader = LineReader(read_fd, MAX_RESULT_LINE_BYTES)

    def serves(self, target: RayTarget) -> bool:
        """Whether this driver is alive and joined to `target` (the local instance may move)."""
        return self._process.poll() is None and target == self.target

    def send(self, request: SubmitRequest) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(pickle.dumps(request))
        self._process.stdin.flush()

    def death(self) -> str:
        """One line on why the driver ended without a final word: its status and last error."""
        try:
            code = self._process.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().decode(errors="replace").splitlines()]
        last = next((line for line in reversed(lines) if line), "")
        return f"the Ray driver ended (status {code}){': ' + last[:200] if last else ''}"

    def close(self, patient: bool = True) -> None:
        """End the driver: at end of its stdin it disconnects; one that does not is killed (and
        its task with it: Ray ends a job's tasks when its driver goes)."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.close()
        try:
            self._process.wait(EXIT_WAIT_S if patient else 0.0)
        except subprocess.TimeoutExpired:
            kill_tree(self._process.pid)
            self._process.wait()
        os.close(self._read_fd)
        self._stderr.close()
