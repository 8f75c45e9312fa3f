"""The referee's handle on the contestant process: spawn, ask with a deadline, classify deaths."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from kernels.judge.processes import kill_tree, tree_rss_bytes
from kernels.judge.protocol import (
    ChannelClosed,
    ChannelTimeout,
    LineReader,
    ProtocolError,
    decode,
    encode,
    write_all,
)


class ContestantFailure(RuntimeError):
    """The contestant can no longer answer: `kind` is timeout, crash, memory or protocol."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass
class Exchange:
    """A reply and how long the referee waited for it, by its own clock."""

    reply: dict
    elapsed_ns: int


class ContestantProcess:
    """A contestant in its own process group, talking over two private pipes."""

    def __init__(self, device: str, output_path: Path, memory_limit_bytes: int) -> None:
        cmd_read, self._cmd_write = os.pipe()
        self._reply_read, reply_write = os.pipe()
        self._output = open(output_path, "ab")  # noqa: SIM115 - lives as long as the process
        self._memory_limit = memory_limit_bytes
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernels.judge.contestant",
                str(cmd_read),
                str(reply_write),
                device,
            ],
            pass_fds=(cmd_read, reply_write),
            stdin=subprocess.DEVNULL,
            stdout=self._output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        os.close(cmd_read)
        os.close(reply_write)
        if device == "cpu":
            # A CPU candidate that allocates without bound gets MemoryError, not the host's OOM
            # killer; CUDA reserves address space, so there only the RSS watch applies.
            limits = (memory_limit_bytes, memory_limit_bytes)
            with contextlib.suppress(OSError, ValueError):
                resource.prlimit(self._proc.pid, resource.RLIMIT_DATA, limits)
        self._reader = LineReader(self._reply_read)
        self._seq = 0
        self._ps = psutil.Process(self._proc.pid)

    @property
    def pid(self) -> int:
        return self._proc.pid

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
        elapsed = time.perf_counter_ns() - start
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
        return Exchange(reply, elapsed)

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
        self._output.close()

    def kill(self) -> None:
        kill_tree(self._proc.pid)
        self._proc.poll()
