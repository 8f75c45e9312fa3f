"""Plain-PyTorch blocked compact-WY Householder QR: the readable reference the fast kernels match.

A panel of `w` columns is factored one reflector at a time (LAPACK `geqr2`); its reflectors are
compressed into `I − V·T·Vᵀ` with `T⁻¹ = diag(1/τ) + strict_upper(VᵀV)`; the trailing columns are
updated with three matrix products, `C ← C − V·(Tᵀ·(Vᵀ·C))`.
"""

from __future__ import annotations

import torch


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


def invert_upper_triangular(u: torch.Tensor) -> torch.Tensor:
    """Inverse of a batch of upper-triangular matrices."""
    eye = torch.eye(u.shape[-1], dtype=u.dtype, device=u.device).expand_as(u)
    return torch.linalg.solve_triangular(u, eye, upper=True)


def apply_block_reflector_t(v: torch.Tensor, t: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """`(I − V·T·Vᵀ)ᵀ·C = C − V·(Tᵀ·(Vᵀ·C))`, the trailing update, as three batched products."""
    return c - v @ (t.mT @ (v.mT @ c))


def geqrf_blocked(a: torch.Tensor, panel_width: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """Compact Householder QR of a batch of square matrices, `torch.geqrf`'s contract."""
    if panel_width < 1:
        raise ValueError(f"panel_width must be ≥ 1, got {panel_width}")
    h = a.clone()
    batch, n, _ = h.shape
    tau = torch.zeros(batch, n, dtype=h.dtype, device=h.device)
    for k in range(0, n, panel_width):
        w = min(panel_width, n - k)
        h_panel, tau_panel = factor_panel(h[:, k:, k : k + w])
        h[:, k:, k : k + w] = h_panel
        tau[:, k : k + w] = tau_panel
        if k + w < n:
            v, t = build_t(unit_lower(h_panel), tau_panel)
            h[:, k:, k + w :] = apply_block_reflector_t(v, t, h[:, k:, k + w :])
    return h, tau
