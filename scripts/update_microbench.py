"""Time one trailing update of the fast geqrf alone, across tiles and precisions, on a GPU.

At 640×512 the block's trailing update (update.py, 64 reflectors) is over half of the
factorization, at a small share of the H200's 3×TF32 rate. This times the first block's update
(the largest: 512 rows, 448 columns per matrix) for each tile and precision choice, beside
cuBLAS's batched GEMMs for the same three products at IEEE and TF32, and prints each one's
rate against the byte and FLOP counts, so a change to the kernel can be judged on its own.

Both walks contract against one storage order: Vᵀ·C over rows, V·W over reflectors. Triton's
3×TF32 tensor-core products want each operand contiguous along the contracted dimension, which
row-major storage gives V·W and column-major storage gives Vᵀ·C. `--layouts row,col` times each
choice on both (column-major: the same kernel on transposed views), and `--first-walk` adds the
first walk alone (qr_update_tw_kernel, which stores Tᵀ·Vᵀ·C), to see which walk a layout helps.

`python scripts/update_microbench.py [--batch 640] [--n 512] [--nb 64] [--only tf32x3,64,64,4,2]
[--layouts row,col] [--first-walk]` (`--only PRECISION,BM,BN,WARPS,STAGES` times that one Triton
choice alone, e.g. under ncu), each Triton choice with and without the L2 policies of
`update_l2_hints` (row-major only).
"""

from __future__ import annotations

import argparse
import functools
import itertools
from collections.abc import Callable

import torch
import triton
from qrsup.kernels.fast.driver import l2_hints, mirror_kwargs
from qrsup.kernels.fast.library_update import cublas_precision
from qrsup.kernels.fast.update import qr_update_kernel, qr_update_tw_kernel

REPS = 20
PRECISIONS = ("tf32x3", "ieee", "tf32")


def time_ms(launch: Callable[[], None]) -> float:
    """Median device time of one launch, after a warm-up that also compiles."""
    launch()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=640)
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--nb", type=int, default=64)
    parser.add_argument("--only", default="", help="PRECISION,BM,BN,WARPS,STAGES")
    parser.add_argument("--layouts", default="row", help="storage orders: row, col or row,col")
    parser.add_argument("--first-walk", action="store_true", help="also time Tᵀ·Vᵀ·C alone")
    args = parser.parse_args()
    batch, n, nb = args.batch, args.n, args.nb
    a = torch.randn(batch, n, n, device="cuda")
    h = torch.randn(batch, n, n, device="cuda") * 0.1
    t = torch.randn(batch, nb, nb, device="cuda").triu() * 0.1
    amax = torch.ones(batch, device="cuda")
    live = torch.full_like(amax, n)  # every column holds a nonzero
    cols = n - nb
    flops = batch * (4 * nb * n * cols + 2 * nb * nb * cols)
    moved = batch * n * cols * 4 * 2  # C read once and written once
    print(f"{batch}x{n}, {nb} reflectors on {cols} columns: {flops / 1e9:.1f} GFLOP, "
          f"{moved / 1e9:.2f} GB at one read and one write of C")  # fmt: skip

    def report(label: str, ms: float) -> None:
        rate = flops / ms / 1e9
        print(f"  {label:<52} {ms:8.3f} ms {rate:7.1f} TFLOP/s {moved / ms / 1e9:6.2f} TB/s")

    v = h[:, :, :nb].tril(-1)
    c = h[:, :, nb:].clone()
    for precision in () if args.only else ("ieee", "tf32"):

        def library(precision: str = precision) -> None:
            with cublas_precision(precision):
                w = torch.bmm(t.mT, torch.bmm(v.mT, c))
                c.baddbmm_(v, w, alpha=-1.0)

        report(f"cuBLAS bmm ×3, {precision}", time_ms(library))

    choices = itertools.product(PRECISIONS, (32, 64, 128), (32, 64, 128), (4, 8), (1, 2, 3))
    if args.only:
        precision, *sizes = args.only.split(",")
        choices = [(precision, *map(int, sizes))]
    layouts = {"row": (a, h), "col": (a.mT.contiguous().mT, h.mT.contiguous().mT)}
    w = torch.empty(batch, nb, n, device="cuda")
    for precision, bm, bn, warps, stages in choices:
        # Eight warps paid only with 128-row tiles; the other precisions are references.
        reference = precision != "tf32x3" and (warps, stages) != (4, 2)
        if not args.only and (reference or (warps == 8 and bm != 128)):
            continue
        tiles = dict(NBP=nb, BM=bm, BN=bn, num_warps=warps, num_stages=stages)
        label = f"Triton {precision} BM={bm} BN={bn} warps={warps} stages={stages}"
        for layout in args.layouts.split(","):
            src, dst = layouts[layout]
            span = (n, 0, nb, nb, n, *src.stride(), *dst.stride(), t.stride(0), t.stride(1))
            grid = (batch * triton.cdiv(cols, bn),)
            for hints in (False, True) if layout == "row" else (False,):
                kwargs = tiles | dict(PRECISION=precision, APPLY_PRECISION=precision)
                update = functools.partial(
                    qr_update_kernel[grid],
                    src,
                    dst,
                    t,
                    amax,
                    live,
                    *span,
                    **kwargs,
                    **l2_hints(hints),
                    **mirror_kwargs(dst),
                    APPLY_STAGES=None,
                )
                attempt(f"{label} {layout}{' L2 hints' if hints else ''}", update, report)
            if args.first_walk:
                first_walk = functools.partial(
                    qr_update_tw_kernel[grid], src, dst, t, w, amax, *span, w.stride(0),
                    w.stride(1), **tiles, PRECISION=precision, KEEP="",
                )  # fmt: skip
                attempt(f"{label} {layout} first walk", first_walk, report)


def attempt(label: str, launch: Callable[[], None], report: Callable[[str, float], None]) -> None:
    """Time one launch; a tile that does not fit is reported and skipped."""
    try:
        report(label, time_ms(launch))
    except Exception as error:
        print(f"  {label:<52} failed: {type(error).__name__}: {str(error)[:80]}")


if __name__ == "__main__":
    main()
