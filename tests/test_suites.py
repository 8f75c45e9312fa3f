"""Suites: the contract's spec lists, the smoke suite, user TOML suites and secret seeds."""

from __future__ import annotations

import pytest
from qrsup.kernels.fast.config import load_config
from qrsup.kernels.suites import (
    CASES,
    EDGES,
    QR_V2,
    SMOKE,
    SuiteError,
    get_suite,
    load_suite_toml,
)


def test_qr_v2_has_the_contract_spec_counts():
    assert len(QR_V2.tests) == 22
    assert len(QR_V2.benchmarks) == 12
    assert QR_V2.benchmarks[3].batch == 640 and QR_V2.benchmarks[3].n == 512


def test_smoke_covers_every_case_and_n_from_one_to_256():
    assert {s.case for s in SMOKE.tests} == set(CASES)
    sizes = {s.n for s in SMOKE.tests}
    assert min(sizes) == 1 and max(sizes) == 256


def test_edges_cross_every_shape_class_bound_with_every_case_and_extreme_batches():
    """What the contest's lists leave out: for each shipped class bound, an odd n on each side;
    n past the contest's 4096; batch 1 and 1000; every case, at more than one size."""
    sizes = {s.n for s in EDGES.tests}
    bounds = [shape.n_max for shape in load_config().shapes if shape.n_max is not None]
    for bound in bounds:
        assert any(bound - 2 <= n < bound and n % 2 for n in sizes), bound
        assert any(bound < n <= bound + 2 and n % 2 for n in sizes), bound
    assert max(sizes) > 4096
    assert {1, 1000} <= {s.batch for s in EDGES.tests}
    for case in CASES:
        assert len({s.n for s in EDGES.tests if s.case == case}) >= 2, case
    specs = EDGES.tests + EDGES.benchmarks
    assert len({s.seed for s in specs}) == len(specs)
    assert not {(s.batch, s.n, s.case) for s in specs} & {
        (s.batch, s.n, s.case) for s in QR_V2.tests + QR_V2.benchmarks
    }


def test_secret_seed_changes_every_seed_and_nothing_else():
    secret = QR_V2.with_secret_seed(12345)
    for old, new in zip(
        QR_V2.tests + QR_V2.benchmarks, secret.tests + secret.benchmarks, strict=True
    ):
        assert new.seed != old.seed
        assert (new.batch, new.n, new.cond, new.case) == (old.batch, old.n, old.cond, old.case)


def test_user_suite_from_toml(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\n[[tests]]\nbatch = 2\nn = 9\ncase = "band"\n'
        "[[benchmarks]]\nbatch = 4\nn = 16\ncond = 1.5\nseed = 3\n"
    )
    suite = get_suite(str(path))
    assert suite.name == "mine"
    assert suite.tests[0].case == "band" and suite.tests[0].n == 9
    assert suite.benchmarks[0].cond == 1.5 and suite.benchmarks[0].seed == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[tests]\n", "malformed suite TOML"),
        ("[[tests]]\nbatch = 0\nn = 4\n", "'batch' must be an integer ≥ 1"),
        ("[[tests]]\nbatch = 1\nn = 4\ncase = 'weird'\n", "unknown case 'weird'"),
        ("[[tests]]\nbatch = 1\nn = 4\nsize = 3\n", "unknown keys ['size']"),
        ("name = 'empty'\n", "at least one"),
    ],
)
def test_malformed_user_suites_get_clear_errors(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SuiteError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_suite_toml(path)


def test_unknown_suite_name_lists_the_known_ones():
    with pytest.raises(SuiteError, match="built-in: edges, qr_v2, smoke"):
        get_suite("nonsense")
