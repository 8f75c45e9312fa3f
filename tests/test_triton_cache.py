"""Compiled kernels kept between judge runs, behind the boundary, only where code trusts code."""

from __future__ import annotations

import re

import pytest
from qrsup.kernels.judge.triton_cache import per_source, shared

from tests.conftest import judge

# Stands in for Triton: looks for what an earlier run compiled, then "compiles" (writes) it.
COMPILES = """
import os
from pathlib import Path
import torch

def custom_kernel(a):
    cache = Path(os.environ["TRITON_CACHE_DIR"])
    entry = cache / "kernel.cubin"
    print("CACHE_HIT" if entry.exists() else "CACHE_MISS", flush=True)
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_text("compiled")
    return torch.geqrf(a)
"""

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def _run(candidate, cache) -> str:
    report = judge(candidate, triton_cache=cache)
    assert report.passed, report.reason
    return re.findall(r"CACHE_(HIT|MISS)", report.candidate_output)[0]


def test_second_run_of_a_source_finds_what_the_first_compiled(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(COMPILES)
    cache = per_source(tmp_path / "caches")(candidate)
    assert _run(candidate, cache) == "MISS"
    assert (cache / "kernel.cubin").read_text() == "compiled"
    assert _run(candidate, cache) == "HIT"


def test_another_source_gets_a_cache_of_its_own(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text(COMPILES)
    second.write_text(COMPILES + "\n# another source\n")
    choose = per_source(tmp_path / "caches")
    assert choose(first) != choose(second)
    assert _run(first, choose(first)) == "MISS"
    assert _run(second, choose(second)) == "MISS"


def test_a_shared_cache_is_one_directory_for_every_candidate(tmp_path):
    choose = shared(tmp_path / "tuner")
    assert choose(tmp_path / "a.py") == choose(tmp_path / "b.py") == tmp_path / "tuner"


def test_without_a_cache_every_run_compiles_afresh(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(COMPILES)
    assert _run(candidate, None) == "MISS"
    assert _run(candidate, None) == "MISS"
