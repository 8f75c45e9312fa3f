"""How many of each fast-kernel launch's programs an sm_90 GPU runs at once, read without a GPU.

`python scripts/launch_resources.py [--shape 640x512 ...] [--configs FILE]` compiles every
distinct launch of each shape's plan (as aot.py does: Triton's own ptxas and cuobjdump), reads
its registers, stack (local memory: spills and indexed arrays) and shared memory, and prints how
many programs share an SM, which resource holds them there, and in how many rounds the launch's
grid runs on an H100/H200's 132 SMs. A latency-bound launch whose last round is mostly empty, or
that uses stack, is a lead to weigh before a device session: the row-split join's spills and the
640 × 512 panels' two rounds were found this way.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from qrsup.kernels.fast import aot
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.plan import make_plan
from qrsup.kernels.suites import get_suite
from sass_mix import batch_by_n, cuobjdump  # a sibling: scripts/ is on the path

SMS = 132
REGISTERS_PER_SM = 65536
REGISTER_UNIT = 256  # registers are allocated to a warp in units of this many
SHARED_PER_SM = 233472  # 228 KiB
SHARED_RESERVED = 1024  # per program, by the system
WARPS_PER_SM = 64
PROGRAMS_PER_SM = 32


def resources(cubin: bytes) -> dict[str, int]:
    """REG, STACK and the other counts cuobjdump gives for the cubin's one kernel."""
    last = cuobjdump(cubin, "-res-usage").strip().splitlines()[-1]
    return {key: int(value) for key, value in (item.split(":") for item in last.split())}


def per_sm(registers: int, warps: int, shared: int) -> tuple[int, str]:
    """Programs one SM holds at once, and what holds it there."""
    per_warp = math.ceil(registers * 32 / REGISTER_UNIT) * REGISTER_UNIT
    limits = {
        "registers": REGISTERS_PER_SM // (per_warp * warps),
        "shared": SHARED_PER_SM // (shared + SHARED_RESERVED),
        "warps": WARPS_PER_SM // warps,
        "programs": PROGRAMS_PER_SM,
    }
    limiter = min(limits, key=limits.__getitem__)
    return limits[limiter], limiter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shape", action="append", default=[], type=batch_by_n, help="BATCHxN (repeatable)"
    )
    parser.add_argument("--configs", type=Path, default=None, help="a configs TOML file")
    args = parser.parse_args()
    if not aot.cuda_compiler_available():
        print("no Triton CUDA backend with ptxas here")
        raise SystemExit(aot.NO_COMPILER)
    config = load_config(args.configs).for_arch(aot.SM90.arch)
    shapes = args.shape or list(
        dict.fromkeys((spec.batch, spec.n) for spec in get_suite("qr_v2").benchmarks)
    )
    for batch, n in shapes:
        shape = config.for_shape(batch, n)
        plan = make_plan(batch, n, shape)
        if plan is None:
            print(f"{batch}x{n}: no plan (torch.geqrf answers)")
            continue
        print(f"{batch}x{n} ({shape.name}):")
        grids: dict[tuple[str, str], list[int]] = {}
        first: dict[tuple[str, str], aot.Launch] = {}
        for launch in aot.record_launches(plan):
            grids.setdefault(launch.key(), []).append(launch.programs)
            first.setdefault(launch.key(), launch)
        for key, programs in grids.items():
            launch = first[key]
            compiled = aot.compile_launch(launch)
            use = resources(compiled.asm["cubin"])
            warps = compiled.metadata.num_warps
            fit, limiter = per_sm(use["REG"], warps, compiled.metadata.shared)
            rounds = sorted({math.ceil(p / (fit * SMS)) for p in programs})
            print(
                f"  {launch.kernel.__name__:<26} x{len(programs):<4} programs "
                f"{min(programs)}–{max(programs)}  {warps} warps  {use['REG']} registers  "
                f"stack {use['STACK']} B  shared {compiled.metadata.shared} B  "
                f"{fit} an SM ({limiter})  rounds {rounds[0]}–{rounds[-1]}",
                flush=True,
            )


if __name__ == "__main__":
    main()
