"""scripts/contest_eval.py hands a qrsup suite's specs to the contest's harness. It runs only on a
lent GPU with the harness beside it, so the spec lists it writes are checked here: a wrong field
would cost a device call before the harness said anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from qrsup.kernels.suites import EDGES, Spec

from tests.conftest import ROOT, load_script

CONTEST_EVAL = load_script("contest_eval")


def test_a_suites_specs_read_back_as_task_yml_lists_them(tmp_path: Path) -> None:
    """Written in task.yml's form, the edges suite's lists read back field for field, each in the
    harness's `key: value; ...` line with the suite's own batch, n, cond, seed and case."""
    tests = CONTEST_EVAL.suite_specs("edges", "test")
    benchmarks = CONTEST_EVAL.suite_specs("edges", "benchmark")
    lines = ["tests:", *(f"  - {json.dumps(s)}" for s in tests)]
    lines += ["benchmarks:", *(f"  - {json.dumps(s)}" for s in benchmarks)]
    (tmp_path / "task.yml").write_text("\n".join(lines) + "\n")
    assert CONTEST_EVAL.task_specs(tmp_path / "task.yml") == {
        "tests": tests,
        "benchmarks": benchmarks,
    }
    assert len(tests) == len(EDGES.tests) and len(benchmarks) == len(EDGES.benchmarks)
    first = EDGES.tests[0]
    assert CONTEST_EVAL.spec_line(tests[0]) == (
        f"batch: {first.batch}; n: {first.n}; cond: {int(first.cond)}; seed: {first.seed}; "
        f"case: {first.case}"
    )


def test_a_fractional_cond_is_refused_before_the_harness_sees_it() -> None:
    """eval.py parses values as integers or words: `cond: 0.5` would stop it with exit 113."""
    with pytest.raises(ValueError, match="integer cond"):
        CONTEST_EVAL.harness_spec(Spec(batch=2, n=64, cond=0.5, case="dense", seed=1))


def test_an_unknown_suite_is_one_line_and_exit_2_before_any_harness_run(tmp_path: Path) -> None:
    """The harness files only need to exist for the check to reach the suite; nothing runs."""
    for name in (*CONTEST_EVAL.HARNESS_FILES, "task.yml"):
        (tmp_path / name).write_text("")
    submission = tmp_path / "submission.py"
    submission.write_text("")
    script = ROOT / "scripts" / "contest_eval.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(submission), "--suite", "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert "unknown suite 'nope'" in last and "Traceback" not in done.stderr
    assert not (tmp_path / "popcorn.txt").exists()


def test_the_harness_is_found_side_by_side_or_in_a_checkout_of_the_contests_repository(
    tmp_path: Path,
) -> None:
    """A session once handed a checkout's layout to the device and the harness step stopped at
    once: both layouts are read, and a folder with neither names what it lacks."""
    names = (*CONTEST_EVAL.HARNESS_FILES, "task.yml")
    flat = tmp_path / "flat"
    flat.mkdir()
    for name in names:
        (flat / name).write_text(name)
    assert CONTEST_EVAL.harness_files(flat) == {name: flat / name for name in names}
    checkout = tmp_path / "reference-kernels"
    problem, pmpp = checkout / "problems" / "linalg" / "qr_v2", checkout / "problems" / "pmpp_v2"
    problem.mkdir(parents=True)
    pmpp.mkdir()
    for name in names:
        ((pmpp if name == "utils.py" else problem) / name).write_text(name)
    found = CONTEST_EVAL.harness_files(checkout)
    assert {name: path.read_text() for name, path in found.items()} == {n: n for n in names}
    assert found["utils.py"] == pmpp / "utils.py"
    (problem / "eval.py").unlink()
    with pytest.raises(CONTEST_EVAL.MissingHarness, match=r"lacks eval\.py in a checkout"):
        CONTEST_EVAL.harness_files(checkout)
    (flat / "utils.py").unlink()
    with pytest.raises(CONTEST_EVAL.MissingHarness, match=r"lacks utils\.py side by side$"):
        CONTEST_EVAL.harness_files(flat)
