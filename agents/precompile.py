"""Compile a tuner candidate's kernels before its judge run, on spare cores and off the judge's
clock (qrsup.kernels.fast.precompile says how and why).

Only for a judge that runs on this host's GPU and shares its Triton cache across the agent's
candidates, and only for candidates that embed a config of the shipped kernel: nothing of the
candidate runs here, its config is read from its text. The compiler runs at a low priority, so
another agent's judge on this host keeps its CPU; a failure or a timeout costs nothing but the
time, since the judge compiles whatever is missing as it always did.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.settings import PATIENCE_S
from qrsup.agents.spaces import embedded_config
from qrsup.kernels.compile_beside import lower_priority, spare_workers
from qrsup.kernels.device_arch import device_arch
from qrsup.kernels.fast.config import dump_config
from qrsup.kernels.judge.processes import kill_child_tree
from qrsup.kernels.judge.protocol import LineReader
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import Spec

TIMEOUT_S = 300.0
ANSWERED_POLL_S = 0.05  # how long a cancel looks for an answer already sent
JUDGE_COMPILES = "the judge compiles instead"


class Precompiler:
    """Fills `cache` for GPUs of compute capability `arch` with `workers` compiler processes,
    through one compiler kept warm for the agent (precompile_server.py), started on first use
    and again after a cancel or a death."""

    def __init__(
        self, cache: Path, arch: int, work: Path, workers: int, patience_s: float = PATIENCE_S
    ) -> None:
        self.cache, self.arch, self.work, self.workers = cache, arch, work, workers
        self.patience_s = patience_s
        self._server: CompileServer | None = None

    @classmethod
    def for_device(
        cls, device: str, cache: Path, work: Path, patience_s: float = PATIENCE_S
    ) -> Precompiler | None:
        """One for a CUDA device whose capability NVML reports; None elsewhere."""
        arch = device_arch(device)
        if arch is None:
            return None
        return cls(cache, arch, work, spare_workers(), patience_s)

    def start(self, candidate: Candidate, specs: Sequence[Spec]) -> Compilation | None:
        """Start compiling the kernels the candidate launches for these specs' shapes; None
        where the candidate embeds no config."""
        config = embedded_config(candidate.source)
        if config is None or not specs:
            return None
        configs = self.work / f"{candidate.id}.configs.toml"
        configs.write_text(dump_config(config))
        if self._server is None or not self._server.alive():
            self._server = CompileServer.start(self.arch, self.workers, self.work)
        shapes = list(dict.fromkeys((spec.batch, spec.n) for spec in specs))
        job = {"id": candidate.id, "configs": str(configs), "cache": str(self.cache)}
        self._server.submit(job | {"shapes": shapes})
        return Compilation(
            candidate.id, candidate.source, self._server, configs, time.monotonic(), self.patience_s
        )

    def __call__(self, candidate: Candidate, specs: Sequence[Spec]) -> str:
        """Compile and wait: a line for the agent's log ("" where the candidate embeds no
        config)."""
        compilation = self.start(candidate, specs)
        return compilation.wait() if compilation else ""

    def close(self) -> None:
        """End the warm compiler (it also ends with the agent)."""
        if self._server is not None:
            self._server.stop()
            self._server = None


class CompileServer:
    """The warm compiler's process, in a process group of its own with its workers, at a low
    priority, so another agent's judge on this host keeps its CPU."""

    def __init__(self, process: subprocess.Popen, log: Path) -> None:
        self.process, self.log = process, log
        self._replies = LineReader(process.stdout.fileno()) if process.stdout else None

    @classmethod
    def start(cls, arch: int, workers: int, work: Path) -> CompileServer:
        log = work / "precompile-server.log"
        command = [
            sys.executable,
            "-m",
            "qrsup.kernels.fast.precompile_server",
            f"--arch={arch}",
            f"--workers={workers}",
            f"--parent={os.getpid()}",  # so that an agent's death ends it, held or not
        ]
        with log.open("a") as sink:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sink,
                # A group of its own, so that a hold stops its compiler workers with it, in the
                # agent's session: should the agent die while they are held, the kernel sends
                # the group, orphaned then, SIGHUP and SIGCONT, which ends even a worker
                # stopped before it could ask to die with its parent.
                process_group=0,
            )
        # Before it forks its workers (after its imports), which inherit the priority.
        lower_priority(process.pid)
        return cls(process, log)

    def alive(self) -> bool:
        return self.process.poll() is None

    def submit(self, job: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(job) + "\n").encode())
        self.process.stdin.flush()

    def reply(self, job: str, timeout_s: float) -> dict | None:
        """Job `job`'s reply (an earlier job's, left unread, is passed over); None where none
        came within `timeout_s` or the server died."""
        assert self._replies is not None
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                reply = json.loads(self._replies.read_line(deadline))
            except (TimeoutError, EOFError, ValueError):
                return None
            if isinstance(reply, dict) and reply.get("id") == job:
                return reply

    def hold(self, held: bool) -> None:
        """Stop it and its compiler workers (SIGSTOP to its process group), or let them go on.
        A compile started ahead runs beside the judge, and the judge's timed phases must not
        share the host's cores with it: on an H200 one honest candidate failed timing integrity
        with such a compile running (docs/benchmarks.md, 2026-12-01, sixth session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGSTOP if held else signal.SIGCONT)

    def stop(self) -> None:
        """End it and its compiler workers; what they finished stays in the cache."""
        self.hold(False)
        kill_child_tree(self.process)
        self.process.wait()

    def last_words(self) -> str:
        lines = [line for line in self.log.read_text(errors="replace").splitlines() if line]
        return lines[-1] if lines else f"exit status {self.process.returncode}"


@dataclass
class Compilation:
    """One compile under way in the warm compiler, running on its own until waited for or
    cancelled."""

    job: str  # the candidate's id
    source: str  # the candidate's, which names what is being compiled
    server: CompileServer
    configs: Path
    started: float  # time.monotonic()
    patience_s: float = PATIENCE_S
    overran: bool = False  # still compiling when the patience ran out

    def wait(self) -> str:
        """Its line for the agent's log, once it ends, or once the loop has waited `patience_s`
        (the time it ran beside the last judge run was free) or it has run TIMEOUT_S."""
        self.hold(False)
        now = time.monotonic()
        deadline = min(now + self.patience_s, self.started + TIMEOUT_S)
        reply = self.server.reply(self.job, max(0.0, deadline - now))
        self.configs.unlink(missing_ok=True)
        if reply is None:
            self.overran = time.monotonic() >= deadline  # else it died
            self.server.stop()  # what it finished stays in the cache
            if self.overran:
                waited = time.monotonic() - now
                return f"precompile: still compiling after the loop waited {waited:.0f} s"
            return f"precompile failed ({self.server.last_words()}); {JUDGE_COMPILES}"
        if "error" in reply:
            return f"precompile failed ({reply['error']}); {JUDGE_COMPILES}"
        failures = reply.get("failures") or []
        if failures:
            return f"precompile failed ({reply.get('summary')}: {failures[0]}); {JUDGE_COMPILES}"
        return str(reply["summary"])

    def hold(self, held: bool) -> None:
        self.server.hold(held)

    def cancel(self) -> None:
        """Drop it: a reply already waiting is read, so the warm compiler serves on; a compile
        still running ends with the compiler (the next one starts afresh), and what it finished
        stays in the cache."""
        if self.server.reply(self.job, ANSWERED_POLL_S) is None:
            self.server.stop()
        self.configs.unlink(missing_ok=True)
