"""Compile a config's kernels into a Triton cache before the judge's contestant calls them.

A tuner candidate changes a few knobs, and every kernel those knobs specialize is compiled on its
first call inside the contestant: one after another, on the judge's wall clock (the H200 loop of
2026-11-30 spent up to 29 s of one quick stage so). Here each launch the candidate's plans make
for the shapes to be judged is compiled beforehand, in parallel, into the cache the judge hands
the contestant, which then finds every kernel there.

The compile goes through Triton's own JIT (`JITFunction.warmup`, which specializes the arguments
and computes the cache key exactly as a launch does, then compiles without launching). Its driver
is replaced by one that only names the target GPU, so no CUDA context is made and the GPU stays
free for a judge; the arguments are meta tensors, whose addresses keep the real buffers'
alignment. Candidate code never runs here: the config arrives as a TOML file.

`python -m qrsup.kernels.fast.precompile CONFIGS CACHE_DIR --arch 90 --shape 8x512 ...` prints
one summary line, and exits 1 when some launch failed to compile (the judge then compiles it and
reports the error as it would have).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from triton.backends.compiler import GPUTarget
from triton.runtime.driver import driver as triton_driver

from ..judge.processes import die_with_parent
from ..judge.triton_cache import MANAGER_ENV, RELOCATABLE_MANAGER
from .aot import Launch, driver_kernels, map_forked, record_launches
from .config import Config, load_config
from .plan import make_plan

WARP_SIZE = 32


class TargetOnlyDriver:
    """Stands in for Triton's CUDA driver where only the target matters: a warm-up compiles for
    it and launches nothing, so no device, stream or context is ever asked for."""

    def __init__(self, target: GPUTarget) -> None:
        self.target = target

    def get_current_target(self) -> GPUTarget:
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def __getattr__(self, name: str) -> object:
        """Anything else another Triton version asks of its driver: the real one's, where this
        machine has one."""
        return getattr(triton_driver.default, name)


@dataclass(frozen=True)
class Precompiled:
    """What one precompile did: distinct launches, cache entries it added, failures, time."""

    launches: int
    compiled: int
    failures: tuple[str, ...]
    seconds: float

    def summary(self) -> str:
        failed = f", {len(self.failures)} failed" if self.failures else ""
        cached = self.launches - self.compiled
        return (
            f"precompiled {self.compiled} kernels ({cached} already cached{failed}) "
            f"in {self.seconds:.1f} s"
        )


def distinct_launches(config: Config, shapes: list[tuple[int, int]]) -> list[Launch]:
    """Every launch the config's plans make for these (batch, n) shapes, once per binary."""
    seen: set[tuple[str, str]] = set()
    launches = []
    for batch, n in dict.fromkeys(shapes):
        plan = make_plan(batch, n, config.for_shape(batch, n))
        if plan is None:  # the shape falls back to torch.geqrf: nothing to compile
            continue
        for launch in record_launches(plan):
            if launch.key() not in seen:
                seen.add(launch.key())
                launches.append(launch)
    return launches


def _warm(launch: Launch) -> str | None:
    try:
        launch.kernel.warmup(*launch.args, grid=(1,), **launch.kwargs)
    except Exception as error:  # any compiler stage may fail; the summary names the launch
        return f"{launch.where} {launch.kernel.__name__}: {type(error).__name__}: {error}"
    return None


def precompile(
    config: Config, shapes: list[tuple[int, int]], target: GPUTarget, cache: Path, workers: int
) -> Precompiled:
    """Compile the launches into `cache` (Triton's cache layout) with `workers` processes. It
    leaves Triton's driver replaced for good (restoring it would start a real one), so it runs in
    a process of its own: `main`'s."""
    start = time.monotonic()
    os.environ["TRITON_CACHE_DIR"] = str(cache)
    os.environ.setdefault(MANAGER_ENV, RELOCATABLE_MANAGER)  # the contestant's lookup too
    cache.mkdir(parents=True, exist_ok=True)
    before = _entries(cache)
    launches = distinct_launches(config, shapes)
    triton_driver.set_active(TargetOnlyDriver(target))  # forked workers inherit it
    outcomes = map_forked(_warm, launches, workers)
    failures = tuple(reason for reason in outcomes if reason is not None)
    added = len(_entries(cache) - before)
    return Precompiled(len(launches), added, failures, time.monotonic() - start)


def _entries(cache: Path) -> set[str]:
    """The cache's compiled kernels: one directory per cache key."""
    return {entry.name for entry in cache.iterdir() if entry.is_dir()}


def parse_shape(text: str) -> tuple[int, int]:
    """`8x512` → (8, 512)."""
    batch, _, n = text.lower().partition("x")
    try:
        shape = int(batch), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is BATCHxN, e.g. 8x512, not {text!r}") from None
    if min(shape) < 1:
        raise argparse.ArgumentTypeError(f"a shape's batch and n are positive, not {text!r}")
    return shape


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qrsup.kernels.fast.precompile")
    parser.add_argument("configs", type=Path, help="a configs TOML file (the kernel's format)")
    parser.add_argument("cache", type=Path, help="the Triton cache directory to fill")
    parser.add_argument("--arch", type=int, required=True, help="compute capability, e.g. 90")
    parser.add_argument("--shape", type=parse_shape, action="append", required=True)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--parent", type=int, help="a pid: end when that process ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        die_with_parent(args.parent)
    if not driver_kernels():
        print("no compiled kernels to warm: run with TRITON_INTERPRET unset")
        return 2
    try:
        config = load_config(args.configs).for_arch(args.arch)
    except (OSError, ValueError) as error:
        print(f"cannot read {args.configs}: {error}")
        return 2
    target = GPUTarget("cuda", args.arch, WARP_SIZE)
    done = precompile(config, args.shape, target, args.cache, args.workers)
    print(done.summary(), flush=True)
    for failure in done.failures:
        print(f"FAIL {failure}")
    return 1 if done.failures else 0


if __name__ == "__main__":
    sys.exit(main())
