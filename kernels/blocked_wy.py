"""Plain-PyTorch blocked compact-WY Householder QR: the readable reference the fast kernels match.

A panel of `w` columns is factored one reflector at a time (LAPACK `geqr2`); its reflectors are
compressed into `I − V·T·Vᵀ` with `T⁻¹ = diag(1/τ) + strict_upper(VᵀV)`; the trailing columns are
updated with three matrix products, `C ← C − V·(Tᵀ·(Vᵀ·C))`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from qrsup.kernels.phases import phase

PANEL_IMPLS = ("unblocked", "recursive")
T_METHODS = ("solve", "recurrence")


@dataclass(frozen=True)
class BlockedConfig:
    """The knobs of the blocked algorithm; every combination is correct, only speed differs.

    panel_width: columns per panel. panel_impl: `unblocked` (one reflector at a time) or
    `recursive` (Elmroth–Gustavson halving down to 8 columns). t_method: T by a triangular solve of
    T⁻¹ or by LAPACK's column recurrence. update_chunk: trailing columns per update product
    (0 = all at once).
    """

    panel_width: int = 32
    panel_impl: str = "unblocked"
    t_method: str = "solve"
    update_chunk: int = 0

    def __post_init__(self) -> None:
        if self.panel_width < 1:
            raise ValueError(f"panel_width must be ≥ 1, got {self.panel_width}")
        if self.panel_impl not in PANEL_IMPLS:
            raise ValueError(f"panel_impl must be one of {PANEL_IMPLS}, got {self.panel_impl!r}")
        if self.t_method not in T_METHODS:
            raise ValueError(f"t_method must be one of {T_METHODS}, got {self.t_method!r}")
        if self.update_chunk < 0:
            raise ValueError(f"update_chunk must be ≥ 0, got {self.update_chunk}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def householder_reflector(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LAPACK `larfg` for a batch of columns `x` (batch × m): returns (v_tail, tau, beta).

    beta = −sign(alpha)·‖x‖ with sign(0) = +1, tau = (beta − alpha)/beta, v = x_tail/(alpha − beta);
    a zero tail gives tau = 0 and beta = alpha, never NaN.
    """
    alpha = x[:, 0]
    tail = x[:, 1:]
    tail_norm = torch.linalg.vector_norm(tail, dim=1)
    sign = torch.where(alpha >= 0, 1.0, -1.0).to(x.dtype)
    beta = -sign * torch.hypot(alpha, tail_norm)
    reflect = tail_norm > 0
    safe_beta = torch.where(reflect, beta, torch.ones_like(beta))
    denom = torch.where(reflect, alpha - beta, torch.ones_like(beta))
    tau = torch.where(reflect, (beta - alpha) / safe_beta, torch.zeros_like(beta))
    v_tail = torch.where(reflect[:, None], tail / denom[:, None], torch.zeros_like(tail))
    beta = torch.where(reflect, beta, alpha)
    return v_tail, tau, beta


def factor_panel(panel: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Unblocked Householder QR of a tall panel (batch × m × w) in compact form: (H, tau)."""
    h = panel.clone()
    batch, m, w = h.shape
    tau = torch.zeros(batch, w, dtype=h.dtype, device=h.device)
    for j in range(min(m, w)):
        v_tail, tau_j, beta = householder_reflector(h[:, j:, j])
        tau[:, j] = tau_j
        h[:, j, j] = beta
        h[:, j + 1 :, j] = v_tail
        if j + 1 < w:
            v = torch.cat([torch.ones_like(beta)[:, None], v_tail], dim=1)  # batch × (m−j)
            rest = h[:, j:, j + 1 :]
            proj = torch.einsum("bm,bmk->bk", v, rest)
            rest -= tau_j[:, None, None] * v[:, :, None] * proj[:, None, :]
    return h, tau


def unit_lower(h_panel: torch.Tensor) -> torch.Tensor:
    """V of a factored panel: its strictly-lower part with the implied unit diagonal."""
    m, w = h_panel.shape[-2:]
    v = torch.tril(h_panel, diagonal=-1)
    eye = torch.eye(m, w, dtype=h_panel.dtype, device=h_panel.device)
    return v + eye


def build_t(v: torch.Tensor, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(V', T) with `I − V'·T·V'ᵀ = H₁⋯H_w`; reflectors with tau = 0 are dropped from V'.

    Zeroing a dropped column of V and giving it a unit diagonal in T⁻¹ leaves T's other entries
    untouched, so no 1/0 is ever formed.
    """
    keep = tau != 0
    v = v * keep[:, None, :].to(v.dtype)
    inv_diag = torch.where(keep, 1.0 / torch.where(keep, tau, torch.ones_like(tau)), 1.0)
    gram = v.mT @ v
    t_inv = torch.triu(gram, diagonal=1) + torch.diag_embed(inv_diag)
    return v, invert_upper_triangular(t_inv)


def build_t_recurrence(v: torch.Tensor, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """T column by column, LAPACK `larft`: T[:i, i] = −τᵢ·T[:i, :i]·(V[:, :i]ᵀ·vᵢ), T[i, i] = τᵢ.

    A reflector with τ = 0 gets a zero row and column, so it drops out without special cases.
    """
    batch, _, w = v.shape
    t = torch.zeros(batch, w, w, dtype=v.dtype, device=v.device)
    gram = v.mT @ v
    for i in range(w):
        if i > 0:
            t[:, :i, i] = -tau[:, i, None] * (t[:, :i, :i] @ gram[:, :i, i, None]).squeeze(-1)
        t[:, i, i] = tau[:, i]
    return v, t


def invert_upper_triangular(u: torch.Tensor) -> torch.Tensor:
    """Inverse of a batch of upper-triangular matrices."""
    eye = torch.eye(u.shape[-1], dtype=u.dtype, device=u.device).expand_as(u)
    return torch.linalg.solve_triangular(u, eye, upper=True)


def apply_block_reflector_t(v: torch.Tensor, t: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """`(I − V·T·Vᵀ)ᵀ·C = C − V·(Tᵀ·(Vᵀ·C))`, the trailing update, as three batched products."""
    return c - v @ (t.mT @ (v.mT @ c))


def factor_panel_recursive(panel: torch.Tensor, leaf: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """Elmroth–Gustavson: factor the left half, update the right half, factor what remains."""
    w = panel.shape[-1]
    if w <= leaf:
        return factor_panel(panel)
    half = w // 2
    h = panel.clone()
    left_h, left_tau = factor_panel_recursive(h[:, :, :half], leaf)
    h[:, :, :half] = left_h
    v, t = build_t(unit_lower(left_h), left_tau)
    h[:, :, half:] = apply_block_reflector_t(v, t, h[:, :, half:])
    right_h, right_tau = factor_panel_recursive(h[:, half:, half:], leaf)
    h[:, half:, half:] = right_h
    return h, torch.cat([left_tau, right_tau], dim=1)


def geqrf_blocked(
    a: torch.Tensor, config: BlockedConfig | None = None, panel_width: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Compact Householder QR of a batch of square matrices, `torch.geqrf`'s contract."""
    config = config or BlockedConfig()
    if panel_width is not None:
        config = BlockedConfig(**{**config.to_dict(), "panel_width": panel_width})
    factor = factor_panel_recursive if config.panel_impl == "recursive" else factor_panel
    make_t = build_t_recurrence if config.t_method == "recurrence" else build_t
    h = a.clone()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for k in range(0, n, config.panel_width):
        w = min(config.panel_width, n - k)
        with phase("panel"):
            h_panel, tau_panel = factor(h[:, k:, k : k + w])
            h[:, k:, k : k + w] = h_panel
            tau[:, k : k + w] = tau_panel
        if k + w < n:
            with phase("T"):
                v, t = make_t(unit_lower(h_panel), tau_panel)
            with phase("trailing"):
                step = config.update_chunk or (n - k - w)
                for c in range(k + w, n, step):
                    cols = slice(c, min(n, c + step))
                    h[:, k:, cols] = apply_block_reflector_t(v, t, h[:, k:, cols])
    return h, tau
