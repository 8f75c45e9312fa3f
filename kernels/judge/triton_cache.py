"""Where compiled Triton kernels are kept between judge runs.

A candidate writes into the cache it is given, and later runs load what it wrote, so a cache is
shared only by runs whose code trusts each other: runs of one source (a bench after a test, a
revalidation, re-timing rounds), or the offline tuner's config points of the shipped kernel,
which qrsup generates itself. Anything else gets a cache of its own source.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

CacheChoice = Callable[[Path], Path]

# Every process that shares a kept cache looks kernels up with this manager (see its module):
# the contestant sees the cache under its private path, the precompiler under the host's.
MANAGER_ENV = "TRITON_CACHE_MANAGER"
RELOCATABLE_MANAGER = "qrsup.kernels.judge.relocatable_cache:RelocatableCacheManager"


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
