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

import torch
import triton
from qrsup.kernels.fast.update import qr_update_kernel
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
# All threads' shared-memory stores before the warpgroup's MMA reads them: Triton 3.6 (the H200
# image's) names the barrier thread_barrier, later versions barrier.
_barrier = getattr(gl, "thread_barrier", None) or gl.barrier


@gluon.constexpr_function
def _acc_layout(bn):
    """The accumulator's layout for BN columns: one warpgroup's wgmma, 64 rows."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, bn, 8])


@gluon.jit
def _split(x):
    """x = hi + lo, hi exact in TF32 (products.py's split_tf32)."""
    bits = x.to(gl.int32, bitcast=True)
    hi = ((bits + 0x1000) & -0x2000).to(gl.float32, bitcast=True)
    return hi, x - hi


@gluon.jit
def _mma3(a_hi, a_lo, b_hi, b_lo, zero):
    """a·b at 3×TF32, the small terms first, from zero (`zero` gives the shape and layout), to be
    added to a running sum in IEEE (products.py's order)."""
    acc = warpgroup_mma(a_lo, b_hi, zero, use_acc=False)
    acc = warpgroup_mma(a_hi, b_lo, acc)
    return warpgroup_mma(a_hi, b_hi, acc)


@gluon.jit
def _stage_kmajor(value, layout: gl.constexpr):
    """value (K × N, registers) as two shared-memory halves a wgmma can read as B: tf32 wants B
    K-major, so each half is stored transposed and viewed back."""
    hi, lo = _split(gl.permute(value, (1, 0)))
    hi_s = gl.allocate_shared_memory(gl.float32, hi.shape, layout, hi).permute((1, 0))
    lo_s = gl.allocate_shared_memory(gl.float32, lo.shape, layout, lo).permute((1, 0))
    fence_async_shared()
    return hi_s, lo_s


@gluon.jit
def _apply_rows(
    h, x_hi, x_lo, n, c0, h_sc, acc_layout: gl.constexpr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, AHEAD: gl.constexpr,
):  # fmt: skip
    """C ← C − V·X down rows [0, n) of one matrix's BN columns from c0: V loaded straight into the
    register operand layout, C into the accumulator's, X's halves already in shared memory. With
    AHEAD the next step's V and C are loaded before this step's products, so their latency
    overlaps them."""
    v_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=1)
    vr = gl.arange(0, BM, layout=gl.SliceLayout(1, v_layout))
    vk = gl.arange(0, NBP, layout=gl.SliceLayout(0, v_layout))
    cr = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    cc = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    v_at = h + vr[:, None] + vk[None, :] * h_sc
    c_at = h + cr[:, None] + (c0 + cc)[None, :] * h_sc
    v_next = gl.load(v_at, mask=vr[:, None] < n, other=0.0)
    c_next = gl.load(c_at, mask=cr[:, None] < n, other=0.0)
    for r0 in range(0, n, BM):
        v, c = v_next, c_next
        if AHEAD:
            v_next = gl.load(v_at + BM, mask=(r0 + BM + vr)[:, None] < n, other=0.0)
            c_next = gl.load(c_at + BM, mask=(r0 + BM + cr)[:, None] < n, other=0.0)
        v_hi, v_lo = _split(v)
        product = _mma3(v_hi, v_lo, x_hi, x_lo, gl.zeros([BM, BN], gl.float32, layout=acc_layout))
        gl.store(c_at, c - product, mask=(r0 + cr)[:, None] < n)
        v_at += BM
        c_at += BM
        if not AHEAD:
            v_next = gl.load(v_at, mask=(r0 + BM + vr)[:, None] < n, other=0.0)
            c_next = gl.load(c_at, mask=(r0 + BM + cr)[:, None] < n, other=0.0)


@gluon.jit
def apply_walk(
    h_ptr, x_ptr, n, c_start, h_sb, h_sc, x_sb, x_sr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, AHEAD: gl.constexpr,
    H_SC: gl.constexpr,
):  # fmt: skip
    """Grid (batch, column blocks): C ← C − V·X on BN columns from c_start, rows [0, n); V is H's
    first NBP columns, stored whole."""
    if H_SC:  # the column stride compiled in: no per-element address registers
        h_sc = H_SC
    acc_layout: gl.constexpr = _acc_layout(BN)
    x_layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    x_shared: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BN, NBP], gl.float32)
    b = gl.program_id(0).to(gl.int64)
    c0 = c_start + gl.program_id(1) * BN
    xk = gl.arange(0, NBP, layout=gl.SliceLayout(1, x_layout))
    xc = gl.arange(0, BN, layout=gl.SliceLayout(0, x_layout))
    x = gl.load(x_ptr + b * x_sb + xk[:, None] * x_sr + (c0 + xc)[None, :])  # NBP × BN
    x_hi, x_lo = _stage_kmajor(x, x_shared)
    _apply_rows(h_ptr + b * h_sb, x_hi, x_lo, n, c0, h_sc, acc_layout, NBP, BM, BN, AHEAD)


@gluon.jit
def _transformed_block(
    h, t, t_sr, n, c0, h_sc, strip, KEEP: gl.constexpr, acc_layout: gl.constexpr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, AHEAD: gl.constexpr,
):  # fmt: skip
    """X = Tᵀ·(Vᵀ·C) for BN columns from c0, as X's halves in shared memory. Walk 1 takes Vᵀ in
    registers and stages C's halves in shared memory a step; with KEEP each C tile also goes to
    `strip` (ROWS/BM × BN × BM), for a second walk that reads C there."""
    vt_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=1)
    ct_layout: gl.constexpr = gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0])
    c_shared: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BN, BM], gl.float32)
    x_shared: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BN, NBP], gl.float32)
    # Walk 1: W = Vᵀ·C (NBP × BN), each product from zero, added to W in IEEE.
    vk = gl.arange(0, NBP, layout=gl.SliceLayout(1, vt_layout))
    vr = gl.arange(0, BM, layout=gl.SliceLayout(0, vt_layout))
    cc = gl.arange(0, BN, layout=gl.SliceLayout(1, ct_layout))
    cr = gl.arange(0, BM, layout=gl.SliceLayout(0, ct_layout))
    c_hi_s = gl.allocate_shared_memory(gl.float32, [BN, BM], c_shared)
    c_lo_s = gl.allocate_shared_memory(gl.float32, [BN, BM], c_shared)
    w = gl.zeros([NBP, BN], gl.float32, layout=acc_layout)
    vt_at = h + vr[None, :] + vk[:, None] * h_sc
    ct_at = h + cr[None, :] + (c0 + cc)[:, None] * h_sc
    vt_next = gl.load(vt_at, mask=vr[None, :] < n, other=0.0)
    ct_next = gl.load(ct_at, mask=cr[None, :] < n, other=0.0)
    for r0 in range(0, n, BM):
        vt, ct = vt_next, ct_next
        vt_at += BM
        ct_at += BM
        if AHEAD:
            vt_next = gl.load(vt_at, mask=(r0 + BM + vr)[None, :] < n, other=0.0)
            ct_next = gl.load(ct_at, mask=(r0 + BM + cr)[None, :] < n, other=0.0)
        if KEEP:
            strip.index(r0 // BM).store(ct)
        vt_hi, vt_lo = _split(vt)
        ct_hi, ct_lo = _split(ct)
        _barrier()  # the last step's products have read the buffers
        c_hi_s.store(ct_hi)
        c_lo_s.store(ct_lo)
        fence_async_shared()
        _barrier()
        c_hi, c_lo = c_hi_s.permute((1, 0)), c_lo_s.permute((1, 0))
        w = w + _mma3(vt_hi, vt_lo, c_hi, c_lo, gl.zeros([NBP, BN], gl.float32, layout=acc_layout))
        if not AHEAD:
            vt_next = gl.load(vt_at, mask=(r0 + BM + vr)[None, :] < n, other=0.0)
            ct_next = gl.load(ct_at, mask=(r0 + BM + cr)[None, :] < n, other=0.0)
    # X = Tᵀ·W: Tᵀ in registers, W's halves in shared memory.
    tk = gl.arange(0, NBP, layout=gl.SliceLayout(1, vt_layout))
    tj = gl.arange(0, NBP, layout=gl.SliceLayout(0, vt_layout))
    tt = gl.load(t + tj[None, :] * t_sr + tk[:, None])  # Tᵀ
    tt_hi, tt_lo = _split(tt)
    w_hi, w_lo = _stage_kmajor(w, x_shared)
    x = _mma3(tt_hi, tt_lo, w_hi, w_lo, gl.zeros([NBP, BN], gl.float32, layout=acc_layout))
    return _stage_kmajor(x, x_shared)


@gluon.jit
def update_fused(
    h_ptr, t_ptr, n, c_start, h_sb, h_sc, t_sb, t_sr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, AHEAD: gl.constexpr,
    H_SC: gl.constexpr,
):  # fmt: skip
    """Grid (batch, column blocks): the fused update C ← C − V·(Tᵀ·(Vᵀ·C)) on BN columns from
    c_start, rows [0, n), V being H's first NBP columns stored whole. Walk 1 is
    `_transformed_block`'s; walk 2 is apply_walk's."""
    if H_SC:  # the column stride compiled in: no per-element address registers
        h_sc = H_SC
    acc_layout: gl.constexpr = _acc_layout(BN)
    b = gl.program_id(0).to(gl.int64)
    c0 = c_start + gl.program_id(1) * BN
    h = h_ptr + b * h_sb
    x_hi, x_lo = _transformed_block(
        h, t_ptr + b * t_sb, t_sr, n, c0, h_sc, None, False, acc_layout, NBP, BM, BN, AHEAD
    )
    _apply_rows(h, x_hi, x_lo, n, c0, h_sc, acc_layout, NBP, BM, BN, AHEAD)


@gluon.jit
def update_resident(
    h_ptr, t_ptr, n, c_start, h_sb, h_sc, t_sb, t_sr,
    NBP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, AHEAD: gl.constexpr,
    H_SC: gl.constexpr, ROWS: gl.constexpr,
):  # fmt: skip
    """`update_fused` with the program's strip of C (ROWS × BN, ROWS ≥ n) kept in shared memory
    from walk 1 to walk 2: walk 2 reads C there instead of from global memory, so C is read from
    DRAM once, not twice (a third of the update's traffic), at the price of ROWS × BN × 4 bytes
    of shared memory a program, which halves the programs an SM holds at BN = 64."""
    if H_SC:  # the column stride compiled in: no per-element address registers
        h_sc = H_SC
    acc_layout: gl.constexpr = _acc_layout(BN)
    v_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=1)
    strip_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [1, 0])
    b = gl.program_id(0).to(gl.int64)
    c0 = c_start + gl.program_id(1) * BN
    h = h_ptr + b * h_sb
    strip = gl.allocate_shared_memory(gl.float32, [ROWS // BM, BN, BM], strip_layout)
    x_hi, x_lo = _transformed_block(
        h, t_ptr + b * t_sb, t_sr, n, c0, h_sc, strip, True, acc_layout, NBP, BM, BN, AHEAD
    )
    # Walk 2: C ← C − V·X, C from the strip.
    ar = gl.arange(0, BM, layout=gl.SliceLayout(1, v_layout))
    ak = gl.arange(0, NBP, layout=gl.SliceLayout(0, v_layout))
    sr = gl.arange(0, BM, layout=gl.SliceLayout(1, acc_layout))
    sc = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    v_at = h + ar[:, None] + ak[None, :] * h_sc
    c_at = h + sr[:, None] + (c0 + sc)[None, :] * h_sc
    for r0 in range(0, n, BM):
        v = gl.load(v_at, mask=(r0 + ar)[:, None] < n, other=0.0)
        c = strip.index(r0 // BM).permute((1, 0)).load(acc_layout)
        v_hi, v_lo = _split(v)
        product = _mma3(v_hi, v_lo, x_hi, x_lo, gl.zeros([BM, BN], gl.float32, layout=acc_layout))
        gl.store(c_at, c - product, mask=(r0 + sr)[:, None] < n)
        v_at += BM
        c_at += BM


def compile_gluon(
    kernel: gluon.jit, bn: int, ahead: bool, stride: int, rows: int = 0
) -> triton.compiler.CompiledKernel:
    """Compile for sm_90 as the JIT would: pointers and integers divisible by 16 (`stride`: the
    column stride compiled in, 0 for none; `rows`: the resident strip's rows, where it has one)."""
    signature: dict[str, str] = {}
    attrs = {}
    for i, param in enumerate(kernel.params):
        if param.is_constexpr:
            signature[param.name] = "constexpr"
            continue
        signature[param.name] = "*fp32" if param.name.endswith("_ptr") else "i32"
        attrs[(i,)] = [["tt.divisibility", 16]]
    constants = {"NBP": NBP, "BM": BM, "BN": bn, "AHEAD": ahead, "H_SC": stride}
    if rows:
        constants["ROWS"] = rows
    source = GluonASTSource(kernel, signature, constants, attrs)
    return triton.compile(source, target=SM90, options={"num_warps": 4})


def compiled_mix(kernel: triton.compiler.CompiledKernel, label: str) -> None:
    ptxas = get_ptxas(SM90.arch).path
    print(f"{label}: {ptxas_report(kernel.asm['ptx'], ptxas)}; shared {kernel.metadata.shared} B")
    code = sass_of(kernel.asm["cubin"])
    for first, last in loops(code):
        body = [op for address, op, _ in code if first <= address <= last]
        mix = " ".join(f"{op}:{count}" for op, count in Counter(body).most_common(14))
        print(f"  loop {first:#06x}–{last:#06x}: {len(body)} instructions  {mix}")


def problem(batch: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Column-major H with V (unit lower, zeros above) in its first NBP columns, X for the apply
    walk, and an upper-triangular T for the fused update."""
    h = torch.randn(batch, n, n, device="cuda").transpose(1, 2)  # column-major view
    v = torch.randn(batch, n, NBP, device="cuda").clamp(-1, 1).tril(-1)
    v[:, :NBP].diagonal(dim1=1, dim2=2).fill_(1.0)
    h[:, :, :NBP] = v
    t = (0.1 * torch.randn(batch, NBP, NBP, device="cuda")).triu()
    t.diagonal(dim1=1, dim2=2).uniform_(1.0, 2.0)
    return h, torch.randn(batch, NBP, n, device="cuda"), t


def applied(h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """C − V·X in float64."""
    return h[:, :, NBP:].double() - h[:, :, :NBP].double() @ x[:, :, NBP:].double()


def updated(h: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """C − V·(Tᵀ·(Vᵀ·C)) in float64."""
    v, c = h[:, :, :NBP].double(), h[:, :, NBP:].double()
    return c - v @ (t.double().transpose(1, 2) @ (v.transpose(1, 2) @ c))


def run_gluon(h: torch.Tensor, x: torch.Tensor, bn: int, ahead: bool, stride: int) -> None:
    batch, n = h.shape[0], h.shape[1]
    apply_walk[(batch, triton.cdiv(n - NBP, bn))](
        h, x, n, NBP, h.stride(0), h.stride(2), x.stride(0), x.stride(1), NBP, BM, bn, ahead,
        stride, num_warps=4,
    )  # fmt: skip


def run_gluon_update(h: torch.Tensor, t: torch.Tensor, bn: int, ahead: bool, stride: int) -> None:
    batch, n = h.shape[0], h.shape[1]
    update_fused[(batch, triton.cdiv(n - NBP, bn))](
        h, t, n, NBP, h.stride(0), h.stride(2), t.stride(0), t.stride(1), NBP, BM, bn, ahead,
        stride, num_warps=4,
    )  # fmt: skip


def run_resident_update(
    h: torch.Tensor, t: torch.Tensor, bn: int, ahead: bool, stride: int
) -> None:
    batch, n = h.shape[0], h.shape[1]
    rows = triton.cdiv(n, BM) * BM
    update_resident[(batch, triton.cdiv(n - NBP, bn))](
        h, t, n, NBP, h.stride(0), h.stride(2), t.stride(0), t.stride(1), NBP, BM, bn, ahead,
        stride, rows, num_warps=4,
    )  # fmt: skip


def run_triton_update(
    h: torch.Tensor, t: torch.Tensor, bn: int, amax: torch.Tensor, live: torch.Tensor
) -> None:
    """The shipped fused update (update.py) on the same work, at medium's two stages."""
    batch, n = h.shape[0], h.shape[1]
    qr_update_kernel[(batch * triton.cdiv(n - NBP, bn),)](
        h, h, t, amax, live, n, 0, NBP, NBP, n, *h.stride(), *h.stride(), t.stride(0), t.stride(1),
        NBP=NBP, BM=BM, BN=bn, PRECISION="tf32x3", APPLY_PRECISION="tf32x3", KEEP="", ONCE="",
        mirror_ptr=h, mirror_sb=0, mirror_sr=0, mirror_end=0, MIRROR=False, APPLY_STAGES=None,
        num_warps=4, num_stages=2,
    )  # fmt: skip


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
    parser.add_argument(
        "--ahead", type=int, choices=(0, 1), default=1,
        help="1: the Gluon walks load the next step's V and C before this step's products",
    )  # fmt: skip
    parser.add_argument(
        "--fixed-stride", type=int, choices=(0, 1), default=1,
        help="1: the Gluon kernels are compiled for H's column stride (n), as per shape class",
    )  # fmt: skip
    args = parser.parse_args()
    bn, ahead, stride = args.bn, bool(args.ahead), args.n if args.fixed_stride else 0
    variant = f"BN={bn}, {'loads ahead' if ahead else 'loads in step'}"
    variant += f", {'stride compiled in' if stride else 'stride an argument'}"
    compiled_mix(compile_gluon(apply_walk, bn, ahead, stride), f"Gluon apply walk, {variant}")
    compiled_mix(compile_gluon(update_fused, bn, ahead, stride), f"Gluon fused update, {variant}")
    rows = triton.cdiv(args.n, BM) * BM
    compiled_mix(
        compile_gluon(update_resident, bn, ahead, stride, rows),
        f"Gluon fused update, C resident in shared memory, {variant}",
    )
    if not (torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9):
        print("no Hopper GPU here: compiled only")
        return
    h, x, t = problem(args.batch, args.n)
    amax = torch.ones(args.batch, device="cuda")  # ordinary magnitudes: no rescaling
    live = torch.full_like(amax, args.n)  # every column holds a nonzero
    for label, want, launch in (
        ("Gluon apply walk", applied(h, x), lambda m: run_gluon(m, x, bn, ahead, stride)),
        ("Triton apply tiles", applied(h, x), lambda m: run_triton(m, x, bn, amax)),
        ("Gluon fused update", updated(h, t), lambda m: run_gluon_update(m, t, bn, ahead, stride)),
        (
            "Gluon resident update",
            updated(h, t),
            lambda m: run_resident_update(m, t, bn, ahead, stride),
        ),
        ("Triton fused update", updated(h, t), lambda m: run_triton_update(m, t, bn, amax, live)),
    ):
        out = h.clone()
        launch(out)
        torch.cuda.synchronize()
        error = (out[:, :, NBP:].double() - want).abs().max().item() / want.abs().max().item()
        print(f"{label:>20}: {time_ms(launch, h):.3f} ms, max error {error:.2e} of the largest")


if __name__ == "__main__":
    main()
