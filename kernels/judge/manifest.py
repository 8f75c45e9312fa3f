"""Hashes of the judge's own files, taken when a session starts and checked before every judge run.

A coding-agent proposer runs as the same user as the judge, with a shell: it could edit the
checker or the suites on disk as easily as its candidate. A changed file fails the run (verdict
`tampered`) instead of judging with code nobody reviewed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# Everything a verdict depends on: the judge's processes, the gates, the suites and their inputs,
# the timing rules, and the harness the contestant runs.
JUDGED_GLOBS = (
    "judge/*.py",
    "checker.py",
    "suites.py",
    "generators.py",
    "timing.py",
    "profiling/trace.py",
)


def take_manifest(package: Path = PACKAGE) -> dict[str, str]:
    """File (relative to the judge's package) → SHA-256 of its bytes."""
    files = sorted({p for pattern in JUDGED_GLOBS for p in package.glob(pattern) if p.is_file()})
    return {str(p.relative_to(package)): _digest(p) for p in files}


def changed_files(manifest: Mapping[str, str], package: Path = PACKAGE) -> list[str]:
    """The judge's files that differ from `manifest`: edited, removed or added."""
    now = take_manifest(package)
    names = sorted(set(now) | set(manifest))
    return [name for name in names if now.get(name) != manifest.get(name)]


def save_manifest(path: Path, manifest: Mapping[str, str]) -> None:
    path.write_text(json.dumps(dict(manifest), indent=1, sort_keys=True) + "\n")


def load_manifest(path: Path) -> dict[str, str]:
    return dict(json.loads(path.read_text()))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
