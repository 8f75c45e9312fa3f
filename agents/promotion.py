"""Promoting a candidate to incumbent: full revalidation first, then one git commit with figures.

A revalidation that measures the candidate slower than the incumbent commits nothing unless the
promotion is forced: a person who saw the figure and confirmed (the TUI asks again, the command
line needs `--force`). The rule's promotions force it: their evidence is the interleaved
re-timing, which outweighs a comparison with the incumbent's older figure.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.evaluation import Evaluator, StageResult
from qrsup.agents.fault_points import fault_point
from qrsup.agents.git_workspace import WorkspaceError, check_promotable, commit_incumbent, open_repo
from qrsup.agents.records import append_atomically, format_ms, timestamp
from qrsup.agents.session import RunPaths
from qrsup.agents.store import Store
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.schema import Candidate, Progress


@dataclass(frozen=True)
class PromotionResult:
    """`ok` with the commit, or the reason nothing changed."""

    ok: bool
    message: str
    commit_sha: str | None = None
    geomean_ns: float | None = None
    slower_by: float | None = None
    """Set when refused for measuring slower than the incumbent: by how much (0.457: 45.7%)."""
    revalidation: StageResult | None = None
    """The revalidation behind a refusal, so a confirmed promotion need not re-run it."""


def promote(
    workspace: Path,
    paths: RunPaths,
    store: Store,
    evaluator: Evaluator,
    candidate_id: str,
    by: str,
    noise: dict[str, object] | None = None,
    progress: Progress | None = None,
    force: bool = False,
    revalidated: StageResult | None = None,
) -> PromotionResult:
    """Revalidate on every spec with a fresh seed (unless `revalidated` is that run, for this
    candidate, moments ago), then commit; refuse on any failure, and on a slower figure unless
    `force`."""
    candidate = store.candidate(candidate_id)
    if candidate is None:
        return PromotionResult(False, f"no candidate {candidate_id} in this session")
    with file_lock(paths.promote_lock):
        if store.incumbent_id() == candidate_id:
            return PromotionResult(False, f"{candidate_id} is already the incumbent")
        try:
            with open_repo(workspace) as repo:
                check_promotable(repo)
        except WorkspaceError as exc:
            return PromotionResult(False, str(exc))
        result = revalidated
        if result is None or result.report.source_sha256 != sha256(candidate.source):
            result = _revalidate(evaluator, candidate.source, progress)
            store.add_evaluation(
                candidate_id, by, 0, "revalidate", result.report.to_dict(), result.spec_means_ns
            )
        if not result.passed:
            return PromotionResult(
                False, f"revalidation failed ({result.report.verdict}): {result.report.reason}"
            )
        previous = store.candidate(store.incumbent_id() or "")
        slower = _slower_by(result, previous)
        if slower is not None and not force:
            assert previous is not None
            return PromotionResult(
                False,
                f"revalidation measured {format_ms(result.report.geomean_ns)}, {slower:.1%} "
                f"slower than the incumbent {previous.id} ({format_ms(previous.geomean_ns)}); "
                "not promoted (--force commits it anyway)",
                slower_by=slower,
                revalidation=result,
            )
        message = _commit_message(
            candidate_id, candidate.hypothesis, candidate.agent, by, result, previous, noise
        )
        if slower is not None:
            message += f"\nforced: the revalidation was {slower:.1%} slower than the incumbent"
        try:
            with open_repo(workspace) as repo:
                sha = commit_incumbent(repo, candidate.source, message)
        except WorkspaceError as exc:
            return PromotionResult(False, str(exc))
        fault_point("promotion")  # committed, not yet stored
        geomean_ns = result.report.geomean_ns
        store.add_promotion(
            candidate_id,
            sha,
            geomean_ns,
            previous.geomean_ns if previous else None,
            noise or {},
            by,
        )
        append_atomically(
            workspace / "log.md",
            f"\n## {timestamp()} · promotion · {candidate_id} → incumbent · "
            f"{format_ms(geomean_ns)} · commit {sha[:10]} · by {by}\n",
        )
        return PromotionResult(
            True,
            f"promoted {candidate_id} ({format_ms(geomean_ns)}), commit {sha[:10]}",
            sha,
            geomean_ns,
        )


def _slower_by(result: StageResult, incumbent: Candidate | None) -> float | None:
    """How much slower the revalidation measured than the incumbent's figure; None if not."""
    new = result.report.geomean_ns
    old = incumbent.geomean_ns if incumbent is not None else None
    if new is None or not old or new <= old:
        return None
    return new / old - 1


def sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _revalidate(evaluator: Evaluator, source: str, progress: Progress | None) -> StageResult:
    with tempfile.TemporaryDirectory(prefix="qrsup-promote-") as scratch:
        path = Path(scratch) / "candidate.py"
        path.write_text(source)
        return evaluator.revalidate(path, progress)


def _commit_message(
    candidate_id: str,
    hypothesis: str,
    agent: str,
    by: str,
    result: StageResult,
    previous: object,
    noise: dict[str, object] | None,
) -> str:
    geomean_ns = result.report.geomean_ns
    before = getattr(previous, "geomean_ns", None)
    change = ""
    if geomean_ns and before:
        change = f" (was {format_ms(before)}, {100 * (geomean_ns / before - 1):+.1f}%)"
    lines = [
        f"Promote {candidate_id}: geomean {format_ms(geomean_ns)}{change}",
        "",
        f"hypothesis: {hypothesis}",
        f"agent: {agent}; promoted by: {by}",
        f"suite: {result.report.suite}; device: {result.report.device.get('name', '?')}; "
        f"seed: {result.report.seed}",
        "per-spec (ms): "
        + ", ".join(f"{i}: {m / 1e6:.4g}" for i, m in sorted(result.spec_means_ns.items())),
    ]
    if noise:
        lines.append(f"noise: {noise}")
    return "\n".join(lines)
