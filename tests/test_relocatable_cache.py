"""The kept Triton cache's lookup, on Triton's own cache classes: a group of files recorded under
one path is found when the directory is seen under another (kernels/judge/relocatable_cache.py).
Triton is imported inside the tests, after test_fast_geqrf.py has chosen its interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.kernels.judge.sandbox import IsolationSettings, plan_sandbox
from qrsup.kernels.judge.triton_cache import MANAGER_ENV, RELOCATABLE_MANAGER

KEY = "KEYOFONEKERNEL"


def _kernel_at(cache: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A kernel's files and its group, written by Triton's own cache under `cache`."""
    from triton.runtime.cache import FileCacheManager

    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    manager = FileCacheManager(KEY)
    group = {name: manager.put(b"binary", name) for name in ("k.cubin", "k.json")}
    manager.put_group("k.json", group)
    return group


def test_a_moved_cache_is_missed_by_tritons_lookup_and_found_by_the_relocatable_one(
    tmp_path, monkeypatch
):
    from qrsup.kernels.judge.relocatable_cache import RelocatableCacheManager
    from triton.runtime.cache import FileCacheManager

    _kernel_at(tmp_path / "host", monkeypatch)
    (tmp_path / "host").rename(tmp_path / "mounted")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mounted"))
    assert FileCacheManager(KEY).get_group("k.json") is None
    found = RelocatableCacheManager(KEY).get_group("k.json")
    here = tmp_path / "mounted" / KEY
    assert found == {"k.cubin": str(here / "k.cubin"), "k.json": str(here / "k.json")}


def test_a_group_with_a_missing_file_or_torn_is_a_miss(tmp_path, monkeypatch):
    from qrsup.kernels.judge.relocatable_cache import RelocatableCacheManager

    _kernel_at(tmp_path, monkeypatch)
    manager = RelocatableCacheManager(KEY)
    assert manager.get_group("k.json") is not None
    (tmp_path / KEY / "k.cubin").unlink()
    assert manager.get_group("k.json") is None
    (tmp_path / KEY / "__grp__k.json").write_text('{"child_paths": ')
    assert manager.get_group("k.json") is None
    (tmp_path / KEY / "__grp__k.json").write_text('["not", "a", "group"]')
    assert manager.get_group("k.json") is None
    assert manager.get_group("absent.json") is None


def test_triton_loads_the_manager_the_contestant_is_given(tmp_path, monkeypatch):
    from qrsup.kernels.judge.relocatable_cache import RelocatableCacheManager
    from triton import knobs

    policy = plan_sandbox(
        IsolationSettings(mode="off"),
        command=["true"],
        env={},
        work_dir=tmp_path,
        status_fd=-1,
        cuda=False,
        max_file_bytes=2**20,
        data_limit_bytes=None,
        triton_cache=tmp_path / "cache",
    )
    assert policy.env[MANAGER_ENV] == RELOCATABLE_MANAGER
    monkeypatch.setenv(MANAGER_ENV, policy.env[MANAGER_ENV])
    assert knobs.cache.manager_class is RelocatableCacheManager
