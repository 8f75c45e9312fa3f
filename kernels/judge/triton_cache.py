"""Where compiled Triton kernels are kept between judge runs.

A candidate writes into the cache it is given, and later runs load what it wrote, so a cache is
shared only by runs whose code trusts each other: runs of one source (a bench after a test, a
revalidation, re-timing rounds), or the offline tuner's config points of the shipped kernel,
which qrsup generates itself. Anything else gets a cache of its own source.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

CacheChoice = Callable[[Path], Path]

# Every process that shares a kept cache looks kernels up with this manager (see its module):
# the contestant sees the cache under its private path, the precompiler under the host's.
MANAGER_ENV = "TRITON_CACHE_MANAGER"
RELOCATABLE_MANAGER = "qrsup.kernels.judge.relocatable_cache:RelocatableCacheManager"

# A kept cache lives on the host's disk, out of the boundary's size-limited mounts: past as much
# as a contestant's private work directory may hold, it is removed after the run (a cache holds
# nothing that cannot be compiled again). One candidate left 3 GiB there, and could have filled
# the disk the workspace's records live on.
KEPT_CACHE_BYTES = 2048 * 1024 * 1024
# What a kept file may not carry out of the boundary: a candidate left a set-user-ID copy of
# python, owned by the judge's user, in its cache.
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH


def plain_mode(path: str, mode: int) -> None:
    """Take the special bits off a kept file or directory (`mode`, from its lstat)."""
    if not stat.S_ISLNK(mode) and mode & SPECIAL_BITS:
        os.chmod(path, stat.S_IMODE(mode) & ~SPECIAL_BITS)


def tidy_kept_cache(cache: Path | None) -> str:
    """After a run: the kept cache's entries lose their special bits, and a cache that takes
    more than KEPT_CACHE_BYTES of disk is removed whole. What was removed, in words, or ""."""
    if cache is None or not cache.is_dir():
        return ""
    limit = KEPT_CACHE_BYTES
    used = 0
    for directory, subdirectories, files in os.walk(cache):
        for name in (*subdirectories, *files):
            path = os.path.join(directory, name)
            found = os.lstat(path)
            plain_mode(path, found.st_mode)
            used += found.st_blocks * 512  # what the disk holds: a sparse file takes little
    if used <= limit:
        return ""
    shutil.rmtree(cache, ignore_errors=True)
    return f"the kept Triton cache took {used >> 20} MiB of disk, past {limit >> 20} MiB: removed"


def user_cache_root() -> Path:
    """The person's own cache for `qrsup test`/`bench` runs: XDG's cache directory."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qrsup" / "triton"


def per_source(root: Path) -> CacheChoice:
    """One cache per candidate source under `root`."""

    def choose(candidate: Path) -> Path:
        digest = hashlib.sha256(candidate.read_bytes()).hexdigest()[:16]
        return root / digest

    return choose


def shared(directory: Path) -> CacheChoice:
    """One cache for every candidate (only for sources qrsup generated itself)."""
    return lambda _candidate: directory
