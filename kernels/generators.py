"""Input generators for the nine qr_v2 cases, deterministic for a seed on a given device."""

from __future__ import annotations

from collections.abc import Callable

import torch
from qrsup.kernels.suites import Spec

EPS32 = 2.0**-23

# Cases a `mixed` batch draws from, with the contract's 6:1:1:1:1:1:1 weights.
MIXED_CHOICES = ("dense", "rankdef", "nearrank", "clustered", "band", "rowscale", "nearcollinear")
MIXED_WEIGHTS = (6.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)

Builder = Callable[[torch.Tensor, torch.Generator, float], torch.Tensor]


def generate_input(spec: Spec, device: str | torch.device = "cpu") -> torch.Tensor:
    """The spec's `batch × n × n` float32 input, from a generator seeded with `spec.seed`."""
    device = torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(spec.seed)
    base = torch.randn(spec.batch, spec.n, spec.n, generator=gen, device=device)
    if spec.case == "mixed":
        return _mixed(base, gen, spec.cond)
    return BUILDERS[spec.case](base, gen, spec.cond)


def mixed_assignment(batch: int, gen: torch.Generator, device: torch.device) -> list[str]:
    """Per-matrix cases for a mixed batch; with batch ≥ 2, at least one dense and one not."""
    weights = torch.tensor(MIXED_WEIGHTS, device=device)
    picks = torch.multinomial(weights, batch, replacement=True, generator=gen).tolist()
    cases = [MIXED_CHOICES[i] for i in picks]
    if batch >= 2:
        positions = torch.randperm(batch, generator=gen, device=device).tolist()
        if all(c == "dense" for c in cases):
            other = int(torch.randint(1, len(MIXED_CHOICES), (1,), generator=gen, device=device))
            cases[positions[0]] = MIXED_CHOICES[other]
        elif all(c != "dense" for c in cases):
            cases[positions[0]] = "dense"
    return cases


def _mixed(base: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    """Each case's matrices built together, in MIXED_CHOICES order (so the draws are the same
    for a seed), as the contest's reference does. Built one matrix at a time, a 640 × 512 batch
    took about 60 ms of launches whose cost varied with the seed's mix; that spread widened the
    judge's timing allowance for the spec by as much."""
    cases = mixed_assignment(base.shape[0], gen, base.device)
    out = torch.empty_like(base)
    for case in MIXED_CHOICES:
        rows = [i for i, drawn in enumerate(cases) if drawn == case]
        if rows:
            index = torch.tensor(rows, device=base.device)
            out[index] = BUILDERS[case](base[index], gen, cond)
    return out


def _column_scales(n: int, cond: float, device: torch.device) -> torch.Tensor:
    return torch.logspace(0, -cond, n, device=device, dtype=torch.float32)


def _scale_columns(a: torch.Tensor, cond: float) -> torch.Tensor:
    return a * _column_scales(a.shape[-1], cond, a.device)[None, None, :]


def _dense(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    return _scale_columns(a, cond)


def _upper(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    n = a.shape[-1]
    a = torch.triu(a)
    diag = torch.linspace(1, 0.25, n, device=a.device, dtype=a.dtype)
    a = a + torch.diag_embed(diag.expand(a.shape[0], n))
    return _scale_columns(a, cond)


def _rankdef(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    a = a.clone()
    a[..., 3 * a.shape[-1] // 4 :] = 0.0
    return _scale_columns(a, cond)


def _nearrank(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    n = a.shape[-1]
    start = 3 * n // 4
    width = n - start
    a = a.clone()
    noise = torch.randn(a.shape[0], n, width, generator=gen, device=a.device)
    a[..., start:] = a[..., :width] + 1e-5 * noise
    return _scale_columns(a, cond)


def _clustered(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    n = a.shape[-1]
    scales = torch.ones(n, device=a.device, dtype=a.dtype)
    scales[n // 2 :] = 4 * EPS32
    if n >= 8:
        scales[n // 2 - 2 : n // 2 + 2] = EPS32**0.5
    return a * scales[None, None, :]


def _band(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    n = a.shape[-1]
    width = max(2, min(32, n // 32))
    idx = torch.arange(n, device=a.device)
    mask = (idx[:, None] - idx[None, :]).abs() <= width
    a = a * mask
    diag = torch.linspace(1, 0.5, n, device=a.device, dtype=a.dtype)
    a = a + torch.diag_embed(diag.expand(a.shape[0], n))
    return _scale_columns(a, cond)


def _nearcollinear(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    shared = torch.randn(a.shape[0], a.shape[-1], 1, generator=gen, device=a.device)
    return _scale_columns(shared + 1e-4 * a, cond)


def _rowscale(a: torch.Tensor, gen: torch.Generator, cond: float) -> torch.Tensor:
    rows = torch.logspace(0, -max(cond, 4.0), a.shape[-1], device=a.device, dtype=a.dtype)
    return a * rows[None, :, None]


BUILDERS: dict[str, Builder] = {
    "dense": _dense,
    "upper": _upper,
    "rankdef": _rankdef,
    "nearrank": _nearrank,
    "clustered": _clustered,
    "band": _band,
    "nearcollinear": _nearcollinear,
    "rowscale": _rowscale,
}
