"""Deciding on a fully judged candidate: a beam slot, and a promotion only beyond the noise."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from qrsup.agents.affected_specs import AffectedSpecs
from qrsup.agents.beam import Scored, Slot, place, source_lines
from qrsup.agents.evaluation import (
    Comparison,
    Evaluator,
    RetimingFailure,
    StageResult,
    noise_over_share,
)
from qrsup.agents.incumbent import SETTLE_LOCK, Incumbent, settle_incumbent, time_again
from qrsup.agents.promotion import promote
from qrsup.agents.recorder import Recorder
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.agents.session_noise import DEFAULT_NOISE, latest_suite_noise, noise_events
from qrsup.agents.store import Store
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.schema import Candidate, Decision, Progress, Verdict

StageProgress = Callable[[str], Progress]  # a progress callback for the named stage
Focus = Callable[[Candidate, Candidate], AffectedSpecs | None]  # where two candidates differ


@dataclass(frozen=True)
class Decided:
    """What became of a fully judged candidate; `verdict` is a failed re-timing run's, if any."""

    decision: Decision
    reason: str
    verdict: Verdict = Verdict.PASS


class Decider:
    """Decides against the session's noise, which every agent's interleaved re-timings teach."""

    def __init__(
        self,
        paths: RunPaths,
        session: SessionConfig,
        store: Store,
        evaluator: Evaluator,
        recorder: Recorder,
        progress: StageProgress,
        focus: Focus | None = None,
    ) -> None:
        self.started_at = time.time()  # the incumbent is settled once after this (settle)
        self.paths = paths
        self.focus = focus  # the specs a re-timing needs, where that is known
        self.session = session
        self.store = store
        self.evaluator = evaluator
        self.recorder = recorder
        self.progress = progress

    @property
    def noise(self) -> float:
        """The session's latest whole-suite re-timing's noise (any agent's, before a restart
        too), never below half the assumed default; the default until one has run."""
        latest = latest_suite_noise(noise_events(self.paths.every_events()))
        return max(DEFAULT_NOISE / 2, float(latest["noise"])) if latest else DEFAULT_NOISE

    def decide(
        self,
        candidate: Candidate,
        full: StageResult,
        role: str,
        iteration: int,
    ) -> Decided:
        """A beam slot, a promotion, or a rejection with every slot's reason, against the
        incumbent as the store holds it now (settled, and refreshed by any agent's re-timing).

        A would-be exploit that beats the incumbent is re-timed before it takes the slot: if its
        own re-timing run fails (fresh seeds can catch what the stages did not), it is rejected
        with that run's verdict and the slot keeps its holder. So is one the re-timing finds no
        faster than the incumbent: its full stage beat a stale figure, and as the slot's holder it
        would raise the bar for every later candidate (on the CPU one entered 23% ahead of the
        incumbent's bootstrap figure and re-timed 5.3% behind it). The first decision since this
        agent started times the incumbent again under the full rule, unless another agent has
        (`settle_incumbent`), so that no slot compares against a figure taken while the agents
        started, or in an earlier launch.

        Every figure compared is from the device the candidate's full stage ran on: a holder
        never judged there is timed there first (`settle_holder`).
        """
        device = full.report.device_name or None
        incumbent = self.settle(iteration, device)
        scored = scored_candidate(candidate, full)
        noise = geomean_noise(
            self.noise, full, incumbent.row.id, len(self.evaluator.suite.benchmarks)
        )
        slots = self.beam_slots(device, iteration)
        placement = place(scored, slots, incumbent.scored, noise, iteration, role)
        if placement.role is None:
            return Decided(Decision.REJECTED, f"{placement.reason} (geomean noise {noise:.2%})")
        retimed = None
        if placement.role == "exploit" and self._contends(scored, incumbent, noise):
            retimed = self._retime(candidate, incumbent)
            if isinstance(retimed, Comparison):
                self._refresh(incumbent, retimed, iteration)
                self._learn_noise(candidate, retimed)
                if retimed.gain <= 0:
                    said = retimed.describe("against")
                    reason = f"exploit: no faster than the incumbent re-timed beside it ({said})"
                    return Decided(Decision.REJECTED, reason)
            if isinstance(retimed, RetimingFailure) and retimed.side == "challenger":
                report = retimed.result.report
                reason = f"its re-timing run failed: {report.reason}"
                return Decided(Decision.REJECTED, reason, Verdict(report.verdict))
        protected = (
            iteration + self.session.structural_protection if placement.role == "structural" else 0
        )
        self.store.set_beam(placement.role, candidate.id, full.geomean_ns, protected)
        decision = Decision.beam(placement.role)
        if retimed is None:
            return Decided(decision, placement.reason)
        if isinstance(retimed, RetimingFailure):
            why = retimed.result.report.reason
            return Decided(decision, f"not promoted: the incumbent's re-timing run failed: {why}")
        return self._promotion_grade(candidate, retimed, decision)

    def settle(self, iteration: int, device: str | None = None) -> Incumbent:
        """The incumbent, timed again under the full rule unless an agent has since this one
        started (`settle_incumbent`), with its figures on `device`. The loop settles it before
        a full stage too, so that a focused stage takes the incumbent's settled figures for the
        specs it does not time."""
        progress = self.progress("incumbent")
        return settle_incumbent(
            self.recorder, self.evaluator, iteration, self.started_at, device, progress
        )

    def _contends(self, scored: Scored, incumbent: Incumbent, noise: float) -> bool:
        """Promotion by rule is on, and the candidate beats the incumbent beyond the noise: the
        interleaved re-timing that follows measures the gain and its noise afresh."""
        if not self.session.auto_promote or incumbent.geomean_ns is None:
            return False
        return scored.geomean_ns < incumbent.geomean_ns * (1 - noise)

    def _retime(self, candidate: Candidate, incumbent: Incumbent) -> Comparison | RetimingFailure:
        """Incumbent and challenger re-timed interleaved on this agent's GPU."""
        incumbent_path = self.paths.source_file(self.recorder.agent, incumbent.row)
        challenger = self.paths.work(self.recorder.agent) / f"{candidate.id}.py"
        differ = self.focus(candidate, incumbent.row) if self.focus else None
        return self.evaluator.interleaved(
            incumbent_path,
            challenger,
            progress=self.progress("re-timing"),
            benchmarks=differ.benchmarks if differ else (),
        )

    def _refresh(self, incumbent: Incumbent, retimed: Comparison, iteration: int) -> None:
        """The incumbent's re-timed figures become one more of its full-stage evaluations, its
        other specs' standing: a slow run at bootstrap (on the H200 one put 14.3 ms on a 7.2 ms
        spec) would otherwise hold the goal's and every later decision's reference, and the
        same stale figure would make each candidate there look faster and be re-timed again.
        A candidate is known by its best full evaluation, so a refresh never makes it slower."""
        row, run = incumbent.row, retimed.incumbent_run
        if run is None or not row.spec_means_ns:
            return
        refreshed = run.standing_for(row.id, row.spec_means_ns)
        refreshed.store(self.store, row.id, self.recorder.agent, iteration)

    def _learn_noise(self, candidate: Candidate, comparison: Comparison) -> None:
        """The re-timing's noise, for every agent's later decisions (`noise`): only a whole
        suite's teaches the session its noise, since full stages compare whole suites."""
        self.recorder.event(
            {"event": "noise", "candidate_id": candidate.id, **comparison.to_dict()}
        )

    def _promotion_grade(
        self, candidate: Candidate, comparison: Comparison, decision: Decision
    ) -> Decided:
        """Promote only a gain beyond the noise measured in the same re-timing."""
        if not comparison.significant:
            reason = f"{comparison.describe('within')}; not promoted"
            return Decided(decision, reason)
        result = promote(
            self.session.workspace,
            self.paths,
            self.store,
            self.evaluator,
            candidate.id,
            by=f"rule ({self.recorder.agent})",
            noise=comparison.to_dict(),
            progress=self.progress("revalidate"),
            force=True,  # the interleaved re-timing just measured the gain beyond the noise
        )
        if not result.ok:
            return Decided(decision, f"promotion refused: {result.message}")
        return Decided(Decision.PROMOTED, f"{comparison.describe('beyond')}; {result.message}")

    def beam_slots(self, device: str | None = None, iteration: int = 0) -> dict[str, Slot]:
        """The slots' holders with their figures; on `device`, each holder timed there first
        if it never was (`settle_holder`), for a decision at `iteration`."""
        slots = {}
        for role, slot in self.store.beam().items():
            candidate = self.store.candidate(slot.candidate_id, device)
            if candidate is not None and candidate.verdict is None and device is not None:
                candidate = self.settle_holder(candidate, role, device, iteration)
            if candidate is not None and candidate.geomean_ns is not None:
                holder = Scored(
                    candidate.id,
                    candidate.family,
                    candidate.geomean_ns,
                    candidate.spec_means_ns or {},
                    source_lines(candidate.source),
                )
                slots[role] = Slot(holder, slot.protected_until)
        return slots

    def settle_holder(
        self, holder: Candidate, role: str, device: str, iteration: int
    ) -> Candidate | None:
        """The holder with figures on `device`, fully judged there now unless an agent has
        since it was read (one judged there that failed stays without figures there). A
        workspace relaunched on another machine holds its slots by figures from the first; a
        challenger timed here would be judged against them."""
        with file_lock(self.paths.root / SETTLE_LOCK):
            row = self.store.candidate(holder.id, device)
            if row is not None and row.verdict is None:  # no full stage there yet
                what = f"the {role} holder {holder.id}"
                why = f"it was never judged on this device ({device})"
                progress = self.progress("holder")
                time_again(self.recorder, self.evaluator, row, what, why, iteration, progress)
                row = self.store.candidate(holder.id, device)
        return row


def scored_candidate(candidate: Candidate, full: StageResult) -> Scored:
    geomean_ns = full.geomean_ns or float("inf")
    return Scored(
        candidate.id,
        candidate.family,
        geomean_ns,
        full.spec_means_ns,
        source_lines(candidate.source),
    )


def geomean_noise(noise: float, full: StageResult, incumbent_id: str, specs: int) -> float:
    """The noise a geomean gain over the incumbent must beat, the session's being `noise` over
    a suite of `specs` benchmark specs. A full stage that timed only the specs a change reaches
    stands on the incumbent's own figures for the others, which cancel: `noise` then applies to
    the timed specs, and the geomean moves by their ratio to the power of their share, as in an
    interleaved re-timing (Comparison). Against the whole suite's noise, an H200 loop rejected a
    15% gain on 2×4096 alone: it moved the geomean 1.3%, inside 2%."""
    inherited = full.inherited
    if inherited is None or inherited.parent_id != incumbent_id or not specs:
        return noise
    return noise_over_share(noise, 1.0 - len(inherited.specs) / specs)
