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
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.spaces import embedded_config
from qrsup.kernels.fast.config import dump_config
from qrsup.kernels.judge.processes import kill_child_tree
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import Spec

TIMEOUT_S = 300.0
NICENESS = 10


@dataclass(frozen=True)
class Precompiler:
    """Fills `cache` for GPUs of compute capability `arch` with `workers` compiler processes."""

    cache: Path
    arch: int
    work: Path  # where the candidate's config file is written for the compiler
    workers: int

    @classmethod
    def for_device(cls, device: str, cache: Path, work: Path) -> Precompiler | None:
        """One for a CUDA device whose capability NVML reports; None elsewhere."""
        arch = device_arch(device)
        if arch is None:
            return None
        # Half the cores: the judge's own processes and another agent's judge keep the rest.
        return cls(cache, arch, work, max(1, (os.cpu_count() or 2) // 2))

    def start(self, candidate: Candidate, specs: Sequence[Spec]) -> Compilation | None:
        """Start compiling the kernels the candidate launches for these specs' shapes; None
        where the candidate embeds no config."""
        config = embedded_config(candidate.source)
        if config is None or not specs:
            return None
        configs = self.work / f"{candidate.id}.configs.toml"
        configs.write_text(dump_config(config))
        output = self.work / f"{candidate.id}.precompile.log"
        command = [
            sys.executable,
            "-m",
            "qrsup.kernels.fast.precompile",
            str(configs),
            str(self.cache),
            f"--arch={self.arch}",
            f"--workers={self.workers}",
            f"--parent={os.getpid()}",  # so that an agent's death ends it, held or not
            *(f"--shape={spec.batch}x{spec.n}" for spec in specs),
        ]
        with output.open("w") as sink:  # a file, not a pipe: nobody reads while it runs
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its compiler workers go with it on a timeout
            )
        # Before it forks its workers (after its imports), which inherit the priority.
        with contextlib.suppress(ProcessLookupError):
            os.setpriority(os.PRIO_PROCESS, process.pid, NICENESS)
        return Compilation(candidate.source, process, output, configs, time.monotonic())

    def __call__(self, candidate: Candidate, specs: Sequence[Spec]) -> str:
        """Compile and wait: a line for the agent's log ("" where the candidate embeds no
        config)."""
        compilation = self.start(candidate, specs)
        return compilation.wait() if compilation else ""


@dataclass
class Compilation:
    """A compile under way, running on its own until waited for or cancelled."""

    source: str  # the candidate's, which names what is being compiled
    process: subprocess.Popen
    output: Path  # its stdout and stderr
    configs: Path
    started: float  # time.monotonic()

    def wait(self) -> str:
        """Its line for the agent's log, once it ends or overruns TIMEOUT_S from its start."""
        self.hold(False)
        remaining = max(0.0, self.started + TIMEOUT_S - time.monotonic())
        try:
            self.process.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.cancel()
            return f"precompile: no answer in {TIMEOUT_S:g} s; the judge compiles instead"
        lines = [line for line in self._read().splitlines() if line.strip()]
        summary = next((line for line in lines if line.startswith("precompiled")), "")
        if self.process.returncode == 0 and summary:
            return summary
        tail = lines[-1] if lines else f"exit status {self.process.returncode}"
        return f"precompile failed ({summary or tail}); the judge compiles instead"

    def hold(self, held: bool) -> None:
        """Stop it and its compiler workers (SIGSTOP to its process group), or let them go on.
        A compile started ahead runs beside the judge, and the judge's timed phases must not
        share the host's cores with it: on an H200 one honest candidate failed timing integrity
        with such a compile running (docs/benchmarks.md, 2026-12-01, sixth session)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGSTOP if held else signal.SIGCONT)

    def cancel(self) -> None:
        """End it and its compiler workers; what they finished stays in the cache."""
        kill_child_tree(self.process)
        self.process.wait()
        self._read()

    def _read(self) -> str:
        try:
            return self.output.read_text(errors="replace")
        finally:
            self.output.unlink(missing_ok=True)
            self.configs.unlink(missing_ok=True)


def device_arch(device: str) -> int | None:
    """The compute capability (90 for an H100 or H200) of `cuda:N`, through NVML, which makes
    no CUDA context; None without NVML or a GPU."""
    if not device.startswith("cuda"):
        return None
    index = int(device.partition(":")[2] or 0)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    if visible[0] and index < len(visible) and visible[index].strip().isdigit():
        index = int(visible[index])
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML library, or no driver
        return None
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        return 10 * major + minor
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()
