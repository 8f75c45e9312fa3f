"""Input generators: the contract's constructions, deterministic per seed."""

from __future__ import annotations

import torch
from qrsup.kernels.generators import BUILDERS, generate_input, mixed_assignment
from qrsup.kernels.suites import CASES, Spec


def test_rankdef_has_exact_zero_columns_and_rank_three_quarters_n():
    a = generate_input(Spec(3, 64, 0, "rankdef", seed=5))
    assert torch.all(a[..., 48:] == 0)
    assert torch.all(a[..., :48].abs().sum(dim=1) > 0)
    ranks = torch.linalg.matrix_rank(a.double())
    assert ranks.tolist() == [48, 48, 48]


def test_mixed_batch_has_dense_and_non_dense_matrices():
    for seed in range(20):
        gen = torch.Generator().manual_seed(seed)
        cases = mixed_assignment(2, gen, torch.device("cpu"))
        assert "dense" in cases and any(c != "dense" for c in cases)


def test_mixed_batch_really_mixes_structures():
    a = generate_input(Spec(16, 64, 2, "mixed", seed=3))
    zero_tail = [bool(torch.all(m[:, 48:] == 0)) for m in a]
    assert any(zero_tail) or a.shape[0] < 8  # at 16 matrices a rankdef is all but certain
    assert not all(zero_tail)


def test_same_seed_gives_the_same_bytes_for_every_case():
    for case in CASES:
        spec = Spec(3, 33, 2, case, seed=11)
        assert torch.equal(generate_input(spec), generate_input(spec))


def test_different_seed_gives_different_inputs():
    for case in CASES:
        a = generate_input(Spec(3, 33, 2, case, seed=11))
        b = generate_input(Spec(3, 33, 2, case, seed=12))
        assert not torch.equal(a, b)


def test_case_structures_match_the_contract():
    n = 64
    upper = generate_input(Spec(2, n, 1, "upper", seed=1))
    assert torch.all(torch.tril(upper, -1) == 0)
    band = generate_input(Spec(2, n, 0, "band", seed=1))
    width = max(2, min(32, n // 32))
    i = torch.arange(n)
    outside = (i[:, None] - i[None, :]).abs() > width
    assert torch.all(band[:, outside] == 0)
    clustered = generate_input(Spec(2, n, 0, "clustered", seed=1))
    tail = clustered[..., n // 2 + 2 :].abs().max()
    assert tail < 1e-4
    nearcollinear = generate_input(Spec(1, n, 0, "nearcollinear", seed=1))[0]
    assert torch.linalg.svdvals(nearcollinear.double())[1] < 1e-2


def test_generated_input_is_float32_of_the_spec_shape():
    a = generate_input(Spec(4, 7, 1, "dense", seed=1))
    assert a.dtype == torch.float32 and a.shape == (4, 7, 7)


def test_each_matrix_of_a_mixed_batch_is_built_as_its_case_alone_would_build_it():
    """The cases are built a group at a time (as the contest's reference does), not a matrix at a
    time; each matrix still gets exactly its case's construction."""
    spec = Spec(24, 64, 2, "mixed", seed=7)
    mixed = generate_input(spec)
    gen = torch.Generator().manual_seed(spec.seed)
    base = torch.randn(spec.batch, spec.n, spec.n, generator=gen)
    cases = mixed_assignment(spec.batch, gen, torch.device("cpu"))
    assert len(set(cases)) >= 3
    drawless = {"dense", "rankdef", "clustered", "band", "rowscale"}  # draw nothing more
    for i, case in enumerate(cases):
        if case in drawless:
            alone = BUILDERS[case](base[i : i + 1], gen, spec.cond)[0]
            assert torch.equal(mixed[i], alone), (i, case)
        else:  # its own draws: near a rank of 3n/4, or near rank one
            rank = 3 * spec.n // 4 if case == "nearrank" else 1
            assert torch.linalg.svdvals(mixed[i].double())[rank] < 1e-3, (i, case)
