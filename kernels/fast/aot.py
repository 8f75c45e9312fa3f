"""Ahead-of-time compile of the fast kernels' launches for an sm_90 GPU, on a machine without one.

Triton's CPU interpreter runs a kernel's Python, never Triton's compiler, so a kernel the CPU tests
pass can still be one that no GPU compiles: the look-ahead kernel once failed to compile on every
H200 launch while its interpreter tests passed. Here the launches a plan makes are recorded with
meta tensors (no data, no device) and each kernel is compiled for the target the way the launch
would specialize it, down to the cubin, so such errors show up before a device session does.

`python -m qrsup.kernels.fast.aot` compiles a representative set (see `plans_to_compile`) and
exits non-zero when any launch fails. Run it with TRITON_INTERPRET unset: the kernels must be
imported as compiled kernels, not interpreted ones.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.experimental.gluon._runtime import GluonASTSource

from ..judge.processes import die_with_parent, forks_die_with_parent
from ..suites import get_suite
from . import driver
from .config import Config, load_config
from .plan import Plan, make_plan

SM90 = GPUTarget("cuda", 90, 32)
SM90_SHARED_BYTES = 232448  # the most shared memory one H100/H200 program can have (227 KiB)
LOOKAHEAD = {"lookahead": True, "update_split_below": 0}  # every fused update gets a look-ahead
FUSED = {"path": "fused"}  # where one panel spans n rows; else make_plan falls back to blocked
WARP = {"path": "warp"}  # a Gluon kernel, where n ≤ 32
INTERPRETED = "_interpreted"  # the name ending of a Gluon kernel's twin for the CPU
SPLIT_PANELS = {"panel_split_rows": 256}  # plans change only where a panel has over 256 rows
L2_HINTS = {"update_l2_hints": True}  # the fused updates with their L2 policies
BLOCK = {"block_launch": True}  # a block's panels, inner updates and T join in one launch
TWO_PASS = {"update_two_pass": True, "inner_update_two_pass": True}  # W, then V·W per tile
COLUMN_MAJOR = {"column_major": True}  # H by columns: every kernel sees unit row strides
W_BY_COLUMNS = {"update_w_by_columns": True}  # the row-split Vᵀ·C summed as (Cᵀ·V)ᵀ
APPLY_AHEAD = {"update_apply_ahead": True, "inner_update_apply_ahead": True}  # C's second walk
# maxnreg on the launches: every kind of register cap at once
CAPS = {"panel_max_registers": 96, "inner_update_max_registers": 128, "update_max_registers": 168}
# The reflector steps unrolled: only for the two smallest classes, the others' unrolled panels
# taking minutes to compile (8 × 2048: 77 s against 4 s looped)
UNROLL = {"panel_unroll": True}
GATHER = {"panel_gather": True}  # column i of each reflector step by a gather along the lanes
OPTIONS = ("num_warps", "num_stages", "maxnreg")
NO_COMPILER = 77  # main's exit status where this Triton cannot compile for NVIDIA GPUs ("skipped")

Signature = dict[str, str]
Constants = dict[str, object]
Attrs = dict[tuple[int, ...], list[list[object]]]
Options = dict[str, object]


@dataclasses.dataclass(frozen=True)
class Launch:
    """One kernel launch of a plan, as the driver makes it."""

    kernel: triton.JITFunction
    args: tuple[object, ...]
    kwargs: dict[str, object]
    where: str
    """The plan it comes from, for reports."""
    grid: tuple[int, ...] = (1,)

    @property
    def programs(self) -> int:
        """How many programs its grid launches."""
        return math.prod(self.grid)

    def key(self) -> tuple[str, str]:
        """Launches with one key compile to one binary (the tensors' shapes do not matter)."""
        return self.kernel.__name__, repr(_compile_inputs(self))


def _describe(plan: Plan) -> str:
    shape = plan.shape
    knobs = f"path={shape.path} lookahead={shape.lookahead} split={shape.panel_split_rows}"
    return f"{plan.batch}x{plan.n} ({shape.name}, {knobs})"


def driver_kernels() -> dict[str, triton.JITFunction]:
    """The kernels driver.py launches on a GPU, by name (none where TRITON_INTERPRET made them
    interpreted functions); a Gluon kernel's interpretable twin runs on the CPU only."""
    return {
        name: value
        for name, value in vars(driver).items()
        if isinstance(value, triton.JITFunction) and not name.endswith(INTERPRETED)
    }


def record_launches(plan: Plan) -> list[Launch]:
    """The launches run_plan makes for `plan`, in order, on meta tensors: the driver's `launch`
    (launch_record.py), through which it makes every launch, only logs them here."""
    log: list[Launch] = []
    where = _describe(plan)

    def log_launch(
        kernel: triton.JITFunction, grid: tuple[int, ...], *args: object, **kwargs: object
    ) -> None:
        if "PAIR_REDUCE" in kwargs:  # the driver turns it off for CPU tensors only
            kwargs["PAIR_REDUCE"] = plan.shape.panel_pair_reduce
        log.append(Launch(kernel, args, kwargs, where, tuple(grid)))

    a = torch.empty((plan.batch, plan.n, plan.n), device="meta")
    with mock.patch.object(driver, "launch", log_launch):
        driver.run_plan(a, plan, driver.Buffers.allocate(a, plan))
    return log


def compile_launch(launch: Launch, target: GPUTarget = SM90) -> triton.compiler.CompiledKernel:
    """Compile one launch for `target`, specialized as Triton's JIT would specialize it."""
    signature, constexprs, attrs, options = _compile_inputs(launch)
    source_kind = GluonASTSource if launch.kernel.is_gluon() else ASTSource
    source = source_kind(fn=launch.kernel, signature=signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=target, options=options)


def _compile_inputs(launch: Launch) -> tuple[Signature, Constants, Attrs, Options]:
    """The signature, constants, argument attributes and options the JIT would compile with."""
    kernel, kwargs = launch.kernel, dict(launch.kwargs)
    options = {name: kwargs.pop(name) for name in OPTIONS if name in kwargs}
    bound = dict(zip(kernel.arg_names, launch.args, strict=False)) | kwargs
    signature: Signature = {}
    constexprs: Constants = {}
    attrs: Attrs = {}
    for i, param in enumerate(kernel.params):
        value = bound[param.name]
        kind, divisible = ("constexpr", False) if param.is_constexpr else _specialize(value)
        signature[param.name] = kind
        if kind == "constexpr":
            constexprs[param.name] = value
        elif divisible:
            attrs[(i,)] = [["tt.divisibility", 16]]
    return signature, constexprs, attrs, options


def _specialize(value: object) -> tuple[str, bool]:
    """Triton's JIT rule for one argument: its type, and whether it is divisible by 16 (a
    pointer's address in bytes, an integer's value); an integer equal to 1 becomes a constant."""
    if isinstance(value, torch.Tensor):
        dtype = {torch.float32: "fp32", torch.int32: "i32", torch.int64: "i64"}[value.dtype]
        return f"*{dtype}", value.data_ptr() % 16 == 0
    if isinstance(value, bool):
        return "u1", False
    if isinstance(value, float):
        return "fp32", False
    if not isinstance(value, int):
        raise TypeError(f"no JIT type for a kernel argument of type {type(value).__name__}")
    if value == 1:
        return "constexpr", False
    return ("i32" if -(2**31) <= value < 2**31 else "i64"), value % 16 == 0


def plans_to_compile(config: Config) -> list[Plan]:
    """One qr_v2 benchmark shape per shape class, under its class's shipped point, with
    look-ahead, with the update's L2 policies, with block launches, with two-pass updates, with H
    column-major, with register caps, with the row-split Vᵀ·C by columns, with gathered panel
    columns, with the second walk's C loaded ahead (with and without the caps) and with row-split
    panels; the first also on the fused and warp paths (the fused path's compiles take seconds
    each), and the first two with unrolled panels."""
    shapes: dict[str, tuple[int, int]] = {}
    for spec in get_suite("qr_v2").benchmarks:
        shapes.setdefault(config.for_shape(spec.batch, spec.n).name, (spec.batch, spec.n))
    plans = []
    for i, (batch, n) in enumerate(shapes.values()):
        shipped = config.for_shape(batch, n)
        variants = ((FUSED, WARP) if i == 0 else (SPLIT_PANELS,)) + ((UNROLL,) if i < 2 else ())
        every = (LOOKAHEAD, L2_HINTS, BLOCK, TWO_PASS, COLUMN_MAJOR, CAPS, W_BY_COLUMNS, GATHER)
        every += (APPLY_AHEAD, {**APPLY_AHEAD, **CAPS})
        for changes in ({}, *every, *variants):
            plan = make_plan(batch, n, dataclasses.replace(shipped, **changes))
            if plan is not None:
                plans.append(plan)
    return plans


def representative_launches(plans: list[Plan]) -> Iterator[Launch]:
    """Each kernel's first launch in each plan (its widest row tile) per set of its flags (an
    update that mirrors the next panel's columns may come after one that does not), once per
    distinct binary: compiling every panel offset's row tile would take minutes and add little."""
    seen: set[tuple[str, str]] = set()
    for plan in plans:
        firsts: dict[tuple[str, str], Launch] = {}
        for launch in record_launches(plan):
            firsts.setdefault((launch.kernel.__name__, _flags(launch)), launch)
        for launch in firsts.values():
            if launch.key() not in seen:
                seen.add(launch.key())
                yield launch


def _flags(launch: Launch) -> str:
    """The launch's boolean constants, which pick code paths where its sizes pick tiles."""
    return repr(sorted((k, v) for k, v in launch.kwargs.items() if isinstance(v, bool)))


def check(launch: Launch) -> str | None:
    """Why `launch` cannot run on an sm_90 GPU, or None where it compiles and fits."""
    try:
        compiled = compile_launch(launch)
    except Exception as error:  # any compiler stage may fail; the report names the error
        return f"{type(error).__name__}: {error}"
    shared = compiled.metadata.shared
    if shared > SM90_SHARED_BYTES:
        return f"needs {shared} bytes of shared memory, over sm_90's {SM90_SHARED_BYTES}"
    return None


Work = Callable[[Launch], str | None]
_FORKED: list[tuple[Work, Launch]] = []


def map_forked(work: Work, launches: list[Launch], workers: int) -> list[str | None]:
    """`work` on every launch, one compile per worker process. The workers are forked and
    inherit the launches, which hold kernels and meta tensors that do not pickle."""
    _FORKED[:] = [(work, launch) for launch in launches]
    context = multiprocessing.get_context("fork")
    # A worker left behind, held (an agent stops its compile while the judge times) or not, would
    # outlive this process for good: each dies with it, asked as its fork returns, and its
    # initializer ends it if this process is already gone.
    forks_die_with_parent()
    with context.Pool(max(1, workers), die_with_parent, (os.getpid(),)) as pool:
        return pool.map(_run_forked, range(len(launches)))


def _run_forked(index: int) -> str | None:
    work, launch = _FORKED[index]
    return work(launch)


def cuda_compiler_available() -> bool:
    """Whether this Triton can compile for NVIDIA GPUs here: its CUDA backend and a ptxas."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
    except ImportError:
        return False
    try:
        return Path(get_ptxas(SM90.arch).path).is_file()
    except RuntimeError:  # none bundled, and none at TRITON_PTXAS_PATH
        return False


def main() -> int:
    """Compile the representative launches of the configs in use; print each failure, and fail
    too where some kernel of the driver went uncompiled, so the check cannot pass vacuously."""
    if not cuda_compiler_available():
        print("no Triton CUDA backend with ptxas here")
        return NO_COMPILER
    kernels = driver_kernels()
    if not kernels:
        print("no compiled kernels to check: run with TRITON_INTERPRET unset")
        return 2
    start = time.monotonic()
    config = load_config().for_arch(SM90.arch)
    launches = list(representative_launches(plans_to_compile(config)))
    # One compile per core: each is a chain of compiler passes and a ptxas run.
    reasons = map_forked(check, launches, os.cpu_count() or 1)
    failures = 0
    for launch, reason in zip(launches, reasons, strict=True):
        if reason is not None:
            failures += 1
            print(f"FAIL {launch.where} {launch.kernel.__name__}: {reason}", flush=True)
    compiled = {launch.kernel.__name__ for launch in launches}
    missing = sorted(set(kernels) - compiled)
    took = time.monotonic() - start
    done = f"{len(launches)} launches of {len(compiled)} kernels compiled for sm_90"
    print(f"{done} in {took:.0f}s (Triton {triton.__version__})")
    print(f"{failures} failed")
    if missing:
        print(f"no plan launches {', '.join(missing)}")
    return 1 if failures or missing else 0


if __name__ == "__main__":
    sys.exit(main())
