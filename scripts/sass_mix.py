"""What one of the fast kernel's launches compiles to on sm_90, read on a machine without a GPU.

`python scripts/sass_mix.py --shape 640x512 --kernel qr_update_kernel [--nbp 64] [--nth 0]
[--configs FILE]` compiles the plan's launch the way aot.py does (Triton's own ptxas and
cuobjdump, which its wheel ships), then prints the registers, spills and shared memory ptxas
reports, and each loop of the SASS (a backward branch and its target) with the instructions in
its address range (both sides of any branch inside it) and their mix: roughly what a warp issues
per trip, so a change to a kernel's inner loop can be weighed before a device session. Run it
with TRITON_INTERPRET unset.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from qrsup.kernels.fast import aot
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.plan import make_plan
from triton.backends.nvidia.compiler import get_ptxas

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]+)\*/\s+(?:@!?U?P[0-9T] )?([A-Z0-9_]+)(.*?);", re.M)
BRANCH_TARGET = re.compile(r"0x([0-9a-f]+)")


def cuobjdump(cubin: bytes, option: str) -> str:
    """What the cuobjdump bundled beside Triton's ptxas prints for `cubin` under `option`
    (`-sass`, `-res-usage`)."""
    tool = Path(get_ptxas(aot.SM90.arch).path).parent / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        run = subprocess.run(
            [str(tool), option, f.name], capture_output=True, text=True, check=True
        )
    return run.stdout


def sass_of(cubin: bytes) -> list[tuple[int, str, str]]:
    """(address, opcode, operands) of every instruction in `cubin`."""
    text = cuobjdump(cubin, "-sass")
    return [(int(a, 16), op, rest) for a, op, rest in INSTRUCTION.findall(text)]


def batch_by_n(text: str) -> tuple[int, int]:
    """`8x2048` → (8, 2048), or a usage error that names the expected form."""
    try:
        batch, n = map(int, text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected BATCHxN, such as 640x512: {text!r}") from None
    if batch < 1 or n < 1:
        raise argparse.ArgumentTypeError(f"batch and n must be at least 1, got {text!r}")
    return batch, n


def loops(code: list[tuple[int, str, str]]) -> list[tuple[int, int]]:
    """(first, last) addresses of each backward branch's range, innermost ranges included."""
    spans = []
    for address, op, rest in code:
        target = BRANCH_TARGET.search(rest) if op == "BRA" else None
        if target and int(target.group(1), 16) < address:
            spans.append((int(target.group(1), 16), address))
    return spans


def ptxas_report(ptx: str, ptxas: str) -> str:
    """ptxas's own resource line for the kernel: registers, spills, shared memory."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "k.ptx"
        source.write_text(ptx)
        result = subprocess.run(
            [ptxas, "-arch=sm_90a", "-v", str(source), "-o", str(Path(tmp) / "k.cubin")],
            capture_output=True,
            text=True,
        )
    found = re.findall(r"Used \d+ registers[^\n]*|\d+ bytes spill stores[^\n]*", result.stderr)
    return "; ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", required=True, type=batch_by_n, help="BATCHxN")
    parser.add_argument("--kernel", required=True, help="a kernel driver.py launches")
    parser.add_argument("--nbp", type=int, default=None, help="only launches with this NBP")
    parser.add_argument("--nth", type=int, default=0, help="which matching launch")
    parser.add_argument("--configs", type=Path, default=None, help="a configs TOML file")
    args = parser.parse_args()
    if not aot.cuda_compiler_available():
        print("no Triton CUDA backend with ptxas here")
        raise SystemExit(aot.NO_COMPILER)
    batch, n = args.shape
    shape = load_config(args.configs).for_arch(aot.SM90.arch).for_shape(batch, n)
    plan = make_plan(batch, n, shape)
    if plan is None:
        raise SystemExit(f"{args.shape}: no plan (torch.geqrf answers)")
    matching = [
        launch
        for launch in aot.record_launches(plan)
        if launch.kernel.__name__ == args.kernel
        and (args.nbp is None or launch.kwargs.get("NBP") == args.nbp)
    ]
    if len(matching) <= args.nth:
        raise SystemExit(f"{args.shape} ({shape.name}): {len(matching)} such launches")
    launch = matching[args.nth]
    compiled = aot.compile_launch(launch)
    ptxas = get_ptxas(aot.SM90.arch).path
    constants = {k: v for k, v in launch.kwargs.items() if isinstance(v, (int, str, bool))}
    print(f"{args.kernel} in {args.shape} ({shape.name}): {constants}")
    print(f"  {ptxas_report(compiled.asm['ptx'], ptxas)}; shared {compiled.metadata.shared} bytes")
    code = sass_of(compiled.asm["cubin"])
    print(f"  {len(code)} instructions")
    for first, last in loops(code):
        body = [op for address, op, _ in code if first <= address <= last]
        mix = " ".join(
            f"{op}:{count}"
            for op, count in Counter(body).most_common(int(os.environ.get("SASS_MIX_TOP", "10")))
        )
        print(f"  loop {first:#06x}–{last:#06x}: {len(body)} instructions  {mix}")


if __name__ == "__main__":
    main()
