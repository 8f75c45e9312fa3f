"""A candidate's new kept cache gets the shipped kernels' launches compiled into it before its
first run, where that can pay, so that a candidate built on them does not compile them one after
another inside its contestant. On a machine without a GPU the compile is for sm_90, with
Triton's bundled ptxas (skipped where there is none). Like test_precompile.py, this module must
not import Triton: the compiles run in child processes."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
from qrsup.kernels.judge.shipped_seed import Seeding, start_seed_if_it_pays, wants_seed
from qrsup.kernels.suites import Spec

from tests.test_precompile import _kernels, cuda_compiler  # noqa: F401 (a fixture)

BUILT_ON_SHIPPED = "from qrsup.kernels.fast.geqrf import geqrf\n"


def test_seeding_pays_only_for_a_cuda_judge_a_new_cache_and_a_source_on_the_shipped_kernels(
    tmp_path: Path,
):
    new = tmp_path / "new"
    assert wants_seed(BUILT_ON_SHIPPED, new, "cuda:0")
    assert wants_seed("from qrsup.kernels import geqrf\n", new, "cuda")
    assert not wants_seed(BUILT_ON_SHIPPED, new, "cpu")
    assert not wants_seed("import torch\n", new, "cuda:0")
    new.mkdir()
    assert wants_seed(BUILT_ON_SHIPPED, new, "cuda:0"), "an empty directory is a new cache"
    (new / "0123abcd").mkdir()
    assert not wants_seed(BUILT_ON_SHIPPED, new, "cuda:0"), "a used cache is the source's own"


def test_nothing_is_compiled_where_seeding_cannot_pay(tmp_path: Path):
    specs = [Spec(4, 32, 1, "dense", 5)]
    cache = tmp_path / "cache"
    assert start_seed_if_it_pays("import torch\n", cache, "cuda:0", specs) is None
    assert start_seed_if_it_pays(BUILT_ON_SHIPPED, cache, "cpu", specs) is None
    assert start_seed_if_it_pays(BUILT_ON_SHIPPED, None, "cuda:0", specs) is None, "no kept cache"
    assert not cache.exists()


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_the_shipped_launches_are_compiled_into_the_cache(cuda_compiler, tmp_path: Path):  # noqa: F811
    cache = tmp_path / "cache"
    seeding = Seeding.start(cache, 90, ["--shape=4x32", "--shape=4x40"])
    assert cache.is_dir(), "made before the contestant's boundary mounts it"
    seeded = seeding.wait()
    assert seeded.summary.startswith("precompiled "), seeded.summary
    assert "failed" not in seeded.summary and seeded.seconds > 0
    assert _kernels(cache), "no compiled kernel in the cache"


def test_what_the_seed_compiled_is_readable_by_a_contestant_of_another_user(
    cuda_compiler,  # noqa: F811
    tmp_path: Path,
):
    """The judge's user gets the cache when its boundary is drawn, which can be before the seed
    has written anything; a supervisor's private umask must not hide the kernels from it."""
    previous = os.umask(0o077)
    try:
        Seeding.start(tmp_path / "cache", 90, ["--shape=4x32"]).wait()
    finally:
        os.umask(previous)
    written = [path for path in (tmp_path / "cache").rglob("*")]
    assert written
    assert all(path.stat().st_mode & 0o005 == 0o005 for path in written if path.is_dir())
    assert all(path.stat().st_mode & 0o004 for path in written if path.is_file())


def test_a_precompiler_that_fails_is_reported_not_raised(tmp_path: Path):
    seeded = Seeding.start(tmp_path / "cache", 90, ["--shape=0x32"]).wait()
    assert "usage" in seeded.summary or "error" in seeded.summary, seeded.summary


def test_a_seeding_stopped_midway_leaves_no_process(cuda_compiler, tmp_path: Path):  # noqa: F811
    seeding = Seeding.start(tmp_path / "cache", 90, ["--shape=4x512", "--shape=4x1024"])
    child = psutil.Process(seeding.process.pid)
    seeding.stop()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert seeding.process.returncode is not None
