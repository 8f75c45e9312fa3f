"""Would a Cholesky-QR panel pay at large n? A first look before building it into the kernel.

Issue 12's remaining specs are panel-bound: one matrix's 64 columns are factored by a chain of
reflectors, each a reduction over thousands of rows, with only a few programs per matrix busy
(8×2048, 2×4096). A Cholesky-QR2 panel (Gram product, Cholesky, triangular solve, twice) is a few
GEMM-shaped calls instead, and LAPACK's Householder reconstruction (`orhr_col`: an LU of Q₁ − S
without pivoting, S = diag(±1) chosen as it goes) gives back the compact-WY form geqrf returns:
V unit lower trapezoidal, T = −U·S·L₁⁻ᵀ, R = S·R_chol, τ = diag(T). A matrix whose Gram is not
positive definite (rank-deficient or too ill-conditioned for fp32) is flagged, per matrix, for
the Householder panel; the contest forbids a whole-batch decision.

`python scripts/cholqr_panel_bench.py [--shape 2x4096 ...] [--width 64 ...] [--repeats 20]` prints,
per shape and width: the shipped kernel's launches for its first block (panels, updates inside
the block, T join; the trailing update left out; as a replayed CUDA graph and eagerly) against
the Cholesky-QR panel of the same columns (eagerly, and once as a graph, last), then the panel's
accuracy on each case at three column offsets ("@offset: residual/orthogonality" in units of
m·ε over the matrices it did not flag, and how many it flagged), with torch's Cholesky and with
the one-program Cholesky and R⁻¹ (`chol_inverse_kernel`), then each stage's device time on its
own, the Gram split over row slabs among them. On a CPU it checks the algebra in float64 (and
under TRITON_INTERPRET=1 its kernels) and times nothing.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import torch
import triton
import triton.language as tl
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.driver import Buffers, prescale, run_op
from qrsup.kernels.fast.plan import Plan, UpdateOp, make_plan
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec

CASES = ("dense", "rowscale", "band", "clustered", "nearrank", "rankdef")
FP32_EPS = 2.0**-24


@triton.jit
def orhr_lu_kernel(q_ptr, lu_ptr, s_ptr, stride_b, stride_r, stride_c, B: tl.constexpr):
    """LU without pivoting of Q₁ − S, one program per matrix: S_jj = −sign of the pivot as it
    stands (sign 0 = +1), so every pivot of U is at least 1 in size. Stores L's multipliers below
    the diagonal and U on and above it (B × B, row-major), and S's diagonal."""
    b = tl.program_id(0)
    r = tl.arange(0, B)[:, None]
    c = tl.arange(0, B)[None, :]
    tile = tl.load(q_ptr + b.to(tl.int64) * stride_b + r * stride_r + c * stride_c)
    signs = tl.zeros((1, B), tl.float32)
    for j in range(B):
        at_col = (c == j).to(tl.float32)
        at_row = (r == j).to(tl.float32)
        row = tl.sum(tile * at_row, axis=0, keep_dims=True)  # 1 × B
        pivot = tl.sum(row * at_col, axis=1, keep_dims=True)  # 1 × 1
        s = tl.where(pivot >= 0.0, -1.0, 1.0)
        row = tl.where(c == j, pivot - s, row)
        column = tl.sum(tile * at_col, axis=1, keep_dims=True)  # B × 1
        multipliers = tl.where(r > j, column / (pivot - s), 0.0)
        tile = tile - multipliers * tl.where(c > j, row, 0.0)
        tile = tl.where((c == j) & (r > j), multipliers, tile)
        tile = tl.where((r == j) & (c >= j), row, tile)
        signs = tl.where(c == j, s, signs)
    out = lu_ptr + b.to(tl.int64) * B * B
    tl.store(out + r * B + c, tile)
    tl.store(s_ptr + b.to(tl.int64) * B + c, signs)


@triton.jit
def chol_inverse_kernel(g_ptr, r_ptr, rinv_ptr, bad_ptr, B: tl.constexpr):
    """Cholesky of a B × B Gram G = RᵀR, then R⁻¹, in one program per matrix: the chain that
    `torch.linalg.cholesky_ex` and a triangular solve over all m rows run as library calls.
    Stores R and R⁻¹ (upper, row-major) and flags a matrix whose pivot was not positive."""
    b = tl.program_id(0).to(tl.int64)
    r = tl.arange(0, B)[:, None]
    c = tl.arange(0, B)[None, :]
    gram = tl.load(g_ptr + b * B * B + r * B + c)
    upper = tl.zeros((B, B), tl.float32)
    smallest = tl.full((1, 1), float("inf"), tl.float32)
    for j in range(B):
        row = tl.sum(tl.where(r == j, gram, 0.0), axis=0, keep_dims=True)  # G[j, :], 1 × B
        pivot = tl.sum(tl.where(c == j, row, 0.0), axis=1, keep_dims=True)  # 1 × 1
        smallest = tl.minimum(smallest, pivot)
        root = tl.sqrt(tl.maximum(pivot, 1e-30))
        r_row = tl.where(c >= j, row / root, 0.0)  # R[j, :]
        upper = tl.where(r == j, r_row, upper)
        column = tl.sum(tl.where(c == j, gram, 0.0), axis=1, keep_dims=True)  # G[:, j], B × 1
        r_column = tl.where(r >= j, column / root, 0.0)  # R[j, :] as a column (G symmetric)
        gram = gram - r_column * r_row
    # L = Rᵀ; X = L⁻¹ row by row (forward substitution), so R⁻¹ = Xᵀ.
    inverse = tl.zeros((B, B), tl.float32)
    for j in range(B):
        l_row = tl.sum(tl.where(c == j, upper, 0.0), axis=1, keep_dims=True)  # L[j, k] over k
        diagonal = tl.sum(tl.where(r == j, l_row, 0.0), axis=0, keep_dims=True)  # 1 × 1
        reached = tl.sum(tl.where(r < j, l_row, 0.0) * inverse, axis=0, keep_dims=True)
        x_row = (tl.where(c == j, 1.0, 0.0) - reached) / diagonal
        inverse = tl.where(r == j, x_row, inverse)
    tl.store(r_ptr + b * B * B + r * B + c, upper)
    tl.store(rinv_ptr + b * B * B + c * B + r, inverse)
    tl.store(bad_ptr + b + tl.zeros((1, 1), tl.int64), (~(smallest > 0.0)).to(tl.int8))


def chol_inverse(
    gram: torch.Tensor, warps: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`chol_inverse_kernel` on a batch of B × B Grams: (R, R⁻¹, flagged). Three B × B tiles a
    program: by default 4 warps at B ≤ 64, 16 above."""
    batch, width = gram.shape[0], gram.shape[-1]
    r, r_inverse = (gram.new_empty(batch, width, width) for _ in range(2))
    bad = torch.empty(batch, dtype=torch.int8, device=gram.device)
    warps = warps or (4 if width <= 64 else 16)
    chol_inverse_kernel[(batch,)](gram.contiguous(), r, r_inverse, bad, B=width, num_warps=warps)
    return r, r_inverse, bad.bool()


def lu_by_steps(q1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`orhr_lu_kernel`'s steps in torch, in the block's own precision (the CPU's path)."""
    lu, signs = q1.clone(), torch.empty(q1.shape[:2], dtype=q1.dtype)
    for j in range(q1.shape[-1]):
        signs[:, j] = torch.where(lu[:, j, j] >= 0, -1.0, 1.0)
        lu[:, j, j] -= signs[:, j]
        lu[:, j + 1 :, j] /= lu[:, j : j + 1, j]
        lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j : j + 1] * lu[:, j : j + 1, j + 1 :]
    return lu, signs


def lu_by_kernel(q1: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`orhr_lu_kernel` on a batch of B × B float32 blocks: (L and U packed, S's diagonal)."""
    batch, width = q1.shape[0], q1.shape[-1]
    lu = torch.empty(batch, width, width, device=q1.device)
    signs = torch.empty(batch, width, device=q1.device)
    orhr_lu_kernel[(batch,)](q1, lu, signs, *q1.stride(), B=width, num_warps=8)
    return lu, signs


def cholqr2_panel(p: torch.Tensor, one_program: bool = False) -> dict[str, torch.Tensor]:
    """Householder QR of each batch × m × b panel through Cholesky-QR2 and reconstruction:
    V (unit lower trapezoidal), T, R (S·R_chol, geqrf's signs), τ and the per-matrix flag.
    With `one_program`, each Cholesky and R⁻¹ come from `chol_inverse_kernel` and Q = P·R⁻¹ is
    a GEMM, in place of torch's Cholesky and a triangular solve over all m rows."""
    width = p.shape[-1]
    q, r = p, None
    flagged = torch.zeros(p.shape[0], dtype=torch.bool, device=p.device)
    for _ in range(2):
        gram = q.mT @ q
        if one_program:
            r_step, r_inverse, bad = chol_inverse(gram)
            q = q @ r_inverse
        else:
            chol, info = torch.linalg.cholesky_ex(gram)
            r_step, bad = chol.mT, info != 0
            q = torch.linalg.solve_triangular(r_step, q, upper=True, left=False)
        flagged |= bad
        r = r_step if r is None else r_step @ r
    lu, signs = (lu_by_kernel if p.is_cuda else lu_by_steps)(q[:, :width, :])
    u = lu.triu()
    eye = torch.eye(width, dtype=p.dtype, device=p.device)
    l1 = lu.tril(-1) + eye
    l2 = torch.linalg.solve_triangular(u, q[:, width:, :], upper=True, left=False)
    t = torch.linalg.solve_triangular(
        l1.mT, -(u * signs[:, None, :]), upper=True, left=False, unitriangular=True
    )
    v = torch.cat([l1, l2], dim=1)
    flagged |= ~torch.isfinite(t).all(dim=(1, 2)) | ~torch.isfinite(v).all(dim=(1, 2))
    return {
        "v": v,
        "t": t,
        "r": r * signs[:, :, None],
        "tau": t.diagonal(dim1=1, dim2=2),
        "flagged": flagged,
    }


def panel_errors(p: torch.Tensor, out: dict[str, torch.Tensor]) -> tuple[float, float]:
    """Worst panel residual ‖P − Q·R‖/‖P‖ and orthogonality ‖QᵀQ − I‖ over unflagged matrices,
    in units of m·ε (fp32), with Q = (I − V·T·Vᵀ)[:, :b] formed in float64."""
    keep = ~out["flagged"]
    if not bool(keep.any()):
        return float("nan"), float("nan")
    v, t, r = (out[k][keep].double() for k in ("v", "t", "r"))
    m, width = v.shape[1], v.shape[2]
    q = -(v @ (t @ v[:, :width, :].mT))
    q[:, :width, :] += torch.eye(width, dtype=q.dtype, device=q.device)
    panel = p[keep].double()
    residual = torch.linalg.matrix_norm(panel - q @ r) / torch.linalg.matrix_norm(panel)
    eye = torch.eye(width, dtype=q.dtype, device=q.device)
    orthogonality = torch.linalg.matrix_norm(q.mT @ q - eye)
    unit = m * FP32_EPS
    return float(residual.max()) / unit, float(orthogonality.max()) / unit


def gram_by_slabs(p: torch.Tensor, slabs: int) -> torch.Tensor:
    """PᵀP as the sum of `slabs` row slabs' Grams: one batched GEMM `slabs` times as wide, then
    a sum, so a small batch of tall panels still fills the GPU."""
    batch, m, width = p.shape
    parts = p.reshape(batch * slabs, m // slabs, width)
    return (parts.mT @ parts).view(batch, slabs, width, width).sum(dim=1)


def stage_times(p: torch.Tensor, repeats: int) -> list[str]:
    """Device time of each stage of the panel, each replayed alone as a CUDA graph: where the
    whole panel's time goes, and what the one-program Cholesky saves."""
    width = p.shape[-1]
    gram = p.mT @ p
    r, r_inverse, _ = chol_inverse(gram)
    q = p @ r_inverse
    q1, q2 = q[:, :width, :].contiguous(), q[:, width:, :]
    lu, signs = lu_by_kernel(q1)
    u, l1 = lu.triu(), lu.tril(-1) + torch.eye(width, device=p.device)
    stages: dict[str, Callable[[], object]] = {
        "Gram P^T P (cuBLAS)": lambda: p.mT @ p,
        "Gram as 16 row slabs' (cuBLAS, then a sum)": lambda: gram_by_slabs(p, 16),
        "Gram as 64 row slabs' (cuBLAS, then a sum)": lambda: gram_by_slabs(p, 64),
        "torch.linalg.cholesky_ex": lambda: torch.linalg.cholesky_ex(gram),
        "triangular solve over m rows (torch)": lambda: torch.linalg.solve_triangular(
            r, p, upper=True, left=False
        ),
        "Cholesky and R^-1 in one program (Triton)": lambda: chol_inverse(gram),
        "the same on 2 warps": lambda: chol_inverse(gram, warps=2),
        "the same on 8 warps": lambda: chol_inverse(gram, warps=8),
        "P R^-1 (cuBLAS)": lambda: p @ r_inverse,
        "LU of Q1 - S (Triton)": lambda: lu_by_kernel(q1),
        "V2 = Q2 U^-1 (torch solve)": lambda: torch.linalg.solve_triangular(
            u, q2, upper=True, left=False
        ),
        "T = -U S L1^-T (torch solve)": lambda: torch.linalg.solve_triangular(
            l1.mT, -(u * signs[:, None, :]), upper=True, left=False, unitriangular=True
        ),
        "whole panel, torch's Cholesky": lambda: cholqr2_panel(p),
        "whole panel, one-program Cholesky": lambda: cholqr2_panel(p, one_program=True),
    }
    return [
        f"  {name}: {device_time_us(run, repeats, graph=True):.1f} us"
        for name, run in stages.items()
    ]


def first_block_ops(plan: Plan) -> list:
    """The plan's launches for its first block's columns, the trailing update left out."""
    width = plan.shape.block_width
    ops = []
    for op in plan.ops:
        if isinstance(op, UpdateOp) and op.c_start >= width:
            break
        ops.append(op)
    return ops


def device_time_us(run: Callable[[], None], repeats: int, graph: bool) -> float:
    """Median device time of one call: replayed as a CUDA graph, or launched eagerly (then the
    host's launching counts wherever the device waits for it)."""
    run()
    torch.cuda.synchronize()
    call = run
    if graph:
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            run()
        call = captured.replay
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def compare(batch: int, n: int, width: int, repeats: int) -> str:
    """The shipped first block against the Cholesky-QR panel, then the panel's accuracy on each
    case at three column offsets: the first panel, and panels across the middle and the
    three-quarter column, where clustered, rankdef and nearrank turn hard."""
    config = load_config().for_arch(90).for_shape(batch, n)
    plan = make_plan(batch, n, config)
    a = generate_input(Spec(batch, n, 1, "dense", 7), "cuda")
    out = Buffers.allocate(a, plan)
    prescale(a, plan, out)
    ops = first_block_ops(plan)

    def shipped() -> None:
        for op in ops:
            run_op(a, plan, op, out)

    panel = a[:, :, :width].contiguous()
    graphed, eager = (device_time_us(shipped, repeats, graph) for graph in (True, False))
    cholqr = device_time_us(lambda: cholqr2_panel(panel), repeats, graph=False)
    lines = [
        f"{batch}x{n} width {width}: shipped first block ({plan.shape.block_width} columns, "
        f"{len(ops)} launches) {graphed:.0f} us as a graph, {eager:.0f} us eager; "
        f"Cholesky-QR2 panel {cholqr:.0f} us eager"
    ]
    offsets = (0, n // 2 - width // 2, 3 * n // 4 - width // 2)
    matrices = {case: generate_input(Spec(batch, n, 1, case, 11), "cuda") for case in CASES}
    for one_program in (False, True):
        lines.append("  one-program Cholesky:" if one_program else "  torch's Cholesky:")
        for case, matrix in matrices.items():
            parts = []
            for offset in offsets:
                p = matrix[:, :, offset : offset + width].contiguous()
                result = cholqr2_panel(p, one_program)
                residual, orthogonality = panel_errors(p, result)
                flagged = int(result["flagged"].sum())
                parts.append(f"@{offset}: {residual:.2f}/{orthogonality:.2f} flagged {flagged}")
            lines.append(f"    {case:<10} " + "; ".join(parts))
    lines.append("  stages, each replayed alone as a graph:")
    lines += stage_times(panel, repeats)
    return "\n".join(lines)


def check_on_cpu() -> str:
    """The algebra against torch.geqrf in float64: the same R, τ and V up to rounding; under
    TRITON_INTERPRET=1, the kernel's LU against the same steps in torch too."""
    p = torch.randn(3, 96, 32, dtype=torch.float64)
    out = cholqr2_panel(p)
    h, tau = torch.geqrf(p)
    gaps = {
        "r": float((out["r"] - h[:, :32, :].triu()).abs().max()),
        "tau": float((out["tau"] - tau).abs().max()),
        "v": float((out["v"].tril(-1) - h.tril(-1)).abs().max()),
    }
    if triton.knobs.runtime.interpret:
        q1 = torch.linalg.qr(torch.randn(2, 32, 32)).Q.contiguous()
        (lu, signs), (lu_ref, signs_ref) = lu_by_kernel(q1), lu_by_steps(q1)
        gaps["kernel_lu"] = float((lu - lu_ref).abs().max())
        gaps["kernel_signs"] = float((signs - signs_ref).abs().max())
        p32 = torch.randn(2, 96, 32)
        gram = p32.mT @ p32
        r, r_inverse, bad = chol_inverse(gram)
        r_ref = torch.linalg.cholesky(gram).mT
        gaps["kernel_r"] = float((r - r_ref).abs().max() / r_ref.abs().max())
        eye = torch.eye(32)
        gaps["kernel_r_inverse"] = float((r @ r_inverse - eye).abs().max())
        gaps["kernel_flags_good"] = float(bad.sum())
        gram[1, 5, :] = gram[1, :, 5] = 0.0  # a zero column: not positive definite
        gaps["kernel_flags_singular"] = float(chol_inverse(gram)[2].sum())
    p = torch.randn(2, 256, 16, dtype=torch.float64)
    gaps["gram_by_slabs"] = float((gram_by_slabs(p, 16) - p.mT @ p).abs().max())
    return f"float64, 3×96×32, largest gaps: {gaps}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", default=[], help="BATCHxN (repeatable)")
    parser.add_argument("--width", type=int, action="append", default=[], help="panel width")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(check_on_cpu())
        return
    shapes = [tuple(map(int, shape.lower().split("x"))) for shape in args.shape]
    widths = args.width or [64, 128]
    for batch, n in shapes or [(2, 4096), (8, 2048)]:
        for width in widths:
            print(compare(batch, n, width, args.repeats), flush=True)
    # Last, since a capture that fails can leave the device unusable for the rest of a process.
    batch, n = (shapes or [(2, 4096)])[0]
    panel = generate_input(Spec(batch, n, 1, "dense", 7), "cuda")[:, :, : widths[0]].contiguous()
    graphed = device_time_us(lambda: cholqr2_panel(panel), args.repeats, graph=True)
    print(f"{batch}x{n} width {widths[0]}: Cholesky-QR2 panel {graphed:.0f} us as a graph")


if __name__ == "__main__":
    main()
