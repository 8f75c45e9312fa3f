"""The warp path under compute-sanitizer: odd n, batch 1 and 1000, transposed and offset input.

`compute-sanitizer --tool memcheck python scripts/warp_memcheck.py` (on a GPU): each shape is
factored by the warp path and checked by the contest's gates; the sanitizer reports any access
outside A, H, τ or |A|max.
"""

import dataclasses

import torch
from qrsup.kernels.checker import check_factors
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.fast.geqrf import FastGeqrf

SHAPES = ((1, 1), (1000, 5), (3, 17), (20, 32), (7, 31))


def main() -> None:
    config = load_config()
    shapes = tuple(dataclasses.replace(shape, path="warp") for shape in config.shapes)
    solver = FastGeqrf(config.with_table(config.arch, shapes))
    for batch, n in SHAPES:
        base = torch.randn(batch * n * n + 1, device="cuda")
        for label, a in (
            ("contiguous", base[: batch * n * n].view(batch, n, n)),
            ("transposed", base[: batch * n * n].view(batch, n, n).mT),
            ("offset", base[1:].view(batch, n, n)),
        ):
            h, tau = solver(a)
            torch.cuda.synchronize()
            result = check_factors(a, h, tau)
            print(f"{batch}x{n} {label}: {'pass' if result.ok else result.reason}")


if __name__ == "__main__":
    main()
