"""Deciding on a fully judged candidate: a beam slot, and a promotion only beyond the noise."""

from __future__ import annotations

from collections.abc import Callable

from agents.beam import Scored, Slot, place, source_lines
from agents.evaluation import Comparison, Evaluator, StageResult
from agents.incumbent import Incumbent
from agents.promotion import promote
from agents.recorder import Recorder
from agents.session import RunPaths, SessionConfig
from agents.store import CandidateRow, Store

DEFAULT_NOISE = 0.02
Progress = Callable[[str], Callable[[dict], None]]


class Decider:
    """Holds the session's current noise estimate, learnt from interleaved re-timings."""

    def __init__(
        self,
        paths: RunPaths,
        session: SessionConfig,
        store: Store,
        evaluator: Evaluator,
        recorder: Recorder,
        progress: Progress,
    ) -> None:
        self.paths = paths
        self.session = session
        self.store = store
        self.evaluator = evaluator
        self.recorder = recorder
        self.progress = progress
        self.noise = DEFAULT_NOISE

    def decide(
        self,
        candidate: CandidateRow,
        full: StageResult,
        incumbent: Incumbent,
        role: str,
        iteration: int,
    ) -> tuple[str, str]:
        """(decision, reason): a beam slot, a promotion, or a rejection with every slot's reason."""
        scored = scored_candidate(candidate, full)
        placement = place(scored, self.beam_slots(), incumbent.scored, self.noise, iteration, role)
        if placement.role is None:
            return "rejected", placement.reason
        protected = (
            iteration + self.session.structural_protection if placement.role == "structural" else 0
        )
        self.store.set_beam(placement.role, candidate.id, full.report.geomean_ns, protected)
        decision = f"beam {placement.role}"
        if placement.role != "exploit" or not self.session.auto_promote:
            return decision, placement.reason
        if incumbent.geomean_ns is None or scored.geomean_ns >= incumbent.geomean_ns * (
            1 - self.noise
        ):
            return decision, placement.reason
        return self._promotion_grade(candidate, incumbent, decision)

    def _promotion_grade(
        self, candidate: CandidateRow, incumbent: Incumbent, decision: str
    ) -> tuple[str, str]:
        """Re-time incumbent and challenger interleaved; promote only a gain beyond the noise."""
        work = self.paths.work(self.recorder.agent)
        incumbent_path = work / f"{incumbent.row.id}.py"
        incumbent_path.write_text(incumbent.row.source)
        challenger = work / f"{candidate.id}.py"
        comparison = self.evaluator.interleaved(
            incumbent_path, challenger, progress=self.progress("re-timing")
        )
        if not isinstance(comparison, Comparison):
            failed = comparison.report.candidate == str(challenger.resolve())
            side = "challenger" if failed else "incumbent"
            return decision, f"re-timing failed on the {side}'s run: {comparison.report.reason}"
        self.noise = max(DEFAULT_NOISE / 2, comparison.noise)
        self.recorder.event(
            {"event": "noise", "candidate_id": candidate.id, **comparison.to_dict()}
        )
        if not comparison.significant:
            return (
                decision,
                f"gain {comparison.gain:.1%} within noise {comparison.noise:.1%}; not promoted",
            )
        result = promote(
            self.session.workspace,
            self.paths,
            self.store,
            self.evaluator,
            candidate.id,
            by=f"rule ({self.recorder.agent})",
            noise=comparison.to_dict(),
            progress=self.progress("revalidate"),
        )
        if not result.ok:
            return decision, f"promotion refused: {result.message}"
        gain = f"gain {comparison.gain:.1%} beyond noise {comparison.noise:.1%}"
        return "promoted", f"{gain}; {result.message}"

    def beam_slots(self) -> dict[str, Slot]:
        slots = {}
        for role, row in self.store.beam().items():
            candidate = self.store.candidate(row["candidate_id"])
            if candidate is not None and candidate.geomean_ns is not None:
                holder = Scored(
                    candidate.id,
                    candidate.family,
                    candidate.geomean_ns,
                    candidate.spec_means_ns or {},
                    source_lines(candidate.source),
                )
                slots[role] = Slot(holder, int(row["protected_until"] or 0))
        return slots


def scored_candidate(candidate: CandidateRow, full: StageResult) -> Scored:
    geomean_ns = full.report.geomean_ns or float("inf")
    return Scored(
        candidate.id,
        candidate.family,
        geomean_ns,
        full.spec_means_ns,
        source_lines(candidate.source),
    )
