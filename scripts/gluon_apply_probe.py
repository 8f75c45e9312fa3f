"""Probe: the update's apply walk, C ← C − V·X at 3×TF32, written in Gluon, against the Triton one.

On the H200 the fused trailing update is bound by shared memory (Nsight Compute, 2026-12-04:
L1/shared 79% busy, DRAM 27%, issue slots 19%). Triton stages every 3×TF32 operand half through
shared memory, and converts V and C between layouts there too. Gluon lets the kernel load V
straight into the tensor cores' register operand layout and C into the accumulator's. Only X's
halves, loaded once a program, then live in shared memory. This probe tests whether that pays
before the fused update is rewritten.

Both kernels compute C ← C − V·X on one block's trailing columns of column-major H, as 640×512's
first update does (X: NBP × n per matrix, as the row-split update's W buffer). H's first NBP
columns hold V with its unit diagonal and zeros above written out, so Triton's kernel, which
supplies them, and the Gluon one, which reads them, compute the same product:
- `qr_update_apply_kernel` (update_split.py) is the Triton side, one program per tile;
- `apply_walk` here is the Gluon side, one program per column block walking down the rows.

`python scripts/gluon_apply_probe.py [--batch 640] [--n 512] [--bn 32]`. Without a GPU it
compiles both for sm_90 with Triton's own ptxas and prints each one's registers, spills and loop
mix. On a Hopper GPU it also checks both against a float64 product and times them. Needs a Triton
with Gluon (3.6 has it).
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter
from pathlib import Path

import torch
import triton
from qrsup.kernels.fast.update_split import qr_update_apply_kernel
from sass_mix import loops, ptxas_report, sass_of  # a sibling: scripts/ is on the path
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.compiler import get_ptxas
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma

NBP, BM = 64, 64
SM90 = GPUTarget("cuda", 90, 32)


@gluon.jit
def _split(x):
    """x = hi + lo, hi exact in TF32 (products.py's split_tf32)."""
    bits = x.to(gl.int32, bitcast=True)
    hi = ((bits + 0x1000) & -0x2000).to(gl.float32, bitcast=True)
    return hi, x - hi


@gluon.jit
def apply_walk(
    h_ptr, x_ptr, n, c_start, h_sb, h_sc, x_sb, x_sr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
):  # fmt: skip
    """Grid (batch, column blocks): C ← C − V·X on BN columns from c_start, rows [0, n); V is H's
    first NBP columns, stored whole."""
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 8]
    )
    v_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=1)
    x_layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    # tf32 operands in shared memory must be K-major: X is kept as Xᵀ and viewed transposed.
    x_shared: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BN, NBP], gl.float32)
    b = gl.program_id(0).to(gl.int64)
    c0 = c_start + gl.program_id(1) * BN
    xc = gl.arange(0, BN, layout=gl.SliceLayout(1, x_layout))
    xk = gl.arange(0, NBP, layout=gl.SliceLayout(0, x_layout))
    xt = gl.load(x_ptr + b * x_sb + xk[None, :] * x_sr + (c0 + xc)[:, None])  # Xᵀ, BN × NBP
    xt_hi, xt_lo = _split(xt)
    x_hi = gl.allocate_shared_memory(gl.float32, [BN, NBP], x_shared, xt_hi).permute((1, 0))
    x_lo = gl.allocate_shared_memory(gl.float32, [BN, NBP], x_shared, xt_lo).permute((1, 0))
    fence_async_shared()
    vr = gl.arange(0, BM, layout=gl.SliceLayout(1, v_layout))
    vk = gl.arange(0, NBP, layout=gl.SliceLayout(0, v_layout))
    cr = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    cc = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    h = h_ptr + b * h_sb
    for r0 in range(0, n, BM):
        v_rows = r0 + vr
        v = gl.load(h + v_rows[:, None] + vk[None, :] * h_sc, mask=v_rows[:, None] < n, other=0.0)
        v_hi, v_lo = _split(v)
        c_rows = r0 + cr
        c_at = h + c_rows[:, None] + (c0 + cc)[None, :] * h_sc
        c = gl.load(c_at, mask=c_rows[:, None] < n, other=0.0)
        # The small terms first, from zero, then added to C in IEEE (products.py's order).
        acc = gl.zeros([BM, BN], gl.float32, layout=acc_layout)
        acc = warpgroup_mma(v_lo, x_hi, acc, use_acc=False)
        acc = warpgroup_mma(v_hi, x_lo, acc)
        acc = warpgroup_mma(v_hi, x_hi, acc)
        gl.store(c_at, c - acc, mask=c_rows[:, None] < n)


def gluon_signature() -> tuple[dict[str, str], dict[tuple[int, ...], list]]:
    names = ("h_ptr", "x_ptr", "n", "c_start", "h_sb", "h_sc", "x_sb", "x_sr")
    signature = {name: ("*fp32" if name.endswith("_ptr") else "i32") for name in names}
    return signature | dict.fromkeys(("NBP", "BM", "BN"), "constexpr"), {
        (i,): [["tt.divisibility", 16]] for i in range(len(names))
    }


def compiled_mix(kernel: triton.compiler.CompiledKernel, label: str) -> None:
    ptxas = get_ptxas(SM90.arch).path
    print(f"{label}: {ptxas_report(kernel.asm['ptx'], ptxas)}; shared {kernel.metadata.shared} B")
    code = sass_of(kernel.asm["cubin"], Path(ptxas).parent)
    for first, last in loops(code):
        body = [op for address, op, _ in code if first <= address <= last]
        mix = " ".join(f"{op}:{count}" for op, count in Counter(body).most_common(14))
        print(f"  loop {first:#06x}–{last:#06x}: {len(body)} instructions  {mix}")


def compile_gluon(bn: int) -> triton.compiler.CompiledKernel:
    signature, attrs = gluon_signature()
    constexprs = {"NBP": NBP, "BM": BM, "BN": bn}
    source = GluonASTSource(apply_walk, signature, constexprs, attrs)
    return triton.compile(source, target=SM90, options={"num_warps": 4})


def problem(batch: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Column-major H with V (unit lower, zeros above) in its first NBP columns, and X."""
    h = torch.randn(batch, n, n, device="cuda").transpose(1, 2)  # column-major view
    v = torch.randn(batch, n, NBP, device="cuda").clamp(-1, 1).tril(-1)
    v[:, :NBP].diagonal(dim1=1, dim2=2).fill_(1.0)
    h[:, :, :NBP] = v
    return h, torch.randn(batch, NBP, n, device="cuda")


def expected(h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    v = h[:, :, :NBP].double()
    return h[:, :, NBP:].double() - v @ x[:, :, NBP:].double()


def run_gluon(h: torch.Tensor, x: torch.Tensor, bn: int) -> None:
    batch, n = h.shape[0], h.shape[1]
    grid = (batch, triton.cdiv(n - NBP, bn))
    apply_walk[grid](
        h, x, n, NBP, h.stride(0), h.stride(2), x.stride(0), x.stride(1), NBP, BM, bn, num_warps=4
    )


def run_triton(h: torch.Tensor, x: torch.Tensor, bn: int, amax: torch.Tensor) -> None:
    batch, n = h.shape[0], h.shape[1]
    tiles = triton.cdiv(n, BM) * triton.cdiv(n - NBP, bn)
    qr_update_apply_kernel[(batch * tiles,)](
        h, h, x, x, amax, n, 0, NBP, NBP, n, *h.stride(), *h.stride(), x.stride(0), x.stride(1),
        0, 0, NBP=NBP, BM=BM, BN=bn, PRECISION="tf32x3", APPLY_PRECISION="tf32x3", W_HAS_T=True,
        mirror_ptr=h, mirror_sb=0, mirror_sr=0, mirror_end=0, MIRROR=False, num_warps=4,
    )  # fmt: skip


def time_ms(launch, h: torch.Tensor, rounds: int = 20) -> float:
    """Median of `rounds` launches, each on a fresh copy of H (the update writes C in place)."""
    times = []
    for _ in range(rounds):
        fresh = h.clone()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch(fresh)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=640)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--bn", type=int, default=32, help="columns per program (32 or 64)")
    args = parser.parse_args()
    compiled_mix(compile_gluon(args.bn), f"Gluon apply walk, BN={args.bn}")
    if not (torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9):
        print("no Hopper GPU here: compiled only")
        return
    h, x = problem(args.batch, args.n)
    amax = torch.ones(args.batch, device="cuda")  # ordinary magnitudes: no rescaling
    want = expected(h, x)
    scale = want.abs().max().item()
    for label, launch in (
        ("Gluon walk", lambda m: run_gluon(m, x, args.bn)),
        ("Triton tiles", lambda m: run_triton(m, x, args.bn, amax)),
    ):
        out = h.clone()
        launch(out)
        torch.cuda.synchronize()
        error = (out[:, :, NBP:].double() - want).abs().max().item() / scale
        ms = time_ms(launch, h)
        print(f"{label:>12}: {ms:.3f} ms, max error {error:.2e} of max |C − V·X|")


if __name__ == "__main__":
    main()
