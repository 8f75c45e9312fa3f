"""A suite's hardening cases: run only by a promotion's revalidation, they keep a kernel that
passes the contest's own list but not the inputs it leaves out from becoming the incumbent."""

from __future__ import annotations

import pytest
from qrsup.agents.evaluation import Evaluator
from qrsup.kernels.suites import QR_V2, Spec, Suite, SuiteError, load_suite_toml

from tests.test_cli_judge import run_cli

pytestmark = pytest.mark.timeout(300)

# Right everywhere but at n = 12, where its R is scaled: only a hardening case meets that.
WRONG_AT_12 = """
import torch


def custom_kernel(a):
    h, tau = torch.geqrf(a)
    if a.shape[-1] == 12:
        h = h * 1.5
    return h, tau
"""

SUITE = Suite(
    "hardened-tiny",
    tests=(Spec(2, 8, 0, "dense", 1),),
    benchmarks=(Spec(2, 16, 1, "dense", 2),),
    hardening=(Spec(2, 12, 0, "band", 3),),
)


def test_qr_v2_hardens_every_benchmarked_size_against_the_cases_that_break_relaxed_precision():
    """rowscale, band, mixed and clustered at each n ≥ 512 the benchmarks time, between the
    contest's tests and the hardening cases."""
    covered = {(s.n, s.case) for s in QR_V2.tests + QR_V2.hardening}
    for n in sorted({s.n for s in QR_V2.benchmarks if s.n >= 512}):
        for case in ("rowscale", "band", "mixed", "clustered"):
            assert (n, case) in covered, (n, case)
    assert not set(QR_V2.hardening) & set(QR_V2.tests)


def test_the_hardening_cases_get_the_secret_seed_and_join_the_tests_only_when_hardened():
    secret = SUITE.with_secret_seed(99)
    assert secret.hardening[0].seed != SUITE.hardening[0].seed
    hardened = SUITE.hardened()
    assert hardened.tests == SUITE.tests + SUITE.hardening and hardened.hardening == ()
    assert hardened.benchmarks == SUITE.benchmarks


def test_a_suite_file_may_name_hardening_cases(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        "[[tests]]\nbatch = 2\nn = 8\n[[hardening]]\nbatch = 1\nn = 12\ncase = 'band'\n"
    )
    suite = load_suite_toml(path)
    assert [(s.batch, s.n, s.case) for s in suite.hardening] == [(1, 12, "band")]
    path.write_text("[[tests]]\nbatch = 2\nn = 8\n[[hardening]]\nbatch = 0\nn = 12\n")
    with pytest.raises(SuiteError, match=r"hardening\[0\]: 'batch' must be an integer ≥ 1"):
        load_suite_toml(path)


def test_a_promotions_revalidation_fails_a_kernel_on_a_hardening_case_its_stages_never_met(
    tmp_path,
):
    path = tmp_path / "candidate.py"
    path.write_text(WRONG_AT_12)
    evaluator = Evaluator(SUITE, "cpu", "quick")
    assert evaluator.quick(path).passed  # the contest's tests and the timed specs
    revalidated = evaluator.revalidate(path)
    assert not revalidated.passed
    assert "2x12 band" in revalidated.report.reason, revalidated.report.reason


@pytest.mark.e2e  # two `qrsup test` runs: over 12 s here
def test_qrsup_test_runs_the_hardening_cases_when_asked(tmp_path):
    """An entrant sees before a promotion what its revalidation will check."""
    candidate, suite = tmp_path / "candidate.py", tmp_path / "hardened.toml"
    candidate.write_text(WRONG_AT_12)
    suite.write_text(
        "[[tests]]\nbatch = 2\nn = 8\n[[hardening]]\nbatch = 2\nn = 12\ncase = 'band'\n"
    )
    assert run_cli("test", str(candidate), "--suite", str(suite)).returncode == 0
    hardened = run_cli("test", str(candidate), "--suite", str(suite), "--hardening")
    assert hardened.returncode == 1 and "2x12 band" in hardened.stdout, hardened.stdout
