"""Compiled kernels kept between judge runs, behind the boundary, only where code trusts code."""

from __future__ import annotations

import re
import stat

import pytest
from qrsup.kernels.judge import triton_cache
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


@pytest.mark.e2e  # two whole judge runs: over 6 s here
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


# Leaves a set-user-ID file of 64 KiB in the cache it was given.
PLANTS = """
import os
from pathlib import Path
import torch

def custom_kernel(a):
    planted = Path(os.environ["TRITON_CACHE_DIR"]) / "planted"
    if not planted.exists():
        planted.write_bytes(os.urandom(64 * 1024))
        planted.chmod(0o4755)
    return torch.geqrf(a)
"""


def test_a_kept_file_loses_its_set_user_id_bit_after_the_run(tmp_path):
    candidate = tmp_path / "plants.py"
    candidate.write_text(PLANTS)
    cache = tmp_path / "cache"
    report = judge(candidate, triton_cache=cache)
    assert report.passed, report.reason
    mode = (cache / "planted").lstat().st_mode
    assert stat.S_IMODE(mode) == 0o755, oct(mode)
    assert report.triton_cache_removed == ""
    assert report.isolation["root"] == "built", report.isolation  # its cache mounted inert


def test_a_kept_cache_grown_past_its_limit_is_removed_after_the_run(tmp_path, monkeypatch):
    """The kept cache lies on the host's disk: one candidate left 3 GiB in it."""
    monkeypatch.setattr(triton_cache, "KEPT_CACHE_BYTES", 16 * 1024)
    candidate = tmp_path / "plants.py"
    candidate.write_text(PLANTS)
    cache = tmp_path / "cache"
    report = judge(candidate, triton_cache=cache)
    assert report.passed, report.reason
    assert not cache.exists()
    assert report.triton_cache_removed.endswith("MiB of disk, past 0 MiB: removed")
