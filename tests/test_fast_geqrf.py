"""The fast geqrf: gates pass on every case and awkward size, bad input raises, stages match the
plain-PyTorch references. On a CPU-only machine the Triton kernels run in the interpreter.

Cases that take several seconds in the interpreter are marked e2e (CI runs them after the rest):
most of those of paths whose knobs configs.toml ships switched off, and the costlier cases of the
others. Each such path keeps a cheaper check in the default run: a smaller case, or its plan and
launch checks (outer blocks in test_fast_config.py, the update variants, the sum by columns)."""

import dataclasses
import functools
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

# Triton picks its CPU interpreter when a kernel is decorated, so it is on while the kernels
# import, then off again: the agents and judges that other tests start must not inherit it (the
# shipped kernel in the interpreter turns a seconds-long judge run into minutes).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton
import triton.language as tl
from qrsup.kernels import blocked_wy
from qrsup.kernels.checker import check_factors
from qrsup.kernels.fast import driver
from qrsup.kernels.fast.config import DEFAULT_CONFIGS, dump_config, load_config
from qrsup.kernels.fast.direct_launch import (
    CopyStep,
    DirectLaunch,
    DirectPlan,
    _Locator,
    direct_plan,
)
from qrsup.kernels.fast.driver import Buffers, l2_hints, mirror_kwargs, prescale, run_plan
from qrsup.kernels.fast.geqrf import FastGeqrf, NonFiniteInputError, geqrf
from qrsup.kernels.fast.interpret import patch_scalar_index
from qrsup.kernels.fast.launch_record import CopyRecord, LaunchRecord, ZeroRecord, recording
from qrsup.kernels.fast.library_update import (
    cublas_precision,
    split_bmm,
    subtract_split_bmm,
    tf32_split,
    transposed,
)
from qrsup.kernels.fast.panel import qr_panel_kernel
from qrsup.kernels.fast.plan import (
    BlockOp,
    LookaheadOp,
    Op,
    OuterJoinOp,
    PanelOp,
    Plan,
    SplitPanelOp,
    TFactorOp,
    UpdateOp,
    WarpOp,
    make_plan,
    next_pow2,
)
from qrsup.kernels.fast.products import (
    exact_inverse,
    fitted_product,
    fp16_fit,
    product,
    reflector_fit,
    split_tf32,
    trailing_fit,
)
from qrsup.kernels.fast.tfactor import qr_gram_kernel, qr_tfactor_kernel
from qrsup.kernels.fast.update import qr_update_kernel
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec


# Decorated while the interpreter is on, like the kernels: splits a vector (products.py).
@triton.jit
def _split_tf32_kernel(x_ptr, hi_ptr, lo_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    hi, lo = split_tf32(tl.load(x_ptr + i))
    tl.store(hi_ptr + i, hi)
    tl.store(lo_ptr + i, lo)


@triton.jit
def _fits_kernel(bound_ptr, fit_ptr, inverse_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    fit = fp16_fit(tl.load(bound_ptr + i))
    tl.store(fit_ptr + i, fit)
    tl.store(inverse_ptr + i, exact_inverse(fit))


@triton.jit
def _f16x3_kernel(
    a_ptr, b_ptr, found_ptr, known_ptr, n, M: tl.constexpr, K: tl.constexpr, KNOWN: tl.constexpr
):
    """a·b (M × K by K × M) with fits found from the operands, and, under KNOWN, with the
    update's known ones (a as V, b as trailing-matrix columns of an n × n matrix)."""
    i, k = tl.arange(0, M), tl.arange(0, K)
    a = tl.load(a_ptr + i[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * M + i[None, :])
    at = i[:, None] * M + i[None, :]
    tl.store(found_ptr + at, product(a, b, "f16x3"))
    if KNOWN:
        tl.store(known_ptr + at, fitted_product(a, reflector_fit(), b, trailing_fit(n), "f16x3"))


INTERPRET_HERE = os.environ.pop("TRITON_INTERPRET", "") == "1" and not torch.cuda.is_available()

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
CASES = ("dense", "upper", "rankdef", "nearrank", "clustered", "band", "nearcollinear", "rowscale")


@pytest.fixture(autouse=True)
def interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast kernel takes CPU tensors only while the interpreter is on."""
    if INTERPRET_HERE:
        monkeypatch.setenv("TRITON_INTERPRET", "1")


@pytest.fixture
def nan_poisoned_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fresh float buffers start as NaN, so an output element the kernels never write fails."""
    real_empty = torch.empty

    def poisoned(*args: object, **kwargs: object) -> torch.Tensor:
        out = real_empty(*args, **kwargs)
        return out.fill_(float("nan")) if out.is_floating_point() else out

    monkeypatch.setattr(torch, "empty", poisoned)


def _solver_with(tmp_path: Path, **overrides: object) -> FastGeqrf:
    """A solver whose every shape class takes `overrides` (values must lie in the space)."""
    config = load_config(DEFAULT_CONFIGS)
    shapes = tuple(dataclasses.replace(shape, **overrides) for shape in config.shapes)
    path = tmp_path / "configs.toml"
    path.write_text(dump_config(config.with_table(config.arch, shapes)))
    return FastGeqrf(load_config(path))


def _assert_passes(a: torch.Tensor, h: torch.Tensor, tau: torch.Tensor) -> None:
    result = check_factors(a, h, tau)
    assert result.ok, result.reason


@pytest.mark.parametrize("case", [*CASES, "mixed"])
def test_every_input_case_passes_the_gates_across_two_panels(
    case: str, nan_poisoned_empty: None
) -> None:
    a = generate_input(Spec(batch=3, n=40, cond=2, case=case, seed=7), device=DEVICE)
    h, tau = geqrf(a)
    _assert_passes(a, h, tau)


@pytest.mark.parametrize(("batch", "n"), [(1, 1), (2, 2), (5, 3), (1, 17), (2, 33)])
def test_awkward_sizes_pass_the_gates(batch: int, n: int, nan_poisoned_empty: None) -> None:
    a = torch.randn(batch, n, n, device=DEVICE)
    h, tau = geqrf(a)
    assert h.shape == (batch, n, n) and tau.shape == (batch, n)
    _assert_passes(a, h, tau)


def test_narrow_panels_padded_for_tl_dot_still_pass(tmp_path: Path) -> None:
    solver = _solver_with(tmp_path, panel_width=8)
    a = generate_input(Spec(batch=2, n=30, cond=2, case="rowscale", seed=3), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


ROW_SPLIT = {
    "block_width": 32,
    "panel_width": 8,
    "update_split_below": 1056,
    "update_split_rows": 32,
}


@pytest.mark.parametrize(
    "knobs",
    [
        {"block_width": 64, "panel_width": 16, "update_split_below": 0},
        ROW_SPLIT,
        {**ROW_SPLIT, "update_w_handover": True},
    ],
)
def test_blocks_of_several_panels_and_row_split_updates_pass(
    tmp_path: Path, knobs: dict[str, object], nan_poisoned_empty: None
) -> None:
    """With scratch born NaN: a row-split update zeroes only the part of W its slabs add into,
    or, handing W over, the next one's part of the other W buffer."""
    solver = _solver_with(tmp_path, **knobs)
    a = generate_input(Spec(batch=3, n=70, cond=2, case="mixed", seed=5), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


def test_a_plan_mixing_panel_widths_passes() -> None:
    """Plans halve panels where rows × width exceeds the register budget; mix widths here."""
    shape = load_config(DEFAULT_CONFIGS).for_shape(2, 45)
    ops = []
    for col, nb in ((0, 8), (8, 16), (24, 8), (32, 16)):
        ops.append(PanelOp(col=col, nb=nb, block_m=next_pow2(45 - col), warps=1, t_offset=0))
        if col + nb < 45:
            ops.append(UpdateOp(col, nb, 16, 0, col + nb, 45, 0, shape.update_block_m, 16, 1))
    plan = Plan(batch=2, n=45, ops=tuple(ops), t_width=16, w_width=0, g_slabs=0, shape=shape)
    a = torch.randn(2, 45, 45, device=DEVICE)
    out = Buffers.allocate(a, plan)
    patch_scalar_index()
    run_plan(a, plan, out)
    _assert_passes(a, out.h, out.tau)


def test_transposed_and_strided_inputs_pass_and_are_not_mutated() -> None:
    """Whatever A's strides, H comes back in the layout its shape class declares (by columns
    where `column_major` is set, as torch.geqrf returns it, else by rows)."""
    base = torch.randn(3, 36, 72, device=DEVICE)
    strided = base[:, :, ::2]
    transposed = torch.randn(3, 36, 36, device=DEVICE).mT
    by_columns = load_config().for_shape(3, 36).column_major
    for a in (strided, transposed):
        before = a.clone()
        h, tau = geqrf(a)
        assert torch.equal(a, before)
        assert (h.mT if by_columns else h).is_contiguous()
        _assert_passes(a, h, tau)


def test_exactly_zero_columns_get_tau_exactly_zero() -> None:
    a = generate_input(Spec(batch=2, n=40, cond=0, case="rankdef", seed=11), device=DEVICE)
    h, tau = geqrf(a)
    _assert_passes(a, h, tau)
    assert torch.all(tau[:, 30:-1] == 0)
    assert torch.all(h[:, 31:, 30:-1] == 0)


@pytest.mark.parametrize(
    "knobs",
    [
        {"block_width": 32, "panel_width": 16, "update_split_below": 0},
        {"block_width": 32, "panel_width": 8, "update_split_below": 0, "column_major": True},
    ],
)
def test_columns_past_the_last_nonzero_are_skipped_and_come_out_exactly_zero(
    tmp_path: Path, knobs: dict[str, object], nan_poisoned_empty: None
) -> None:
    """Matrices whose trailing columns are exactly zero from a different column each: none, all,
    within the first panel, mid-way through a column block and on a block's edge. With H born
    NaN, a skipped column left unwritten would show; the live part must still factor."""
    solver = _solver_with(tmp_path, **knobs)
    n, ends = 70, (70, 0, 5, 45, 32, 64)
    a = torch.randn(len(ends), n, n, device=DEVICE)
    for i, end in enumerate(ends):
        a[i, :, end:] = 0.0
    h, tau = solver(a)
    _assert_passes(a, h, tau)
    for i, end in enumerate(ends):
        assert torch.all(h[i, :, end:] == 0) and torch.all(tau[i, end:] == 0)
        if end:
            assert torch.all(tau[i, : min(end, n - 1)] != 0)


def test_the_prescale_finds_each_matrix_s_last_nonzero_column() -> None:
    """Wherever the last nonzero sits, a NaN or an infinity counting as nonzero."""
    patch_scalar_index()
    a = torch.zeros(5, 300, 300, device=DEVICE)
    a[1, 299, 0] = 1.0
    a[2, 0, 150] = -2.0
    a[3, 200, 299] = float("nan")
    a[4, 7, 31] = float("inf")
    plan = make_plan(5, 300, load_config().for_shape(5, 300))
    out = Buffers.allocate(a, plan)
    prescale(a, plan, out)
    assert out.live.tolist() == [0.0, 1.0, 151.0, 300.0, 32.0]


def _assert_rescales_exactly(
    solve: Callable[..., tuple[torch.Tensor, torch.Tensor]], magnitude: float, n: int = 40
) -> None:
    """`solve` on a matrix times `magnitude` finds its factors bit for bit, R scaled by
    `magnitude`. The magnitudes are powers of two, so the scaled input is exact and the prescale
    must undo it exactly (a decimal magnitude rounds the input: with 1e30, τ moved by up to
    1.5e-5 over 200 random matrices, against an allowed 2–3e-5, which a worse draw exceeds)."""
    base = torch.randn(2, n, n, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    h_ref, tau_ref = solve(base)
    h, tau = solve(base * magnitude)
    _assert_passes(base * magnitude, h, tau)
    assert torch.equal(tau, tau_ref)
    assert torch.equal(torch.triu(h) / magnitude, torch.triu(h_ref))


@pytest.mark.parametrize("magnitude", [2.0**-100, 2.0**100])
def test_extreme_magnitudes_are_rescaled_exactly(magnitude: float) -> None:
    _assert_rescales_exactly(geqrf, magnitude)


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        (torch.zeros(2, 4, 4, dtype=torch.float64), TypeError, "float32"),
        (torch.zeros(4, 4), ValueError, "3-D"),
        (torch.zeros(2, 4, 5), ValueError, "square"),
        ([[1.0]], TypeError, "torch.Tensor"),
    ],
)
def test_bad_input_raises_a_clear_error(bad: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        geqrf(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("poison", [float("nan"), float("inf")])
@pytest.mark.parametrize("n", [8, 40])
def test_nan_or_inf_in_a_raises(poison: float, n: int) -> None:
    a = torch.randn(2, n, n, device=DEVICE)
    a[1, n // 2, n - 1] = poison
    with pytest.raises(NonFiniteInputError, match="NaN or Inf"):
        geqrf(a)


@pytest.mark.parametrize("programs", [4096, 20])
@pytest.mark.parametrize("where", [(0, 0), (299, 299), (150, 200)])
def test_the_prescale_splits_columns_and_still_reads_every_entry(
    where: tuple[int, int], programs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lone 300 × 300 matrix: its prescale spreads the columns over programs a row block,
    three of one column block each, or (aiming at 20 programs) two, the first reading two
    blocks in turn. The largest entry and a NaN are each found wherever they sit."""
    patch_scalar_index()
    monkeypatch.setattr(driver, "AMAX_PROGRAMS", programs)
    a = torch.rand(1, 300, 300, device=DEVICE)
    a[0, *where] = -7.5e5
    plan = make_plan(1, 300, load_config().for_shape(1, 300))
    out = Buffers.allocate(a, plan)
    prescale(a, plan, out)
    assert out.amax.item() == 7.5e5
    a[0, *where] = float("nan")
    prescale(a, plan, out)
    assert out.amax.item() == float("inf")


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, object]]]:
    """What the driver launches, kernel name and keyword arguments, with every kernel replaced
    by a recorder (run it on meta tensors: _launch_on_meta)."""
    seen: list[tuple[str, dict[str, object]]] = []

    class Recorder:
        def __init__(self, name: str) -> None:
            self.name = name

        def __getitem__(self, grid: object) -> Callable[..., None]:
            return lambda *args, **kwargs: seen.append((self.name, kwargs))

    for name in dir(driver):
        if name.startswith("qr_") and name.endswith("_kernel"):
            monkeypatch.setattr(driver, name, Recorder(name))
    return seen


def _launch_on_meta(batch: int, n: int, **knobs: object) -> None:
    """The shipped plan of one shape with `knobs` changed, run by the driver on meta tensors."""
    plan = make_plan(batch, n, dataclasses.replace(load_config().for_shape(batch, n), **knobs))
    assert plan is not None
    a = torch.empty((batch, n, n), device="meta")
    run_plan(a, plan, Buffers.allocate(a, plan))


def test_register_caps_reach_the_launches_they_hold(
    launches: list[tuple[str, dict[str, object]]],
) -> None:
    """Each cap reaches its launches alone: at 640 × 512 4-warp panels at 96 and 16-reflector
    updates at 128, or the 64-reflector ones at 168; at 40 × 352 the look-ahead launches. The
    rest are left to ptxas (maxnreg None)."""

    def seen() -> set[tuple[object, object, object]]:
        found = {(kw.get("BLOCK_M"), kw.get("NBP"), kw.get("maxnreg")) for _, kw in launches}
        launches.clear()
        return found

    caps = {"panel_max_registers": 96, "inner_update_max_registers": 128}
    _launch_on_meta(640, 512, **caps, update_max_registers=0)
    capped = seen()
    assert {(512, None, 96), (128, None, None), (None, 16, 128), (None, 64, None)} <= capped
    assert all(cap in (96, 128, None) for *_, cap in capped)
    _launch_on_meta(640, 512, update_max_registers=168, inner_update_max_registers=0)
    assert {(None, 16, None), (None, 64, 168), (512, None, None)} <= seen()
    _launch_on_meta(40, 352, update_max_registers=168)  # look-ahead launches: update and panel
    lookahead = seen()
    assert {cap for *_, cap in lookahead} == {None, 168} and (None, 16, 168) in lookahead


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize(
    ("knob", "constexpr"), [("panel_unroll", "UNROLL"), ("panel_gather", "GATHER")]
)
def test_panel_step_knobs_reach_the_panel_and_look_ahead_launches(
    launches: list[tuple[str, dict[str, object]]], knob: str, constexpr: str, on: bool
) -> None:
    """`panel_unroll` and `panel_gather` are constexprs of every one-program panel launch and
    look-ahead launch (40 × 176 has both), and of no other kernel."""
    _launch_on_meta(40, 176, **{knob: on})
    taking = {name for name, kw in launches if constexpr in kw}
    assert taking == {"qr_panel_kernel", "qr_lookahead_kernel"}
    assert all(kw[constexpr] is on for _, kw in launches if constexpr in kw)


def test_cpu_tensor_without_the_interpreter_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from triton import knobs

    monkeypatch.setattr(knobs.runtime, "interpret", False)
    with pytest.raises(ValueError, match="needs a CUDA tensor"):
        geqrf(torch.zeros(1, 2, 2))


def test_empty_batch_and_empty_matrices_return_empty_factors() -> None:
    for shape in ((0, 5, 5), (3, 0, 0)):
        h, tau = geqrf(torch.zeros(shape, device=DEVICE))
        assert h.shape == shape and tau.shape == (shape[0], shape[1])


@pytest.mark.parametrize(("unroll", "gather"), [(False, False), (True, False), (False, True)])
def test_panel_kernel_matches_the_reference_panel_and_its_t(unroll: bool, gather: bool) -> None:
    patch_scalar_index()
    batch, n, nb = 2, 40, 16  # a tall panel: every reflector has τ ≠ 0, as build_t assumes
    a = torch.randn(batch, n, n, device=DEVICE)
    h = a.clone()
    tau = torch.zeros(batch, n, device=DEVICE)
    t = torch.zeros(batch, nb, nb, device=DEVICE)
    amax, live = torch.ones(batch, device=DEVICE), torch.full((batch,), float(n), device=DEVICE)
    col = 8
    qr_panel_kernel[(batch,)](
        h, h, tau, t, amax, live, n, col, *h.stride(), *h.stride(), n, nb * nb, nb,
        BLOCK_M=32, NB=nb, SELF_SCALE=False, PAIR_REDUCE=torch.cuda.is_available(),
        UNROLL=unroll, GATHER=gather,
    )  # fmt: skip
    ref_panel, ref_tau = blocked_wy.factor_panel(a[:, col:, col : col + nb])
    _, ref_t = blocked_wy.build_t(blocked_wy.unit_lower(ref_panel), ref_tau)
    assert torch.allclose(h[:, col:, col : col + nb], ref_panel, atol=1e-5)
    assert torch.allclose(tau[:, col : col + nb], ref_tau, atol=1e-5)
    assert torch.allclose(t, ref_t, atol=1e-4)
    assert torch.equal(h[:, :col], a[:, :col])
    assert torch.equal(h[:, :, col + nb :], a[:, :, col + nb :])


@pytest.mark.parametrize("hints", [False, True])
@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "f16x3"])
def test_update_kernel_matches_the_reference_block_reflector(hints: bool, precision: str) -> None:
    """With and without the L2 policies (`update_l2_hints`), which change no value, and with the
    hand-split 3×TF32 products (products.py). Rows 8–23 hold V's unit triangle and rows from 24
    lie below it, so both of the walks' V loads run."""
    patch_scalar_index()
    batch, n, col, nb = 2, 40, 8, 16
    a = torch.randn(batch, n, n, device=DEVICE)
    panel, tau = blocked_wy.factor_panel(a[:, col:, col : col + nb])
    v, t = blocked_wy.build_t(blocked_wy.unit_lower(panel), tau)
    h = a.clone()
    h[:, col:, col : col + nb] = panel
    amax, live = torch.ones(batch, device=DEVICE), torch.full((batch,), float(n), device=DEVICE)
    col_blocks = -(-(n - col - nb) // 16)  # one program per matrix and column block
    qr_update_kernel[(batch * col_blocks,)](
        h, h, t.contiguous(), amax, live, n, col, nb, col + nb, n, *h.stride(), *h.stride(),
        nb * nb, nb, NBP=16, BM=16, BN=16, PRECISION=precision, APPLY_PRECISION=precision,
        **l2_hints(hints), **mirror_kwargs(h), APPLY_STAGES=None,
    )  # fmt: skip
    expected = blocked_wy.apply_block_reflector_t(v, t, a[:, col:, col + nb :])
    assert torch.allclose(h[:, col:, col + nb :], expected, atol=1e-4)
    assert torch.equal(h[:, :col], a[:, :col])


def test_split_tf32_rounds_to_nearest_ties_away_and_keeps_the_exact_remainder() -> None:
    """hi is x rounded to 10 mantissa bits as cvt.rna.tf32 rounds (nearest, ties away from
    zero), worked out here in float64 from the definition, and hi + lo is exactly x."""
    patch_scalar_index()
    gen = torch.Generator().manual_seed(5)
    ordinary = torch.randn(200, generator=gen) * torch.logspace(-30, 30, 200)
    ulp = 2.0 ** (torch.floor(torch.log2(ordinary.abs().double())) - 10)
    ties = (torch.floor(ordinary.double() / ulp) + 0.5) * ulp  # exactly halfway, 11 bits
    edges = torch.tensor([1.0, -1.0, 1.9999999, -1.9999999, 3.0e-38, 0.0, -0.0, 65504.0])
    x = torch.cat([ordinary, ties.float(), edges, torch.zeros(104)]).to(DEVICE)  # 512
    hi, lo = torch.empty_like(x), torch.empty_like(x)
    _split_tf32_kernel[(1,)](x, hi, lo, N=512)

    xd = x.double().cpu()
    step = 2.0 ** (torch.floor(torch.log2(xd.abs().clamp_min(1e-300))) - 10)
    expected = torch.sign(xd) * torch.floor(xd.abs() / step + 0.5) * step
    assert torch.equal(hi.cpu().double(), expected)
    assert torch.equal((hi.double() + lo.double()).cpu(), xd)
    assert (hi.cpu().view(torch.int32) & 0x1FFF).eq(0).all()


def test_fp16_fits_are_powers_of_two_that_keep_magnitudes_below_2_to_14() -> None:
    """Bounds from 2^-70 to 2^70, powers of two and not: bound · fit lies in [2^13, 2^14) until
    the cap of 2^60, and the inverse is exact."""
    patch_scalar_index()
    bounds = torch.logspace(-70, 70, 256, base=2.0)
    bounds[::2] *= 1.37
    fit, inverse = torch.empty_like(bounds), torch.empty_like(bounds)
    _fits_kernel[(1,)](bounds.to(DEVICE), fit, inverse, N=256)
    fit, inverse = fit.cpu().double(), inverse.cpu().double()
    assert torch.equal(torch.log2(fit), torch.log2(fit).round())
    assert torch.equal(fit * inverse, torch.ones_like(fit))
    scaled = bounds.double() * fit
    assert (scaled < 2.0**14).all()
    assert ((scaled >= 2.0**13) | (fit == 2.0**60)).all()


def test_f16x3_products_are_as_accurate_as_fp32_over_any_magnitudes() -> None:
    """fp16 has TF32's 11 significant bits but not its exponent range: a row of a 2^-30 small and
    a column of b 2^-60 small lie below fp16's subnormals, and b's other columns above its
    largest value. Fits found per row and column keep every entry of the product as accurate
    as an fp32 one; the update's known fits (V at most 1, the trailing matrix below 2√n) keep
    the product accurate against its largest entry, which is what the factor gate measures."""
    patch_scalar_index()
    gen = torch.Generator().manual_seed(7)
    m, k, n = 32, 64, 512
    a = torch.rand(m, k, generator=gen) * 2 - 1
    a[3] *= 2.0**-30
    b = torch.randn(k, m, generator=gen)
    b[:, 5] *= 2.0**-60
    found, known = torch.empty(m, m), torch.empty(m, m)
    _f16x3_kernel[(1,)](a.to(DEVICE), b.to(DEVICE), found, known, n, M=m, K=k, KNOWN=True)
    exact = a.double() @ b.double()
    size = a.abs().double() @ b.abs().double()  # what an fp32 product's error scales with
    eps = 2.0**-24
    assert ((found.cpu().double() - exact).abs() <= 8 * eps * size).all()
    assert (known.cpu().double() - exact).abs().max() <= 8 * eps * size.max()
    wide = b * 2.0**20  # beyond fp16's 65504: only fits found from the operands apply
    _f16x3_kernel[(1,)](a.to(DEVICE), wide.to(DEVICE), found, known, n, M=m, K=k, KNOWN=False)
    assert ((found.cpu().double() - exact * 2.0**20).abs() <= 8 * eps * size * 2.0**20).all()


def _block_of_panels(
    batch: int, n: int, col: int, nb: int, width: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """H holding a factored block of `width` columns at `col`, a T buffer holding each nb-wide
    panel's own T on its diagonal (NaN elsewhere, which the join must not read), and the
    block's T as the reference builds it."""
    block, tau = blocked_wy.factor_panel(torch.randn(batch, n - col, width, device=DEVICE))
    v = blocked_wy.unit_lower(block)
    h = torch.randn(batch, n, n, device=DEVICE)
    h[:, col:, col : col + width] = block
    t = torch.full((batch, 32, 32), float("nan"), device=DEVICE)
    for p in range(0, width, nb):
        q = min(p + nb, width)
        _, t_panel = blocked_wy.build_t(v[:, p:, p:q], tau[:, p:q])
        t[:, p:q, p:q] = t_panel
    return h, t, blocked_wy.build_t(v, tau)[1]


@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "f16x3"])
@pytest.mark.parametrize("width", [24, 20])
def test_tfactor_joins_the_panels_t_into_the_block_t(precision: str, width: int) -> None:
    """Under 3×TF32 the Gram is summed as hi·hi and hi·lo terms, the latter's sum added with its
    transpose at the end: without that transpose, or with the wrong one, T is off by far more
    than the tolerance. A block of 20 ends in a panel narrower than the others."""
    patch_scalar_index()
    batch, n, col, nb = 2, 40, 4, 8
    h, t, expected = _block_of_panels(batch, n, col, nb, width)
    g = torch.empty(batch, 0, device=DEVICE)
    qr_tfactor_kernel[(batch,)](
        h, t, g, n, col, width, nb, 0, *h.stride(), t.stride(0), t.stride(1), 0,
        KBP=32, NBP=16, BM=16, PRECISION=precision, FROM_PARTS=False,
    )  # fmt: skip
    assert torch.allclose(t[:, :width, :width], expected, atol=1e-4)
    assert torch.all(t[:, width:] == 0) and torch.all(t[:, :, width:] == 0)


@pytest.mark.parametrize("precision", ["ieee", "tf32x3", "f16x3"])
def test_row_split_gram_parts_join_into_the_same_t(precision: str) -> None:
    """Slabs through V's unit triangle and below it, each part exactly symmetric."""
    patch_scalar_index()
    batch, n, col, nb, width, slab = 2, 70, 4, 8, 24, 16
    h, t, expected = _block_of_panels(batch, n, col, nb, width)
    slabs = -(-(n - col) // slab)
    g = torch.full((batch, slabs, 32, 32), float("nan"), device=DEVICE)
    qr_gram_kernel[(batch, slabs)](
        h, g, n, col, width, slab, *h.stride(), g.stride(0), KBP=32, BM=16, PRECISION=precision
    )
    assert torch.equal(g, g.transpose(2, 3))
    qr_tfactor_kernel[(batch,)](
        h, t, g, n, col, width, nb, slabs, *h.stride(), t.stride(0), t.stride(1), g.stride(0),
        KBP=32, NBP=16, BM=16, PRECISION=precision, FROM_PARTS=True,
    )  # fmt: skip
    assert torch.allclose(t[:, :width, :width], expected, atol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_every_qr_v2_test_spec_passes_on_the_gpu() -> None:
    from qrsup.kernels.suites import get_suite

    for spec in get_suite("qr_v2").tests:
        a = generate_input(spec, device="cuda")
        h, tau = geqrf(a)
        result = check_factors(a, h, tau)
        assert result.ok, f"{spec.label}: {result.reason}"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_graph_replay_gives_fresh_outputs_equal_to_eager(tmp_path: Path) -> None:
    eager = _solver_with(tmp_path, graph=False)
    graphed = FastGeqrf(load_config(DEFAULT_CONFIGS))
    a1, a2 = torch.randn(2, 40, 176, 176, device="cuda")
    h1, tau1 = graphed(a1)
    h2, _ = graphed(a2)
    assert not torch.equal(h1, h2)
    h_eager, tau_eager = eager(a1)
    assert torch.equal(h1, h_eager) and torch.equal(tau1, tau_eager)


DIRECT_CASES = [
    (20, 32, {"path": "blocked"}),  # one panel launch
    (20, 32, {"path": "warp"}),
    (40, 176, {}),  # look-ahead launches
    (3, 400, {}),  # column-major H: the panels' row-major copies
    (2, 1000, {}),  # row-split updates: W's zero fills
]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize(("batch", "n", "overrides"), DIRECT_CASES)
def test_direct_launches_equal_the_plans_launches_for_any_layout(
    tmp_path: Path, batch: int, n: int, overrides: dict[str, object]
) -> None:
    """Recorded launches keep one record per layout: a transposed input and a misaligned one (a
    view one float in) must each get their own, every call fresh outputs equal to the plan's
    launches through Triton's dispatch (bit for bit, but where row-split updates sum W with
    atomics in no fixed order), and the NaN check each call's own |A|max."""
    solver = _solver_with(tmp_path, direct_launch=True, **overrides)
    plan = make_plan(batch, n, solver.config.for_arch(90).for_shape(batch, n))
    assert plan is not None and direct_plan(plan) is not None
    exact = not any(isinstance(op, UpdateOp) and op.slab_rows for op in plan.ops)
    same = torch.equal if exact else functools.partial(torch.allclose, rtol=1e-3, atol=1e-3)
    base = torch.randn(batch * n * n + 1, device="cuda")
    layouts = [
        torch.randn(batch, n, n, device="cuda"),
        torch.randn(batch, n, n, device="cuda").mT,
        base[1:].view(batch, n, n),
    ]
    for a in layouts:
        expected = Buffers.allocate(a, plan)
        run_plan(a, plan, expected)
        calls = [solver(a, check_finite=False), solver(a), solver(a, check_finite=False)]
        for h, tau in calls:
            assert same(h, expected.h) and same(tau, expected.tau)
        assert len({h.data_ptr() for h, _ in calls}) == len(calls)
        _assert_passes(a, *calls[-1])
    # |A|max is scratch kept per layout: a NaN call's flag must not outlive that call.
    poisoned = layouts[0].clone()
    poisoned[0, 1, 1] = float("nan")
    with pytest.raises(NonFiniteInputError):
        solver(poisoned)
    _assert_passes(layouts[0], *solver(layouts[0]))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_registered_launch_hook_still_sees_each_direct_launch(tmp_path: Path) -> None:
    """Direct launches go through each compiled kernel's own runner, which calls Triton's launch
    hooks: a profiler that adds one sees every launch, with the kernel's name, and the factors
    stay right."""
    solver = _solver_with(tmp_path, path="warp")
    a = torch.randn(20, 32, 32, device="cuda")
    solver(a, check_finite=False)  # compiles: later calls launch directly
    names: list[str] = []

    def hook(metadata: object) -> None:
        names.append(metadata.get()["name"])

    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        h, tau = solver(a, check_finite=False)
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)
    assert names == ["qr_warp_kernel"]
    _assert_passes(a, h, tau)
    solver(a, check_finite=False)
    assert names == ["qr_warp_kernel"]


def test_a_recording_holds_every_launch_fill_and_copy_in_order() -> None:
    """A column-major plan: the prescale's fill, then launches whose recorded arguments are every
    kernel parameter in order, and the panels' row-major copies from H."""
    shape = dataclasses.replace(load_config(DEFAULT_CONFIGS).for_shape(2, 400), column_major=True)
    plan = make_plan(2, 40, dataclasses.replace(shape, block_width=16, panel_width=8))
    assert plan is not None
    # Updates that do not store the next panel's columns row-major: each panel copies them.
    unmirrored = [
        dataclasses.replace(op, mirrored=False) if isinstance(op, PanelOp) else op
        for op in plan.ops
    ]
    unmirrored = [
        dataclasses.replace(op, mirror=0) if isinstance(op, UpdateOp) else op for op in unmirrored
    ]
    plan = dataclasses.replace(plan, ops=tuple(unmirrored))
    a = torch.randn(2, 40, 40, device=DEVICE)
    out = Buffers.allocate(a, plan)
    patch_scalar_index()
    with recording() as records:
        run_plan(a, plan, out)
    _assert_passes(a, out.h, out.tau)
    assert isinstance(records[0], ZeroRecord) and records[0].target is out.bounds
    launches = [r for r in records if isinstance(r, LaunchRecord)]
    prescale_args = (a, out.amax, out.live, 40, *a.stride())
    assert launches[0].args[:7] == prescale_args  # then its span and constexpr tiles
    assert launches[0].args[-2:] == (driver.AMAX_BLOCK_R, driver.AMAX_BLOCK_C)
    assert len(launches) > len(plan.ops) and all(len(r.grid) == 3 for r in launches)
    copies = [r for r in records if isinstance(r, CopyRecord)]
    rows = out.rows.untyped_storage().data_ptr()
    assert copies and all(c.target.untyped_storage().data_ptr() == rows for c in copies)
    assert all(
        c.source.untyped_storage().data_ptr() == out.h.untyped_storage().data_ptr() for c in copies
    )


def test_a_replayed_copy_reads_the_same_view_of_the_calls_own_h() -> None:
    """A recorded copy from H names its view by place: the replay reads that view of the new
    call's H, and a recorded write into A, H or τ is refused."""
    a, tau = torch.randn(2, 8, 8)[:, 1:, 1:], torch.empty(2, 7)
    recorded_h = torch.randn(2, 7, 7).transpose(1, 2)
    locate = _Locator((a, recorded_h, tau))
    source = recorded_h[:, 3:, 2:4]
    assert locate.place(source) == (1, source.storage_offset())
    assert locate.place(a[:, 2:]) == (0, 2 * a.stride(1))
    assert locate.place(torch.zeros(3)) is None
    with pytest.raises(RuntimeError, match="writes H"):
        locate.scratch(source)
    target = torch.zeros(2, 4, 2)
    step = CopyStep(target, source, locate.place(source))
    h = torch.randn(2, 7, 7).transpose(1, 2)
    step((a, h, tau), (0, 0, 0))
    assert torch.equal(target, h[:, 3:, 2:4])


class _StandInKernel:
    """A compiled kernel's launch surface: its runner for a grid keeps what it is given."""

    def __init__(self) -> None:
        self.launches: list[tuple[object, ...]] = []

    def __getitem__(self, grid: tuple[int, int, int]) -> Callable[..., None]:
        return lambda *args: self.launches.append((grid, *args))


def test_a_direct_launch_puts_each_calls_addresses_where_the_recorded_ones_were() -> None:
    """Pointers into A, H or τ (views included) become this call's address plus the recorded
    byte offset; scratch pointers and every other argument stay as recorded."""
    a, h, tau = torch.randn(2, 6, 6)[:, 1:, 1:], torch.empty(2, 5, 5), torch.empty(2, 5)
    scratch = torch.zeros(8)
    compiled = _StandInKernel()
    args = (a, h[:, 2:], tau, scratch, 5, 3.5, "tf32x3")
    step = DirectLaunch(LaunchRecord(compiled, (2, 3, 1), args), _Locator((a, h, tau)))
    addresses = (1 << 20, 2 << 20, 3 << 20)
    step((a, h, tau), addresses)
    step((a, h, tau), (0, 0, 0))
    expected = (addresses[1] + 2 * 5 * 4, addresses[2], scratch.data_ptr(), 5, 3.5, "tf32x3")
    assert compiled.launches[0] == ((2, 3, 1), addresses[0], *expected)
    assert compiled.launches[1][:4] == ((2, 3, 1), 0, 2 * 5 * 4, 0)


def test_direct_launches_go_to_one_launch_plans_and_classes_that_ask() -> None:
    config = load_config(DEFAULT_CONFIGS)
    single, small, large = (config.for_shape(*shape) for shape in ((20, 32), (40, 176), (8, 2048)))
    one = make_plan(20, 32, dataclasses.replace(single, path="blocked", direct_launch=False))
    several = make_plan(40, 176, dataclasses.replace(small, direct_launch=False))
    asked = make_plan(40, 176, dataclasses.replace(small, direct_launch=True))
    library = make_plan(
        8, 2048, dataclasses.replace(large, direct_launch=True, update_library="cublas")
    )
    assert one and several and asked and library and library.library_updates
    assert isinstance(direct_plan(one), DirectPlan) and isinstance(direct_plan(asked), DirectPlan)
    assert direct_plan(several) is None
    assert direct_plan(library) is None  # its cuBLAS calls cannot be recorded


FUSED = {"path": "fused", "block_width": 16, "panel_width": 8, "fused_warps": 2}
FUSED_TILES = {"update_block_m": 16, "update_block_n": 16}


@pytest.mark.parametrize(
    "case", [*(pytest.param(case, marks=pytest.mark.e2e) for case in CASES), "mixed"]
)
def test_fused_path_passes_every_input_case_across_blocks(
    tmp_path: Path, case: str, nan_poisoned_empty: None
) -> None:
    solver = _solver_with(tmp_path, **FUSED, **FUSED_TILES)
    a = generate_input(Spec(batch=3, n=40, cond=2, case=case, seed=7), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


@pytest.mark.parametrize(("batch", "n"), [(1, 1), (2, 2), (5, 3), (1, 17), (2, 33), (1, 70)])
def test_fused_path_passes_awkward_sizes(
    tmp_path: Path, batch: int, n: int, nan_poisoned_empty: None
) -> None:
    solver = _solver_with(tmp_path, **FUSED, **FUSED_TILES)
    a = torch.randn(batch, n, n, device=DEVICE)
    h, tau = solver(a)
    assert h.shape == (batch, n, n) and tau.shape == (batch, n)
    _assert_passes(a, h, tau)


def test_fused_path_under_column_major_returns_h_by_rows(
    tmp_path: Path, nan_poisoned_empty: None
) -> None:
    """The fused kernel walks H along contiguous rows, so a class that sets `column_major` (as
    small did when the fused path was tried in it) gets H by rows there, and correct factors:
    by columns, every factor came back non-finite."""
    solver = _solver_with(tmp_path, **FUSED, **FUSED_TILES, column_major=True)
    a = generate_input(Spec(batch=2, n=40, cond=2, case="mixed", seed=5), device=DEVICE)
    h, tau = solver(a)
    assert h.is_contiguous()
    _assert_passes(a, h, tau)


WARP = {"path": "warp"}


@pytest.mark.parametrize("case", [*CASES, "mixed"])
def test_warp_path_passes_every_input_case(
    tmp_path: Path, case: str, nan_poisoned_empty: None
) -> None:
    solver = _solver_with(tmp_path, **WARP)
    a = generate_input(Spec(batch=3, n=32, cond=2, case=case, seed=7), device=DEVICE)
    _assert_passes(a, *solver(a))


@pytest.mark.parametrize(("batch", "n"), [(1, 1), (2, 2), (5, 3), (1, 17), (3, 32), (2, 33)])
def test_warp_path_matches_torch_geqrf_and_hands_larger_n_to_the_blocked_launches(
    tmp_path: Path, batch: int, n: int, nan_poisoned_empty: None
) -> None:
    solver = _solver_with(tmp_path, **WARP)
    plan = make_plan(batch, n, solver.config.for_shape(batch, n))
    assert plan is not None and isinstance(plan.ops[0], WarpOp) == (n <= 32)
    a = torch.randn(batch, n, n, device=DEVICE).mT  # any strides
    h, tau = solver(a)
    _assert_passes(a, h, tau)
    h_ref, tau_ref = torch.geqrf(a.cpu())
    assert torch.allclose(tau.cpu(), tau_ref, atol=1e-5)
    assert torch.allclose(h.cpu(), h_ref, atol=1e-4)


@pytest.mark.parametrize("magnitude", [2.0**-100, 2.0**100])
def test_warp_path_rescales_extreme_magnitudes_exactly(tmp_path: Path, magnitude: float) -> None:
    _assert_rescales_exactly(_solver_with(tmp_path, **WARP), magnitude, n=32)


def test_warp_path_flags_non_finite_input(tmp_path: Path) -> None:
    a = torch.randn(3, 32, 32, device=DEVICE)
    a[1, 30, 2] = float("inf")
    with pytest.raises(NonFiniteInputError):
        _solver_with(tmp_path, **WARP)(a)


@pytest.mark.parametrize(
    "knobs",
    [
        # several panels per block, short panels
        pytest.param({"block_width": 32, "panel_width": 8}, marks=pytest.mark.e2e),
        {"block_width": 32, "panel_width": 16, "update_block_m": 32, "update_block_n": 32},
        # one panel per block: no T join
        pytest.param({"block_width": 16, "panel_width": 16}, marks=pytest.mark.e2e),
    ],
)
def test_fused_path_blockings_match_torch_geqrf(tmp_path: Path, knobs: dict[str, object]) -> None:
    solver = _solver_with(tmp_path, **{**FUSED, **FUSED_TILES, **knobs})
    a = generate_input(Spec(batch=2, n=70, cond=2, case="rowscale", seed=9), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)
    h_ref, tau_ref = torch.geqrf(a.cpu())
    assert torch.allclose(tau.cpu(), tau_ref, atol=1e-4)
    assert torch.allclose(torch.triu(h).cpu().abs(), torch.triu(h_ref).abs(), atol=1e-3)


@pytest.mark.parametrize("magnitude", [2.0**-100, pytest.param(2.0**100, marks=pytest.mark.e2e)])
def test_fused_path_rescales_extreme_magnitudes_exactly(tmp_path: Path, magnitude: float) -> None:
    _assert_rescales_exactly(_solver_with(tmp_path, **FUSED, **FUSED_TILES), magnitude)


def test_fused_path_reads_strided_input_and_flags_nan(tmp_path: Path) -> None:
    solver = _solver_with(tmp_path, **FUSED, **FUSED_TILES)
    a = torch.randn(3, 36, 72, device=DEVICE)[:, :, ::2]
    before = a.clone()
    h, tau = solver(a)
    assert torch.equal(a, before) and h.is_contiguous()
    _assert_passes(a, h, tau)
    bad = torch.randn(2, 40, 40, device=DEVICE)
    bad[1, 20, 39] = float("nan")
    with pytest.raises(NonFiniteInputError):
        solver(bad)


@pytest.mark.e2e  # 12 s here; IEEE products ship in no class
def test_per_product_precisions_and_row_split_gram_pass(tmp_path: Path) -> None:
    """Each product at its own precision. Not plain TF32: on an H200 it failed this mixed input
    (64.9 of the allowed 20 with it in V·W), as it fails n = 512; the interpreter rounds none."""
    knobs = {"block_width": 32, "panel_width": 8, "t_gram_rows": 128, "update_block_m": 32}
    knobs |= {"update_precision": "tf32x3", "update_apply_precision": "ieee", "t_precision": "ieee"}
    solver = _solver_with(tmp_path, **knobs)
    a = generate_input(Spec(batch=2, n=200, cond=2, case="mixed", seed=4), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


@pytest.mark.parametrize("split", [False, True], ids=["fused-update", "row-split-update"])
@pytest.mark.parametrize("case", ["rowscale", "band", "mixed", "clustered"])
def test_f16x3_in_every_product_passes_with_room(tmp_path: Path, split: bool, case: str) -> None:
    """fp16 splits in the updates' products (their operands fitted to known bounds) and the T
    join's (fitted from the data), on the gates' hardest cases: the factor residual stays a
    small part of the allowed 20."""
    knobs = {"block_width": 32, "panel_width": 8, "update_block_m": 32, "lookahead": False}
    knobs |= {p: "f16x3" for p in ("update_precision", "update_apply_precision", "t_precision")}
    solver = _solver_with(tmp_path, **knobs, update_split_below=65536 if split else 0)
    a = generate_input(Spec(batch=2, n=70, cond=4, case=case, seed=11), device=DEVICE)
    h, tau = solver(a)
    result = check_factors(a, h, tau)
    assert result.ok, result.reason
    assert result.diagnostics["factor_scaled_max"] < 2.0


def test_an_inner_tile_unlike_the_trailing_one_launches_and_passes(tmp_path: Path) -> None:
    """Updates inside a block and trailing ones launch with their own tiles and warps; only
    the summation order changes, so the factors agree closely with one tile for both."""
    knobs = {"block_width": 32, "panel_width": 8, "update_split_below": 0, "lookahead": False}
    knobs |= {"update_block_m": 32, "update_block_n": 32, "update_warps": 4}
    same = _solver_with(tmp_path, **knobs, inner_update_block_m=32, inner_update_block_n=32)
    inner = {"inner_update_block_m": 16, "inner_update_block_n": 16, "inner_update_warps": 1}
    own = _solver_with(tmp_path, **knobs, **inner)
    plan, _ = own._plan(-1, 2, 70)
    assert plan is not None
    tiles = {
        (op.nb, op.block_m, op.block_n, op.warps) for op in plan.ops if isinstance(op, UpdateOp)
    }
    assert tiles == {(8, 16, 16, 1), (32, 32, 32, 4)}
    for case in ("dense", "mixed"):
        a = generate_input(Spec(batch=2, n=70, cond=2, case=case, seed=5), device=DEVICE)
        h, tau = own(a)
        _assert_passes(a, h, tau)
        if case == "dense":
            h_same, tau_same = same(a)
            assert torch.allclose(h, h_same, rtol=1e-3, atol=1e-4)
            assert torch.allclose(tau, tau_same, atol=1e-5)


LOOKAHEAD = {"lookahead": True, "block_width": 32, "panel_width": 8, "update_split_below": 0}
LOOKAHEAD |= {"path": "blocked"}  # n = 9 lies in single-panel, whose shipped path is the warp one
LOOKAHEAD |= {"update_block_m": 16, "update_block_n": 16}
LOOKAHEAD |= {"inner_update_block_m": 16, "inner_update_block_n": 16}


@pytest.mark.parametrize(
    ("batch", "n", "case"),
    [pytest.param(3, 70, "mixed", marks=pytest.mark.e2e), (2, 41, "rowscale"), (1, 9, "band")],
)
def test_lookahead_path_passes_and_matches_the_plain_launches(
    tmp_path: Path, batch: int, n: int, case: str, nan_poisoned_empty: None
) -> None:
    """In the interpreter the panel program runs before the update programs of its launch, so a
    T slot shared by the two, or a column both touch, shows up here as a wrong factor. On a GPU
    the two launch sequences round differently, and a rank-deficient or clustered matrix's
    reflectors, made from rounding-sized columns, may then differ outright (3-70-mixed on an
    H200): there the gates alone judge."""
    spec = Spec(batch=batch, n=n, cond=2, case=case, seed=13)
    _assert_path_passes_and_matches_its_launches(
        tmp_path, LOOKAHEAD, "lookahead", lambda op: isinstance(op, LookaheadOp), spec
    )


def _assert_path_passes_and_matches_its_launches(
    tmp_path: Path, knobs: dict[str, object], knob: str, is_its_op: Callable[[Op], bool], spec: Spec
) -> None:
    """The path `knobs` turn on (its plan holds an op `is_its_op` picks) passes the gates on
    `spec`'s input and, in the interpreter, finds the factors of the same knobs with `knob` off."""
    solver = _solver_with(tmp_path, **knobs)
    plan, _ = solver._plan(-1, spec.batch, spec.n)
    assert plan is not None and any(is_its_op(op) for op in plan.ops)
    a = generate_input(spec, device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)
    if INTERPRET_HERE:
        h_plain, tau_plain = _solver_with(tmp_path, **{**knobs, knob: False})(a)
        assert torch.allclose(h, h_plain, atol=1e-5) and torch.allclose(tau, tau_plain, atol=1e-6)


@pytest.mark.parametrize(
    ("knobs", "n"),
    [
        pytest.param({}, 20, id="one-panel"),
        pytest.param({}, 70, id="panels", marks=pytest.mark.e2e),
        pytest.param(LOOKAHEAD, 70, id="lookahead", marks=pytest.mark.e2e),
    ],
)
def test_unrolled_panels_find_the_factors_of_the_looped_ones(
    tmp_path: Path, knobs: dict[str, object], n: int, nan_poisoned_empty: None
) -> None:
    """`panel_unroll` runs the same reflector steps with the column known at compile time: the
    gates pass, and the factors equal the looped panels' to the bit wherever the two run the
    same arithmetic (the interpreter; on a GPU ptxas may schedule the two differently)."""
    spec = Spec(batch=3, n=n, cond=2, case="mixed", seed=29)
    a = generate_input(spec, device=DEVICE)
    h, tau = _solver_with(tmp_path, **knobs, panel_unroll=True)(a)
    _assert_passes(a, h, tau)
    h_looped, tau_looped = _solver_with(tmp_path, **knobs)(a)
    if INTERPRET_HERE:
        assert torch.equal(h, h_looped) and torch.equal(tau, tau_looped)
    else:
        assert torch.allclose(h, h_looped, atol=1e-5) and torch.allclose(tau, tau_looped, atol=1e-6)


@pytest.mark.parametrize(
    ("knobs", "n"),
    [
        pytest.param({}, 20, id="one-panel"),
        pytest.param({}, 70, id="panels", marks=pytest.mark.e2e),
        pytest.param(LOOKAHEAD, 70, id="lookahead", marks=pytest.mark.e2e),
    ],
)
def test_gathered_columns_find_the_factors_of_the_summed_ones(
    tmp_path: Path, knobs: dict[str, object], n: int, nan_poisoned_empty: None
) -> None:
    """`panel_gather` takes column i by a gather instead of a masked sum: the same values (a
    sum with one nonzero term is exact), so the gates pass and the factors are equal."""
    spec = Spec(batch=3, n=n, cond=2, case="mixed", seed=37)
    a = generate_input(spec, device=DEVICE)
    h, tau = _solver_with(tmp_path, **knobs, panel_gather=True)(a)
    _assert_passes(a, h, tau)
    h_summed, tau_summed = _solver_with(tmp_path, **knobs)(a)
    assert torch.allclose(h, h_summed, atol=1e-5) and torch.allclose(tau, tau_summed, atol=1e-6)


BLOCK_LAUNCH = {**LOOKAHEAD, "lookahead": False, "block_launch": True, "t_gram_rows": 0}


@pytest.mark.parametrize(
    ("batch", "n", "case"),
    [pytest.param(3, 70, "mixed", marks=pytest.mark.e2e), (1, 9, "band")],
)
def test_block_launch_passes_and_matches_the_stage_launches(
    tmp_path: Path, batch: int, n: int, case: str, nan_poisoned_empty: None
) -> None:
    """One program per matrix runs a block's panels, inner updates and T join (block.py): the
    same arithmetic as their separate launches, so in the interpreter the same factors. n = 9
    is a single block, the plan's only launch, which still needs the prescale."""
    spec = Spec(batch=batch, n=n, cond=2, case=case, seed=31)
    _assert_path_passes_and_matches_its_launches(
        tmp_path, BLOCK_LAUNCH, "block_launch", lambda op: isinstance(op, BlockOp), spec
    )


@pytest.mark.e2e  # block_launch ships off
@pytest.mark.parametrize("magnitude", [2.0**-100, 2.0**100])
def test_block_launch_rescales_extreme_magnitudes_exactly(tmp_path: Path, magnitude: float) -> None:
    """The first block reads A at its scale; every R row leaves at A's scale again."""
    _assert_rescales_exactly(_solver_with(tmp_path, **BLOCK_LAUNCH), magnitude)


def test_block_launch_leaves_blocks_that_split_rows_to_their_launches(tmp_path: Path) -> None:
    """A block whose inner updates or VᵀV split rows over programs keeps its launches; the
    choice is per block, so blocks of at most t_gram_rows rows still get one launch."""
    plan, _ = _solver_with(tmp_path, **{**BLOCK_LAUNCH, "update_split_below": 65536})._plan(
        -1, 2, 300
    )
    assert plan is not None and not any(isinstance(op, BlockOp) for op in plan.ops)
    plan, _ = _solver_with(tmp_path, **{**BLOCK_LAUNCH, "t_gram_rows": 128})._plan(-1, 2, 300)
    assert plan is not None and isinstance(plan.ops[0], PanelOp)
    blocks = [op for op in plan.ops if isinstance(op, BlockOp)]
    joins = [op for op in plan.ops if isinstance(op, TFactorOp)]
    assert blocks and joins and max(300 - op.col for op in blocks) <= 128 < 300 - joins[-1].col


TWO_PASS = {**LOOKAHEAD, "lookahead": False}


@pytest.mark.parametrize(
    ("knob", "flag"),
    [
        ("update_two_pass", "two_pass"),
        ("inner_update_two_pass", "two_pass"),
        ("update_apply_ahead", "apply_ahead"),
        ("inner_update_apply_ahead", "apply_ahead"),
    ],
)
@pytest.mark.e2e  # 10 s each here; the four knobs ship off
def test_update_variants_pass_and_match_the_one_program_walks(
    tmp_path: Path, knob: str, flag: str, nan_poisoned_empty: None
) -> None:
    """W handed between two launches (Tᵀ·Vᵀ·C, then V·W a tile at a time), or the second walk's
    C loaded steps ahead, is the same arithmetic as one program walking the rows twice: the
    gates pass and, in the interpreter, the factors are the same. 70 rows leave partial row and
    column tiles, and the mixed batch's first update reads A."""
    spec = Spec(batch=3, n=70, cond=2, case="mixed", seed=17)
    inner = knob.startswith("inner")

    def is_its_op(op: Op) -> bool:
        return isinstance(op, UpdateOp) and getattr(op, flag) and (op.c_end - op.col <= 32) == inner

    _assert_path_passes_and_matches_its_launches(
        tmp_path, {**TWO_PASS, knob: True}, knob, is_its_op, spec
    )


def test_apply_ahead_reaches_only_the_one_program_updates_of_its_kind(
    launches: list[tuple[str, dict[str, object]]],
) -> None:
    """At 640 × 512 the 64-reflector updates take `update_apply_ahead` as their launch's stage
    count, the 16-reflector ones inside a block `inner_update_apply_ahead`; an update that
    splits rows or runs in two passes has no second walk to load ahead."""

    def stages() -> set[tuple[object, object]]:
        found = {(kw["NBP"], kw["APPLY_STAGES"]) for _, kw in launches if "APPLY_STAGES" in kw}
        assert {name for name, kw in launches if "APPLY_STAGES" in kw} <= {"qr_update_kernel"}
        launches.clear()
        return found

    _launch_on_meta(
        640, 512, update_apply_ahead=True, inner_update_apply_ahead=False, update_stages=3
    )
    assert stages() == {(64, 3), (16, None)}
    _launch_on_meta(
        640, 512, update_apply_ahead=False, inner_update_apply_ahead=True, update_stages=2
    )
    assert stages() == {(64, None), (16, 2)}
    _launch_on_meta(640, 512, update_apply_ahead=True, update_two_pass=True)
    assert stages() == {(16, None)}
    _launch_on_meta(2, 300, update_apply_ahead=True, update_split_below=65536)
    assert stages() == set()


def test_two_pass_leaves_row_split_and_library_updates_their_launches(tmp_path: Path) -> None:
    """Two passes replace only the one-program update: an update that splits rows or runs in
    cuBLAS keeps its launches, and no block launch or look-ahead swallows a two-pass update."""
    on = {"update_two_pass": True, "inner_update_two_pass": True}
    for knobs, expected in (
        ({**TWO_PASS, **on, "update_split_below": 65536}, False),
        ({**TWO_PASS, **on, "update_library": "cublas", "inner_update_two_pass": False}, False),
        ({**TWO_PASS, **on, "block_launch": True, "t_gram_rows": 0}, True),
        ({**TWO_PASS, **on, "lookahead": True}, True),
    ):
        plan, _ = _solver_with(tmp_path, **knobs)._plan(-1, 2, 70)
        assert plan is not None
        updates = [op for op in plan.ops if isinstance(op, UpdateOp)]
        assert updates and all(op.two_pass is expected for op in updates)
        assert not any(isinstance(op, BlockOp | LookaheadOp) for op in plan.ops)
        assert plan.w_width >= max((op.dot_width for op in updates if op.passes_w), default=0)


@pytest.mark.e2e  # 12 s here; update_w_by_columns ships off
def test_row_split_sum_by_columns_passes_and_matches_the_sum_by_reflectors(
    tmp_path: Path, nan_poisoned_empty: None
) -> None:
    """(Cᵀ·V)ᵀ (`update_w_by_columns`) holds the same 3×TF32 terms as Vᵀ·C with the operands'
    roles swapped: the gates pass and, in the interpreter, the factors match the sum by
    reflectors. 70 rows leave partial row and column tiles, and the first update reads A."""
    spec = Spec(batch=3, n=70, cond=2, case="mixed", seed=19)
    knobs = {**TWO_PASS, "update_split_below": 65536, "update_w_by_columns": True}
    _assert_path_passes_and_matches_its_launches(
        tmp_path,
        knobs,
        "update_w_by_columns",
        lambda op: isinstance(op, UpdateOp) and op.slab_rows > 0,
        spec,
    )


def test_row_split_sum_by_columns_reaches_only_the_w_launches(
    launches: list[tuple[str, dict[str, object]]],
) -> None:
    """The knob is a constexpr of the row-split Vᵀ·C kernel, at both of its values, and of no
    other kernel."""
    for by_columns in (True, False):
        _launch_on_meta(2, 300, update_split_below=65536, update_w_by_columns=by_columns)
        taking = {(name, kw["BY_COLUMNS"]) for name, kw in launches if "BY_COLUMNS" in kw}
        assert taking == {("qr_update_w_kernel", by_columns)}
        launches.clear()


@pytest.mark.parametrize(
    "knobs",
    [
        pytest.param(TWO_PASS, id="stage-launches"),
        pytest.param(LOOKAHEAD, id="look-ahead", marks=pytest.mark.e2e),
        pytest.param(BLOCK_LAUNCH, id="block-launch", marks=pytest.mark.e2e),
        pytest.param(
            {**TWO_PASS, "update_two_pass": True, "t_gram_rows": 128},
            id="two-pass",
            marks=pytest.mark.e2e,
        ),
        pytest.param(
            {**TWO_PASS, "panel_split_rows": 32, "panel_width": 16, "update_split_below": 65536},
            id="row-split",
            marks=pytest.mark.e2e,
        ),
        pytest.param({**TWO_PASS, "update_library": "cublas"}, id="cublas", marks=pytest.mark.e2e),
    ],
)
def test_column_major_h_passes_and_matches_row_major(
    tmp_path: Path, knobs: dict[str, object], nan_poisoned_empty: None
) -> None:
    """Every kernel takes H's strides, so H stored by columns (`column_major`) is the same
    arithmetic in another order of memory: the gates pass, H comes back column-major as
    torch.geqrf's does, and in the interpreter the factors equal the row-major ones."""
    spec = Spec(batch=2, n=70, cond=2, case="mixed", seed=23)
    a = generate_input(spec, device=DEVICE)
    h, tau = _solver_with(tmp_path, **knobs, column_major=True)(a)
    _assert_passes(a, h, tau)
    assert h.stride()[1:] == (1, spec.n)
    if INTERPRET_HERE:
        h_rows, tau_rows = _solver_with(tmp_path, **knobs, column_major=False)(a)
        assert h_rows.stride()[1:] == (spec.n, 1)
        assert torch.allclose(h, h_rows, atol=1e-5) and torch.allclose(tau, tau_rows, atol=1e-6)


SPLIT_PANELS = {"panel_split_rows": 32, "panel_width": 16, "block_width": 32}


@pytest.mark.parametrize(
    ("batch", "n", "case"),
    [
        (1, 70, "dense"),
        pytest.param(2, 97, "mixed", marks=pytest.mark.e2e),
        pytest.param(2, 70, "rankdef", marks=pytest.mark.e2e),
        pytest.param(1, 97, "band", marks=pytest.mark.e2e),
        (2, 65, "rowscale"),
    ],
)
def test_row_split_panels_pass_the_gates(
    tmp_path: Path, batch: int, n: int, case: str, nan_poisoned_empty: None
) -> None:
    """Slab QR, stacked-R join and V rebuild (panel_split.py) on panels of 2–4 slabs, the last
    one as short as a single row (n = 65)."""
    solver = _solver_with(tmp_path, **SPLIT_PANELS)
    plan, _ = solver._plan(-1, batch, n)
    assert plan is not None
    split = [op for op in plan.ops if isinstance(op, SplitPanelOp)]
    assert split and max(op.slabs for op in split) >= 3
    a = generate_input(Spec(batch=batch, n=n, cond=2, case=case, seed=17), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


@pytest.mark.e2e  # 9 s each here; the gates of split panels are checked above
@pytest.mark.parametrize("width", [16, 32])
def test_row_split_panels_rebuild_the_factors_the_one_program_panels_find(
    tmp_path: Path, width: int
) -> None:
    """The rebuilt reflectors are geqrf's where its τ is not 0: the signs S match its choice.
    At width 32 the rebuild sums V_s·(X_s·K_s) over two 16-column parts."""
    knobs = {**SPLIT_PANELS, "panel_width": width, "panel_split_rows": 2 * width}
    a = generate_input(Spec(batch=2, n=70 + width, cond=2, case="dense", seed=19), device=DEVICE)
    h, tau = _solver_with(tmp_path, **knobs)(a)
    plan, _ = _solver_with(tmp_path, **knobs)._plan(-1, 2, 70 + width)
    assert plan is not None and any(
        isinstance(op, SplitPanelOp) and op.nb == width for op in plan.ops
    )
    h_plain, tau_plain = _solver_with(tmp_path, **{**knobs, "panel_split_rows": 0})(a)
    assert torch.allclose(tau, tau_plain, atol=1e-4)
    assert torch.allclose(h, h_plain, atol=1e-3, rtol=1e-3)


@pytest.mark.parametrize(
    ("path", "batch", "n"),
    [
        *[("lookahead", batch, n) for batch, n in [(1, 1), (2, 2), (1, 17), (2, 33)]],
        *[("split panels", batch, n) for batch, n in [(1, 1), (2, 33), (1, 48)]],
        *[("block launch", batch, n) for batch, n in [(1, 1), (1, 17), (2, 33)]],
    ],
)
def test_other_paths_pass_awkward_sizes_and_strided_input(
    tmp_path: Path, path: str, batch: int, n: int
) -> None:
    paths = {"lookahead": LOOKAHEAD, "split panels": SPLIT_PANELS, "block launch": BLOCK_LAUNCH}
    knobs = paths[path]
    solver = _solver_with(tmp_path, **knobs)
    a = torch.randn(batch, n, 2 * n, device=DEVICE)[:, :, ::2]
    before = a.clone()
    h, tau = solver(a)
    assert torch.equal(a, before) and h.shape == (batch, n, n) and tau.shape == (batch, n)
    _assert_passes(a, h, tau)


# Look-ahead off, so that the updates inside a block stay separate Triton launches.
CUBLAS_UPDATES = {
    "update_library": "cublas",
    "block_width": 32,
    "panel_width": 8,
    "lookahead": False,
}


@pytest.mark.parametrize(
    ("batch", "n", "case"),
    [(3, 70, "mixed"), (2, 97, "rowscale"), (1, 65, "band"), (2, 40, "rankdef"), (1, 33, "dense")],
)
def test_cublas_updates_pass_the_gates(
    tmp_path: Path, batch: int, n: int, case: str, nan_poisoned_empty: None
) -> None:
    """Every block's trailing update through batched GEMMs (library_update.py); the updates
    inside a block stay Triton's."""
    solver = _solver_with(tmp_path, **CUBLAS_UPDATES)
    plan, _ = solver._plan(-1, batch, n)
    assert plan is not None and plan.library_updates
    updates = [op for op in plan.ops if isinstance(op, UpdateOp)]
    assert {op.library for op in updates} == {True, False}
    a = generate_input(Spec(batch=batch, n=n, cond=2, case=case, seed=23), device=DEVICE)
    h, tau = solver(a)
    _assert_passes(a, h, tau)


@pytest.mark.parametrize("split", [False, True], ids=["ieee", "tf32-splits"])
def test_cublas_updates_find_the_factors_the_triton_ones_find(tmp_path: Path, split: bool) -> None:
    """On well-conditioned matrices: rounding alone separates the two (on near-rank-deficient
    ones the last columns' τ differ by far more, and both pass the gates above)."""
    a = generate_input(Spec(batch=3, n=70, cond=1, case="dense", seed=29), device=DEVICE)
    h, tau = _solver_with(tmp_path, **CUBLAS_UPDATES, update_library_split=split)(a)
    triton_only = _solver_with(tmp_path, **{**CUBLAS_UPDATES, "update_library": "triton"})
    h_triton, tau_triton = triton_only(a)
    assert torch.allclose(tau, tau_triton, atol=1e-5)
    assert torch.allclose(h, h_triton, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("magnitude", [2.0**-100, pytest.param(2.0**100, marks=pytest.mark.e2e)])
def test_cublas_updates_rescale_extreme_magnitudes_and_read_strided_input(
    tmp_path: Path, magnitude: float
) -> None:
    """Powers of two, so that A is the unit matrix scaled exactly and the factors must match
    to rounding: 1e-30 itself rounds every entry, which moved τ past 1e-6 for some unseeded
    draws. The input is seeded."""
    solver = _solver_with(tmp_path, **CUBLAS_UPDATES)
    gen = torch.Generator().manual_seed(23)
    base = torch.randn(2, 70, 140, generator=gen).to(DEVICE)[:, :, ::2]
    a = base * magnitude
    before = a.clone()
    h, tau = solver(a)
    assert torch.equal(a, before)
    h_unit, tau_unit = solver(base.contiguous())
    assert torch.allclose(tau, tau_unit, atol=1e-6)
    assert torch.allclose(h.triu() / magnitude, h_unit.triu(), rtol=1e-5, atol=1e-5)
    assert torch.allclose(h.tril(-1), h_unit.tril(-1), rtol=1e-5, atol=1e-5)


def test_tf32_splits_are_exact_with_hi_on_tf32s_bits() -> None:
    """hi keeps 10 fraction bits, rounded to nearest (a round-up may carry into the exponent),
    and lo is the exact rest: a TF32 GEMM reads hi as it is."""
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(4096, generator=gen) * 2.0 ** torch.randint(-60, 60, (4096,), generator=gen)
    carry = torch.tensor([1.0 + (2**13 - 1) * 2.0**-23, -(2.0 - 2.0**-23), 1.0 + 2.0**-11])
    x = torch.cat((x, carry))
    hi, lo = tf32_split(x)
    assert torch.all(hi.view(torch.int32) & 0x1FFF == 0)
    assert torch.equal(hi + lo, x)
    assert torch.all(lo.abs() <= x.abs() * 2.0**-11)
    assert torch.equal(hi[-3:], torch.tensor([1.0 + 2.0**-10, -2.0, 1.0 + 2.0**-10]))


def _split_case(gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """V-like, trailing-like and W-like operands of a 64-reflector update, rows scaled apart."""
    v = torch.randn(3, 300, 64, generator=gen).tril(-1) / 8
    c = torch.randn(3, 300, 90, generator=gen) * 2.0 ** torch.randint(-20, 4, (3, 300, 1))
    w = torch.randn(3, 64, 90, generator=gen)
    return v, c, w


def _relative_error(
    result: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None
) -> float:
    """Worst |result − a·b| (or − (c − a·b)) over |a|·|b| (+ |c|), in float64."""
    a, b = a.double(), b.double()
    exact = a @ b if c is None else c.double() - a @ b
    bound = a.abs() @ b.abs() + (0.0 if c is None else c.double().abs())
    return float(((result.double() - exact) / bound).abs().max())


def _split_errors(v: torch.Tensor, c: torch.Tensor, w: torch.Tensor) -> float:
    """The worse of the split Vᵀ·C's and C − V·W's relative errors."""
    applied = c.clone()
    subtract_split_bmm(applied, tf32_split(v), tf32_split(w))
    by_split = split_bmm(transposed(tf32_split(v)), tf32_split(c))
    return max(_relative_error(by_split, v.mT, c), _relative_error(applied, v, w, c))


def test_split_products_carry_fp32s_accuracy_where_each_part_is_read_exactly() -> None:
    """On the CPU a GEMM reads every split exactly, so what is left is lo·lo (2^-22 of each
    |a|·|b|) and the fp32 sums: a product that dropped hi·lo or lo·hi would miss by 2^-11."""
    assert _split_errors(*_split_case(torch.Generator().manual_seed(5))) < 2.0**-20


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_split_products_on_tf32_gemms_stay_near_fp32_where_one_tf32_gemm_does_not() -> None:
    """cuBLAS rounds every operand to TF32 here: the splits keep the product within a few fp32
    roundings, while one TF32 GEMM of the same operands misses by about 2^-11."""
    v, c, w = (x.cuda() for x in _split_case(torch.Generator().manual_seed(5)))
    with cublas_precision("tf32"):
        plain = torch.bmm(v.mT, c)
    assert _relative_error(plain, v.mT, c) > 2.0**-14
    assert _split_errors(v, c, w) < 2.0**-19


def test_cublas_updates_hold_a_callers_tf32_setting_to_the_configs_and_restore_it() -> None:
    """A caller's TF32 choice must neither weaken the factorization nor be lost by it; cuBLAS has
    no 3×TF32, so that choice runs at IEEE."""
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    try:
        for caller, config, inside in [("tf32", "tf32x3", "ieee"), ("ieee", "tf32", "tf32")]:
            matmul.fp32_precision = caller
            with cublas_precision(config):
                assert matmul.fp32_precision == inside
            assert matmul.fp32_precision == caller
    finally:
        matmul.fp32_precision = before


# Blocks of two panels, outer blocks of four blocks: at n = 100 one outer block is joined and the
# rest of the matrix updated by it, and a last one ends the matrix.
OUTER_BLOCKS = {"outer_block_width": 64, "block_width": 16, "panel_width": 8, "lookahead": False}


@pytest.mark.e2e  # 12 to 18 s each here; test_fast_config.py checks the outer blocks' plans
@pytest.mark.parametrize(
    "knobs",
    [
        pytest.param({}, id="triton-blocks"),
        pytest.param({"update_library": "cublas"}, id="cublas-blocks"),
        pytest.param({"lookahead": True}, id="look-ahead"),
        pytest.param({"column_major": True, "update_split_below": 65536}, id="column-major"),
        pytest.param({"outer_update_library": "triton"}, id="triton-outer"),
        pytest.param(
            {"outer_update_library": "triton", "lookahead": True}, id="triton-outer-ahead"
        ),
        pytest.param(
            {"outer_update_library": "triton", "column_major": True, "update_split_below": 0},
            id="triton-outer-column-major",
        ),
    ],
)
def test_outer_blocks_pass_the_gates_and_find_the_one_level_factors(
    tmp_path: Path, knobs: dict[str, object], nan_poisoned_empty: None
) -> None:
    """The second level reorders the same updates and joins T by cuBLAS, its update cuBLAS's or
    Triton's: the gates pass on hard cases, and on a well-conditioned matrix the factors are the
    one-level ones up to rounding."""
    solver = _solver_with(tmp_path, **{**OUTER_BLOCKS, **knobs})
    plan, _ = solver._plan(-1, 2, 100)
    assert plan is not None and sum(isinstance(op, OuterJoinOp) for op in plan.ops) == 1
    for case in ("mixed", "rankdef"):
        a = generate_input(Spec(batch=2, n=100, cond=2, case=case, seed=31), device=DEVICE)
        _assert_passes(a, *solver(a))
    a = generate_input(Spec(batch=2, n=100, cond=1, case="dense", seed=37), device=DEVICE)
    h, tau = solver(a)
    h_one, tau_one = _solver_with(tmp_path, **{**OUTER_BLOCKS, **knobs, "outer_block_width": 0})(a)
    assert torch.allclose(tau, tau_one, atol=1e-5)
    assert torch.allclose(h, h_one, atol=1e-4, rtol=1e-4)
