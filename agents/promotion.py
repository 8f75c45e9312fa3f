"""Promoting a candidate to incumbent: full revalidation first, then one git commit with figures.

A person's promotion times the incumbent's full stage beside the revalidation, on its seed, and
weighs the two: the incumbent's stored figure was taken under other load (on a busy CPU a
candidate 1% slower by the stored figures revalidated 27% faster, and the next, measured against
that run's stored figure, was promoted 34% slower without a question). A candidate measured
slower than that commits nothing unless the promotion is forced: a person who saw the figure and
confirmed (the TUI asks again, the command line needs `--force`). The rule's promotions force it:
their evidence is the interleaved re-timing, which the incumbent's figures were refreshed from.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
class Revalidation:
    """A candidate's revalidation, and the incumbent's full stage timed beside it on its seed
    (None where there is no incumbent, or a forced promotion did not time it)."""

    candidate: StageResult
    incumbent: StageResult | None = None

    def incumbent_ns(self, stored: Candidate | None) -> float | None:
        """The incumbent's figure to weigh the candidate against: the one timed beside it."""
        if self.incumbent is not None:
            return self.incumbent.report.geomean_ns
        return stored.geomean_ns if stored is not None else None


@dataclass(frozen=True)
class PromotionResult:
    """`ok` with the commit, or the reason nothing changed."""

    ok: bool
    message: str
    commit_sha: str | None = None
    geomean_ns: float | None = None
    slower_by: float | None = None
    """Set when refused for measuring slower than the incumbent: by how much (0.457: 45.7%)."""
    revalidation: Revalidation | None = None
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
    revalidated: Revalidation | None = None,
) -> PromotionResult:
    """Revalidate on every spec with a fresh seed and time the incumbent beside it (unless
    `revalidated` is that pair, for this candidate, moments ago), then commit; refuse on any
    failure, and on a slower figure unless `force`."""
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
        previous = store.candidate(store.incumbent_id() or "")
        pair = revalidated
        if pair is None or pair.candidate.report.source_sha256 != sha256(candidate.source):
            result = _revalidate(evaluator, candidate.source, progress)
            store.add_evaluation(
                candidate_id, by, 0, "revalidate", result.report.to_dict(), result.spec_means_ns
            )
            pair = Revalidation(result)
            if not force and result.passed and previous is not None:
                pair = Revalidation(result, _beside(evaluator, store, previous, result, by))
        result = pair.candidate
        if not result.passed:
            return PromotionResult(
                False, f"revalidation failed ({result.report.verdict}): {result.report.reason}"
            )
        if pair.incumbent is not None and not pair.incumbent.passed:
            report = pair.incumbent.report
            return PromotionResult(
                False,
                f"the incumbent's re-timing beside the revalidation failed ({report.verdict}): "
                f"{report.reason}; not promoted (--force commits it anyway)",
            )
        incumbent_ns = pair.incumbent_ns(previous)
        slower = _slower_by(result.report.geomean_ns, incumbent_ns)
        if slower is not None and not force:
            assert previous is not None
            return PromotionResult(
                False,
                f"revalidation measured {format_ms(result.report.geomean_ns)}, {slower:.1%} "
                f"slower than the incumbent {previous.id} ({format_ms(incumbent_ns)}"
                f"{_BESIDE if pair.incumbent else ''}); not promoted (--force commits it anyway)",
                slower_by=slower,
                revalidation=pair,
            )
        message = _commit_message(
            candidate_id, candidate.hypothesis, candidate.agent, by, pair, incumbent_ns, noise
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
        store.add_promotion(candidate_id, sha, geomean_ns, incumbent_ns, noise or {}, by)
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


_BESIDE = ", timed beside it"


def _beside(
    evaluator: Evaluator, store: Store, incumbent: Candidate, revalidation: StageResult, by: str
) -> StageResult:
    """The incumbent's full stage on the revalidation's seed, right after it; stored as one of
    the incumbent's evaluations, since its figure is as fresh as the candidate's."""
    with _as_file(incumbent.source) as path:
        run = evaluator.full(path, seed=revalidation.report.seed)
    store.add_evaluation(incumbent.id, by, 0, "full", run.report.to_dict(), run.spec_means_ns)
    return run


def _slower_by(new: float | None, old: float | None) -> float | None:
    """How much slower the revalidation measured than the incumbent's figure; None if not."""
    if new is None or not old or new <= old:
        return None
    return new / old - 1


def sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _revalidate(evaluator: Evaluator, source: str, progress: Progress | None) -> StageResult:
    with _as_file(source) as path:
        return evaluator.revalidate(path, progress)


@contextmanager
def _as_file(source: str) -> Iterator[Path]:
    """`source` as a file the judge can take, for as long as the block runs."""
    with tempfile.TemporaryDirectory(prefix="qrsup-promote-") as scratch:
        path = Path(scratch) / "candidate.py"
        path.write_text(source)
        yield path


def _commit_message(
    candidate_id: str,
    hypothesis: str,
    agent: str,
    by: str,
    pair: Revalidation,
    before: float | None,
    noise: dict[str, object] | None,
) -> str:
    result = pair.candidate
    geomean_ns = result.report.geomean_ns
    change = ""
    if geomean_ns and before:
        beside = "; the incumbent timed beside it" if pair.incumbent else ""
        change = f" (was {format_ms(before)}, {100 * (geomean_ns / before - 1):+.1f}%{beside})"
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
