"""The checker accepts geqrf's factors on every case and names the right gate when it rejects."""

from __future__ import annotations

import pytest
import torch
from qrsup.kernels.checker import check_factors, compact_wy_q
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import CASES, Spec


def factored(case: str = "dense", n: int = 24, batch: int = 3):
    a = generate_input(Spec(batch, n, 2, case, seed=7))
    h, tau = torch.geqrf(a)
    return a, h, tau


@pytest.mark.parametrize("case", CASES)
def test_geqrf_output_passes_on_every_case(case):
    a, h, tau = factored(case)
    result = check_factors(a, h, tau)
    assert result.ok, result.reason
    assert result.diagnostics["factor_scaled_max"] < 20


def test_wrong_sign_on_a_row_of_r_fails_the_factor_gate():
    a, h, tau = factored()
    h = h.clone()
    h[1, 2, 2:] = -h[1, 2, 2:]
    result = check_factors(a, h, tau)
    assert (result.ok, result.gate) == (False, "factor")
    assert "matrix 1" in result.reason


def test_perturbed_tau_fails_a_gate():
    a, h, tau = factored()
    tau = tau.clone()
    tau[2, 3] *= 1.01
    result = check_factors(a, h, tau)
    assert not result.ok
    assert result.gate in ("factor", "orthogonality")
    assert "matrix 2" in result.reason


def test_non_orthogonal_q_fails_the_orthogonality_gate():
    _, h, tau = factored()
    tau = tau.clone()
    tau[1, 0] = 3.0  # no longer a reflector: Q is not orthogonal
    q = torch.linalg.householder_product(h, tau).double()
    r = torch.triu(
        torch.randn(h.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    )
    r = r + 4 * torch.eye(h.shape[-1], dtype=torch.float64)
    # A = Q⁻ᵀ·R makes QᵀA exactly triangular, so only orthogonality can fail.
    a = torch.linalg.solve(q.mT, r).float()
    h = torch.tril(h, -1) + r.float()
    result = check_factors(a, h, tau)
    assert (result.ok, result.gate) == (False, "orthogonality")
    assert "matrix 1" in result.reason and "‖QᵀQ − I‖₁" in result.reason


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_values_fail_the_finite_gate(bad):
    a, h, tau = factored()
    h = h.clone()
    h[2, 5, 1] = bad
    result = check_factors(a, h, tau)
    assert (result.ok, result.gate) == (False, "finite")
    assert "matrix 2" in result.reason


def test_wrong_shape_dtype_and_type_are_named():
    a, h, tau = factored()
    assert check_factors(a, h[:, :-1], tau).gate == "shape"
    assert check_factors(a, h, tau[:, :-1]).gate == "shape"
    assert check_factors(a, h.double(), tau).gate == "dtype"
    assert check_factors(a, h, tau.numpy()).gate == "type"


def test_wrong_device_is_named():
    a, h, tau = factored()
    meta = torch.empty_like(h, device="meta")
    result = check_factors(a, meta, tau)
    assert (result.ok, result.gate) == (False, "device")


def test_lower_triangle_garbage_in_r_breaks_the_factor_gate():
    # H's strict lower triangle is V, so "garbage below the diagonal of R" means R itself is
    # not triangular relative to Q: perturb V so QᵀA leaks below the diagonal.
    a, h, tau = factored()
    h = h.clone()
    h[0, 10, 3] += 0.5
    result = check_factors(a, h, tau)
    assert (result.ok, result.gate) == (False, "factor")
    assert result.diagnostics["lower_leakage_scaled_max"] > 20


def test_all_zero_matrix_is_accepted_with_tau_zero():
    a = torch.zeros(2, 5, 5)
    h, tau = torch.geqrf(a)
    assert check_factors(a, h, tau).ok


def test_the_re_checks_float64_q_is_householder_products_and_grades_alike():
    """Re-checks build Q from batched products; it must be the same Q (in float64), with
    zero-τ reflectors (rank-deficient columns) and a wrong output judged as the contest's."""
    torch.manual_seed(3)
    a = torch.randn(6, 40, 40, dtype=torch.float64)
    a[:, :, 7] = 0.0  # a zero column: LAPACK leaves τ = 0 there
    h, tau = torch.geqrf(a)
    assert bool((tau == 0).any())
    exact = torch.linalg.householder_product(h, tau)
    assert torch.allclose(compact_wy_q(h, tau), exact, rtol=0, atol=1e-12)
    a32, h32, tau32 = a.float(), h.float(), tau.float()
    for output, right in ((h32, True), (h32 * 1.01, False)):
        fast = check_factors(a32, output, tau32, exact_q=False)
        contest = check_factors(a32, output, tau32)
        assert contest.ok is right
        assert (fast.ok, fast.gate) == (contest.ok, contest.gate)
        scaled = "factor_scaled_max"
        gap = abs(fast.diagnostics[scaled] - contest.diagnostics[scaled])
        assert gap < 0.05 + 0.01 * contest.diagnostics[scaled]
