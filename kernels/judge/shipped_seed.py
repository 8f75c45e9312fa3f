"""The shipped kernel's launches, compiled into a candidate's new kept cache before its first run.

Most candidates are the shipped kernel changed in a few places, importing the rest of it as it
is, and each launch compiled on the candidate's first call of a spec, one after another, inside
the contestant: on an H200 the side-queue cheater (the shipped kernel on a second queue) spent
15.9 s of a 33 s verdict compiling one 8×512 spec's kernels, and 1.3 s once they were kept.
Here qrsup's own precompiler (`qrsup.kernels.fast.precompile`: the shipped configs file, no
candidate code) compiles them beforehand, in parallel, into the cache the contestant is handed.
Triton keys a kernel by its source and specialization, so a launch the candidate changed finds
nothing here and compiles as before; what is compiled here is what the candidate would have
compiled itself from the same sources.

Only where it can pay: a CUDA judge whose kept cache is still empty (a source's first run; the
tuner's shared cache is filled by the agent's own precompiler), for a source that imports the
shipped kernels. It compiles while the referee starts (its imports, the contestant's), on half
the cores as the agent's precompiler does (`compile_beside.py`) but at the judge's priority,
since the judge waits for it: beside one busy loop per core on an H200, at the precompiler's low
priority, it took 52 s. A failure costs only its time, since the contestant compiles whatever is
missing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from qrsup.kernels.compile_beside import spare_workers
from qrsup.kernels.device_arch import device_arch
from qrsup.kernels.fast.config import DEFAULT_CONFIGS
from qrsup.kernels.judge.processes import kill_child_tree
from qrsup.kernels.suites import Spec

SHIPPED_IMPORT = re.compile(r"\bqrsup\.kernels\b")
TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Seeded:
    """What seeding did: the precompiler's summary line (or why it failed) and its time."""

    summary: str
    seconds: float


def wants_seed(source: str, cache: Path, device: str) -> bool:
    """Whether seeding can pay: a CUDA judge, a kept cache with nothing in it yet, and a
    source that imports the shipped kernels."""
    if not device.startswith("cuda") or not SHIPPED_IMPORT.search(source):
        return False
    return not (cache.is_dir() and any(cache.iterdir()))


@dataclass
class Seeding:
    """The precompiler at work in a child process of its own group."""

    process: subprocess.Popen
    started: float

    @classmethod
    def start(cls, cache: Path, arch: int, shapes: list[str]) -> Seeding:
        command = [sys.executable, "-m", "qrsup.kernels.fast.precompile", str(DEFAULT_CONFIGS)]
        command += [str(cache), f"--arch={arch}", f"--workers={spare_workers()}"]
        command += [f"--parent={os.getpid()}"]
        env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
        # The directory exists before the contestant's boundary mounts it, the kernels after.
        cache.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen(
            [*command, *shapes],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            process_group=0,
            # The contestant may run as another user, whose boundary was drawn while this
            # compiled: it must be able to read the kernels (it never writes a key found here).
            umask=0o022,
        )
        return cls(process, time.monotonic())

    def wait(self) -> Seeded:
        """Its summary line, else its last words (an argument error, a trace's exception);
        ended with its workers past `TIMEOUT_S`."""
        left = max(0.0, TIMEOUT_S - (time.monotonic() - self.started))
        try:
            output, errors = self.process.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            self.stop()
            return Seeded(f"no answer in {TIMEOUT_S:g} s", time.monotonic() - self.started)
        lines = output.strip().splitlines() or errors.strip().splitlines()[-1:]
        summary = lines[0] if lines else f"exit status {self.process.returncode}"
        return Seeded(summary, time.monotonic() - self.started)

    def stop(self) -> None:
        """End it and its workers, unless it has ended already."""
        kill_child_tree(self.process)
        self.process.communicate()


def start_seed_if_it_pays(
    source: str, cache: Path | None, device: str, specs: Iterable[Spec]
) -> Seeding | None:
    """Start compiling the shipped configs' launches for these specs' shapes into `cache`
    where that can pay (`wants_seed`); None where it cannot, where no cache is kept, where
    the device's architecture is unknown (no NVML) or there is nothing to compile."""
    if cache is None or not wants_seed(source, cache, device):
        return None
    arch = device_arch(device)
    shapes = list(dict.fromkeys(f"--shape={spec.batch}x{spec.n}" for spec in specs))
    if arch is None or not shapes:
        return None
    return Seeding.start(cache, arch, shapes)
