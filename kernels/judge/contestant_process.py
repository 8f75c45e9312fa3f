"""The referee's handle on the contestant process: spawn, ask with a deadline, classify deaths."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import psutil
from qrsup.kernels.judge.contestant_launch import ContestantLaunch
from qrsup.kernels.judge.export_area import ExportArea
from qrsup.kernels.judge.processes import (
    ThreadTimes,
    kill_child_tree,
    schedstat,
    tree_rss_bytes,
)
from qrsup.kernels.judge.protocol import (
    ChannelClosed,
    ChannelTimeout,
    LineReader,
    ProtocolError,
    decode,
    encode,
    write_all,
)
from qrsup.kernels.judge.sandbox import plan_sandbox
from qrsup.kernels.profiling.trace import TRACE_FILE


class ContestantFailure(RuntimeError):
    """The contestant can no longer answer (`kind`: timeout, crash, memory or protocol), or will
    not be believed (tamper)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass
class Exchange:
    """A reply, how long the referee waited for it by its own clock, and how much of that its
    thread spent runnable but waiting for a CPU (a busy host's toll, counted by the kernel)."""

    reply: dict
    elapsed_ns: int
    waited_ns: int = 0


class ContestantProcess:
    """A contestant behind the sandbox's boundary, talking over private pipes and files.

    Its outputs come back through descriptors the referee opened: replies, exported factors
    (`exports`, memory both map), a profile trace (`trace_path`) and its stdout/stderr
    (`output_path`). The candidate's source goes in the same way, through `source_path`, when
    `load` is asked.
    """

    def __init__(self, launch: ContestantLaunch) -> None:
        cmd_read, self._cmd_write = os.pipe()
        self._reply_read, reply_write = os.pipe()
        status_read, status_write = os.pipe()
        work_dir = launch.work_dir
        self.trace_path = work_dir / TRACE_FILE
        device = "cuda:0" if launch.device.startswith("cuda") else "cpu"
        self.exports = ExportArea.create(launch.max_file_bytes)
        export_fd = self.exports.fd
        trace_fd = os.open(self.trace_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.source_path = work_dir / "candidate-source.py"
        source_fd = os.open(self.source_path, os.O_RDONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self._output = open(work_dir / "candidate-output.log", "ab")  # noqa: SIM115 - lives as long as the process
        self._memory_limit = launch.memory_limit_bytes
        contestant = [sys.executable, "-m", "qrsup.kernels.judge.contestant"]
        arguments = (cmd_read, reply_write, device, export_fd, trace_fd, source_fd)
        contestant += [str(argument) for argument in arguments]
        policy = plan_sandbox(
            launch.isolation,
            command=contestant,
            env=dict(os.environ),
            work_dir=work_dir,
            status_fd=status_write,
            cuda=device != "cpu",
            max_file_bytes=launch.max_file_bytes,
            # A CPU candidate that allocates without bound gets MemoryError, not the host's OOM
            # killer; CUDA reserves address space, so there only the RSS watch applies.
            data_limit_bytes=launch.memory_limit_bytes if device == "cpu" else None,
            triton_cache=launch.triton_cache,
        )
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "qrsup.kernels.judge.sandbox_main", policy.to_json()],
            pass_fds=(cmd_read, reply_write, export_fd, trace_fd, source_fd, status_write),
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for fd in (cmd_read, reply_write, trace_fd, source_fd, status_write):
            os.close(fd)
        if device != "cpu":
            self.exports.pin()  # while the contestant starts
        self._reader = LineReader(self._reply_read)
        self._seq = 0
        self.boundary = self._read_status(status_read, launch.start_timeout_s)
        try:
            self._ps = psutil.Process(int(self.boundary.get("pid", self._proc.pid)))
        except psutil.NoSuchProcess:
            self._ps = psutil.Process()  # it is gone already: the first question says so
        self._threads = ThreadTimes(self._ps.pid)

    def _read_status(self, fd: int, timeout_s: float) -> dict:
        """The launcher's one line on the boundary it set up; empty if it died first."""
        try:
            line = LineReader(fd).read_line(time.monotonic() + timeout_s)
            return json.loads(line)
        except (ChannelClosed, ChannelTimeout, ProtocolError, ValueError):
            return {}
        finally:
            os.close(fd)

    @property
    def pid(self) -> int:
        return self._proc.pid

    def thread_times_ns(self) -> tuple[int, int]:
        """(its other threads' time on a CPU, its main thread's wait for a CPU) so far."""
        return self._threads.other_threads_ran_ns(), schedstat(self._ps.pid)[1]

    def cpu_num(self) -> int:
        """The CPU its main thread last ran on (-1 once it is gone)."""
        try:
            return self._ps.cpu_num()
        except psutil.NoSuchProcess:
            return -1

    def cpu_time_ns(self) -> int:
        """User plus system CPU time of all the contestant's threads so far."""
        try:
            times = self._ps.cpu_times()
        except psutil.NoSuchProcess:
            return 0
        return int((times.user + times.system) * 1e9)

    def ask(self, message: dict, timeout_s: float, phase: str) -> Exchange:
        """Send one command and wait for its reply, watching liveness, memory and the deadline."""
        self._seq += 1
        waited_before = schedstat()[1]  # read before the clock starts, to stay out of it
        start = time.perf_counter_ns()
        try:
            write_all(self._cmd_write, encode({**message, "seq": self._seq}))
        except (BrokenPipeError, OSError):
            raise self._death(phase) from None
        deadline = time.monotonic() + timeout_s
        try:
            line = self._reader.read_line(deadline, on_tick=lambda: self._watch(phase))
        except ChannelTimeout:
            self.kill()
            raise ContestantFailure(
                "timeout", f"{phase}: no answer within {timeout_s:g} s; process group killed"
            ) from None
        except ChannelClosed:
            raise self._death(phase) from None
        except ProtocolError as exc:
            self.kill()
            raise ContestantFailure("protocol", f"{phase}: {exc}") from None
        elapsed, waited = time.perf_counter_ns() - start, schedstat()[1] - waited_before
        try:
            reply = decode(line)
        except ProtocolError as exc:
            self.kill()
            raise ContestantFailure("protocol", f"{phase}: {exc}") from None
        if reply.get("seq") != self._seq:
            self.kill()
            raise ContestantFailure(
                "protocol",
                f"{phase}: a reply arrived out of sequence; something other than the harness "
                "wrote to the judge's channel",
            )
        return Exchange(reply, elapsed, waited)

    def _watch(self, phase: str) -> None:
        if self._proc.poll() is not None:
            raise self._death(phase)
        rss = tree_rss_bytes(self._proc.pid)
        if rss > self._memory_limit:
            self.kill()
            raise ContestantFailure(
                "memory",
                f"{phase}: resident memory {rss / 2**30:.2f} GiB exceeded the limit of "
                f"{self._memory_limit / 2**30:.2f} GiB; process group killed",
            )

    def _death(self, phase: str) -> ContestantFailure:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return ContestantFailure("crash", f"{phase}: the contestant closed its channel")
        if code < 0:
            name = signal.Signals(-code).name
            how = f"killed by {name}"
            if -code == signal.SIGSEGV:
                how += " (segmentation fault)"
        else:
            how = f"exited with status {code}"
        self.kill()
        return ContestantFailure("crash", f"{phase}: the contestant process {how}")

    def close(self) -> None:
        """Ask politely, then kill whatever is left of the process tree."""
        if self._proc.poll() is None:
            try:
                write_all(self._cmd_write, encode({"op": "exit"}))
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        for fd in (self._cmd_write, self._reply_read):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.exports.close()
        self._threads.close()
        self._output.close()

    def kill(self) -> None:
        kill_child_tree(self._proc)
        self._proc.poll()
