"""One research agent's loop: take steering → propose → check → judge → decide → record.

Each iteration is one pass of `iterate`, which reads top to bottom. Steering is taken only at
the boundary between iterations; an evaluation in flight always finishes unless the process is
killed. The store is the source of truth; `events.jsonl` and `log.md` are appended after it and
reconciled against it on start, so a kill at any instant loses nothing that was recorded.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path

import git

from agents import inbox
from agents.beam import Placement, Scored, Slot, place, source_lines
from agents.evaluation import Comparison, Evaluator, StageResult
from agents.git_workspace import WorkspaceError, commit_to_branch, open_repo
from agents.goals import Goal, GoalError, parse_goal
from agents.heartbeat import Heartbeat
from agents.incumbent import Incumbent, bootstrap_incumbent
from agents.promotion import promote
from agents.proposal import (
    OutcomeSummary,
    Proposal,
    ProposalContext,
    ProposalFailure,
    Proposer,
)
from agents.records import (
    AgentLog,
    append_atomically,
    append_event,
    format_ms,
    log_entry,
    read_events,
)
from agents.session import AgentSpec, RunPaths, SessionConfig
from agents.store import CandidateRow, Store
from agents.tuner import source_hash
from kernels.judge.static_checks import check_candidate_file

MEMORY_SIZE = 12
PROMISE_MARGIN = {"exploit": 0.10, "near-miss": 0.5, "structural": 1.0, "cleanup": 0.05}
DEFAULT_NOISE = 0.02
IDLE_POLL_SECONDS = 1.0


@dataclass
class IterationRecord:
    """Everything one iteration produced; becomes one store row, one event, one log entry."""

    iteration: int
    hypothesis: str = ""
    candidate_id: str | None = None
    parent_id: str | None = None
    verdict: str = "proposal"
    decision: str = "rejected"
    reason: str = ""
    geomean_ns: float | None = None
    spec_means_ns: dict[int, float] | None = None
    usage: dict[str, float] | None = None
    evaluated: bool = False


class ResearchAgent:
    """A goal-driven loop over one proposer, sharing the session's store and beam."""

    def __init__(
        self,
        paths: RunPaths,
        session: SessionConfig,
        spec: AgentSpec,
        store: Store,
        proposer: Proposer,
        evaluator: Evaluator,
    ) -> None:
        self.paths = paths
        self.session = session
        self.spec = spec
        self.store = store
        self.proposer = proposer
        self.evaluator = evaluator
        self.name = spec.name
        self.log = AgentLog(paths.agent_log(spec.name))
        self.heartbeat = Heartbeat(paths.heartbeat(spec.name), spec.goal)
        self.goal: Goal = parse_goal(spec.goal)
        self.goal_reference: dict[int, float] = {}
        self.noise = DEFAULT_NOISE
        self.steering: list[str] = []
        self.advice: list[str] = []
        self.paused = False
        self.goal_met = False
        self.stop_requested = False
        self.started = time.monotonic()
        self.iteration = 0
        self.best_ns: float | None = None

    def run(self) -> int:
        """Reconcile, bootstrap, then iterate until stopped, out of budget or killed."""
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        self.paths.ensure(self.name)
        self.heartbeat.start()
        self._reconcile_records()
        self.iteration = self.store.last_iteration(self.name)
        self.log.write(
            f"agent {self.name} starting at iteration {self.iteration + 1}: "
            f"role {self.spec.role}, proposer {self.proposer.name}, goal '{self.goal.text}'"
        )
        self.heartbeat.update(state="evaluating", detail="incumbent", iteration=self.iteration)
        incumbent = bootstrap_incumbent(
            self.paths, self.session, self.store, self.evaluator, self.log
        )
        self.goal_reference = dict(incumbent.spec_means_ns)
        self.best_ns = self._own_best()
        while not self.stop_requested:
            self._take_messages()
            if self.stop_requested:
                break
            budget = self._budget_left()
            if budget:
                self._stop_for(budget)
                break
            if self.paused or self.goal_met:
                self.heartbeat.update(state="paused" if self.paused else "goal met")
                time.sleep(IDLE_POLL_SECONDS)
                continue
            self.iteration += 1
            self.iterate(self.iteration)
        self.heartbeat.update(state="stopped", detail="stopped")
        self.heartbeat.stop()
        self.log.write(f"agent {self.name} stopped after iteration {self.iteration}")
        return 0

    def iterate(self, iteration: int) -> None:
        record = IterationRecord(iteration)
        incumbent = self._incumbent()
        context = self._context(iteration, incumbent)
        record.parent_id = context.parent.candidate_id
        outcome = self._propose(context)
        if isinstance(outcome, ProposalFailure):
            record.reason = f"{outcome.kind}: {outcome.reason}"
            record.usage = _usage(outcome)
            if outcome.pause:
                self.paused = True
                record.decision = "paused"
            self._record(record)
            return
        record.hypothesis, record.usage = outcome.hypothesis, _usage(outcome)
        candidate = self._register(outcome, context.parent.candidate_id, record)
        if candidate is None:
            self._record(record)
            return
        record.candidate_id = candidate.id
        result = self._judge(candidate, incumbent)
        record.evaluated = True
        record.verdict = result.report.verdict
        record.reason = result.report.reason
        record.spec_means_ns = result.spec_means_ns
        record.geomean_ns = result.report.geomean_ns
        if result.passed and result.stage == "full":
            record.decision, record.reason = self._decide(candidate, result, incumbent)
        elif result.passed:
            record.decision = "not promising"
            record.reason = "quick stage passed but was not close enough to the incumbent"
        self._record(record)
        self._check_goal(record)

    def _context(self, iteration: int, incumbent: Incumbent) -> ProposalContext:
        parent_row = self._parent_row(incumbent)
        return ProposalContext(
            agent=self.name,
            role=self.spec.role,
            goal=self.goal.text,
            iteration=iteration,
            parent=parent_row.as_parent(),
            incumbent=incumbent.row.as_parent(),
            memory=self._memory(),
            steering=tuple(self.steering),
            advisor_ideas=tuple(self.advice),
            profile_summary=_read_text(self.paths.profile(self.name)),
            spec_labels=tuple(s.label for s in self.evaluator.suite.benchmarks),
            work_dir=self.paths.work(self.name),
        )

    def _propose(self, context: ProposalContext) -> Proposal | ProposalFailure:
        self.heartbeat.update(state="proposing", iteration=context.iteration, detail="")
        self.log.write(f"it {context.iteration}: proposing from {context.parent.candidate_id}")
        outcome = self.proposer.propose(context)
        if isinstance(outcome, Proposal):
            self.steering.clear()
            self.advice.clear()
            if outcome.transcript:
                self.log.write(outcome.transcript)
        return outcome

    def _register(
        self, proposal: Proposal, parent_id: str, record: IterationRecord
    ) -> CandidateRow | None:
        """Static checks and dedupe; a duplicate is never evaluated again."""
        digest = source_hash(proposal.source)
        existing = self.store.candidate_by_hash(digest)
        if existing is not None:
            record.verdict, record.decision = "duplicate", "skipped"
            record.candidate_id = existing.id
            record.reason = f"same source as {existing.id}; not evaluated again"
            return None
        candidate_id = f"c-{digest[:10]}"
        path = self.paths.work(self.name) / f"{candidate_id}.py"
        path.write_text(proposal.source)
        static = check_candidate_file(path, ("stream",))
        if not static.ok:
            record.verdict, record.reason = "rejected", static.reason
            return None
        row = CandidateRow(
            id=candidate_id,
            hash=digest,
            source=proposal.source,
            parent_id=parent_id,
            agent=self.name,
            role=self.spec.role,
            family=proposal.family,
            hypothesis=proposal.hypothesis,
            params=proposal.params,
            created_at=time.time(),
        )
        self.store.add_candidate(row)
        self._commit_candidate(row)
        return row

    def _judge(self, candidate: CandidateRow, incumbent: Incumbent) -> StageResult:
        """Quick stage; the full stage only when quick passes and looks promising."""
        path = self.paths.work(self.name) / f"{candidate.id}.py"
        self.heartbeat.update(state="evaluating", candidate=candidate.id, detail="quick")
        self.log.write(f"it {self.iteration}: judging {candidate.id}: {candidate.hypothesis}")
        quick = self.evaluator.quick(path, self._progress("quick"))
        self.store.add_evaluation(
            candidate.id,
            self.name,
            self.iteration,
            "quick",
            quick.report.to_dict(),
            quick.spec_means_ns,
        )
        if not quick.passed or not self._promising(quick, incumbent):
            return quick
        self.heartbeat.update(detail="full")
        full = self.evaluator.full(path, self._progress("full"))
        self.store.add_evaluation(
            candidate.id,
            self.name,
            self.iteration,
            "full",
            full.report.to_dict(),
            full.spec_means_ns,
        )
        return full

    def _promising(self, quick: StageResult, incumbent: Incumbent) -> bool:
        indices = self.evaluator.quick_indices
        mine = quick.geomean_over(indices)
        theirs = incumbent.geomean_over(indices)
        if mine is None or theirs is None:
            return True
        return mine <= theirs * (1.0 + PROMISE_MARGIN[self.spec.role])

    def _decide(
        self, candidate: CandidateRow, full: StageResult, incumbent: Incumbent
    ) -> tuple[str, str]:
        """Place the candidate in the beam; promote it if it beats the incumbent beyond noise."""
        scored = _scored(candidate.id, candidate.family, full, candidate.source)
        placement = place(
            scored, self._beam_slots(), incumbent.scored, self.noise, self.iteration, self.spec.role
        )
        if placement.role is None:
            return "rejected", placement.reason
        protected = (
            self.iteration + self.session.structural_protection
            if placement.role == "structural"
            else 0
        )
        self.store.set_beam(placement.role, candidate.id, full.report.geomean_ns, protected)
        if full.report.geomean_ns is not None and (
            self.best_ns is None or full.report.geomean_ns < self.best_ns
        ):
            self.best_ns = full.report.geomean_ns
        beats = (
            full.report.geomean_ns is not None
            and incumbent.geomean_ns is not None
            and full.report.geomean_ns < incumbent.geomean_ns * (1 - self.noise)
        )
        if placement.role == "exploit" and beats and self.session.auto_promote:
            return self._try_promotion(candidate, incumbent, placement)
        return f"beam {placement.role}", placement.reason

    def _try_promotion(
        self, candidate: CandidateRow, incumbent: Incumbent, placement: Placement
    ) -> tuple[str, str]:
        self.heartbeat.update(detail="interleaved re-timing")
        challenger = self.paths.work(self.name) / f"{candidate.id}.py"
        incumbent_path = self.paths.work(self.name) / f"{incumbent.row.id}.py"
        incumbent_path.write_text(incumbent.row.source)
        comparison = self.evaluator.interleaved(
            incumbent_path, challenger, progress=self._progress("re-timing")
        )
        if not isinstance(comparison, Comparison):
            return f"beam {placement.role}", f"re-timing failed: {comparison.report.reason}"
        self.noise = max(DEFAULT_NOISE / 2, comparison.noise)
        append_event(
            self.paths.events(self.name),
            {"event": "noise", "agent": self.name, **comparison.to_dict()},
        )
        if not comparison.significant:
            return f"beam {placement.role}", (
                f"gain {comparison.gain:.1%} within noise {comparison.noise:.1%}; not promoted"
            )
        self.heartbeat.update(detail="promoting")
        result = promote(
            self.session.workspace,
            self.paths,
            self.store,
            self.evaluator,
            candidate.id,
            by=f"rule ({self.name})",
            noise=comparison.to_dict(),
            progress=self._progress("revalidate"),
        )
        if result.ok:
            self.log.write(f"it {self.iteration}: {result.message}")
            return (
                "promoted",
                f"gain {comparison.gain:.1%} beyond noise {comparison.noise:.1%}; {result.message}",
            )
        return f"beam {placement.role}", f"promotion refused: {result.message}"

    def _record(self, record: IterationRecord) -> None:
        """Store first (the source of truth), then the event line, then log.md for evaluations."""
        self.store.record_iteration(
            self.name,
            record.iteration,
            record.candidate_id,
            record.verdict,
            record.decision,
            record.hypothesis,
            record.reason,
            record.geomean_ns,
            record.usage or {},
        )
        event = self._event(record)
        append_event(self.paths.events(self.name), event)
        if record.evaluated:
            append_atomically(self.session.workspace / "log.md", log_entry(event))
        self.log.write(
            f"it {record.iteration}: {record.verdict} → {record.decision} · "
            f"{format_ms(record.geomean_ns)} · {record.hypothesis or '—'}"
            + (f"\n  reason: {record.reason.splitlines()[0][:200]}" if record.reason else "")
        )
        self.heartbeat.update(
            state="idle", last_verdict=record.verdict, best_geomean_ns=self.best_ns, detail=""
        )

    def _event(self, record: IterationRecord) -> dict[str, object]:
        return {
            "event": "iteration",
            "agent": self.name,
            "role": self.spec.role,
            "iteration": record.iteration,
            "candidate_id": record.candidate_id,
            "parent_id": record.parent_id,
            "hypothesis": record.hypothesis,
            "verdict": record.verdict,
            "decision": record.decision,
            "geomean_ns": record.geomean_ns,
            "spec_means_ns": record.spec_means_ns or {},
            "reason": record.reason,
            "goal": self.goal.text,
            "usage": record.usage or {},
            "evaluated": record.evaluated,
        }

    def _reconcile_records(self) -> None:
        """Append the events and log entries a kill may have cut off after the store write."""
        logged = {
            e.get("iteration")
            for e in read_events(self.paths.events(self.name))
            if e.get("event") == "iteration"
        }
        for row in reversed(self.store.iterations(self.name)):
            if row["iteration"] in logged:
                continue
            event = {
                "event": "iteration",
                "agent": self.name,
                "role": self.spec.role,
                "iteration": row["iteration"],
                "candidate_id": row["candidate_id"],
                "hypothesis": row["hypothesis"],
                "verdict": row["outcome"],
                "decision": row["decision"],
                "geomean_ns": row["geomean_ns"],
                "reason": row["reason"],
                "reconciled": True,
            }
            append_event(self.paths.events(self.name), event)
            self.log.write(f"it {row['iteration']}: record restored from the store after a restart")

    def _take_messages(self) -> None:
        """The iteration boundary: every pending message is applied and recorded exactly once."""
        for path, message in inbox.pending(self.paths.inbox(self.name)):
            if self.store.consume_steering(
                message.id, self.name, message.kind, message.text, self.iteration
            ):
                self._apply(message)
                append_event(
                    self.paths.events(self.name),
                    {
                        "event": "steering",
                        "agent": self.name,
                        "kind": message.kind,
                        "text": message.text,
                        "sender": message.sender,
                        "message_id": message.id,
                        "iteration": self.iteration,
                    },
                )
            inbox.archive(path)

    def _apply(self, message: inbox.Message) -> None:
        self.log.write(f"message ({message.kind}) from {message.sender}: {message.text}")
        if message.kind == "steer":
            self.steering.append(message.text)
            self.goal_met = False
        elif message.kind == "advisor":
            self.advice.append(message.text)
        elif message.kind == "goal":
            try:
                self.goal = parse_goal(message.text)
            except GoalError as exc:
                self.log.write(f"goal not changed: {exc}")
                return
            self.goal_met = False
            self.goal_reference = dict(self._incumbent().spec_means_ns)
            self.heartbeat.update(goal=self.goal.text)
        elif message.kind == "pause":
            self.paused = True
        elif message.kind == "resume":
            self.paused = False
        elif message.kind == "stop":
            self.stop_requested = True

    def _check_goal(self, record: IterationRecord) -> None:
        if not record.spec_means_ns or record.verdict != "pass":
            return
        status = self.goal.evaluate(
            record.spec_means_ns, self.goal_reference, self.evaluator.suite.benchmarks
        )
        if status.met:
            self.goal_met = True
            self.heartbeat.update(state="goal met")
            append_event(
                self.paths.events(self.name),
                {
                    "event": "goal_met",
                    "agent": self.name,
                    "goal": self.goal.text,
                    "candidate_id": record.candidate_id,
                    "value_ns": status.value_ns,
                    "target_ns": status.target_ns,
                    "iteration": record.iteration,
                },
            )
            value, target = format_ms(status.value_ns), format_ms(status.target_ns)
            self.log.write(f"goal met by {record.candidate_id}: {value} < {target}; idling")

    def _budget_left(self) -> str:
        if self.spec.max_iterations and self.iteration >= self.spec.max_iterations:
            return f"iteration budget of {self.spec.max_iterations} used"
        if self.spec.max_seconds and time.monotonic() - self.started > self.spec.max_seconds:
            return f"time budget of {self.spec.max_seconds:g} s used"
        return ""

    def _stop_for(self, reason: str) -> None:
        append_event(
            self.paths.events(self.name), {"event": "stopped", "agent": self.name, "reason": reason}
        )
        self.log.write(f"stopping: {reason}")

    def _request_stop(self, signum: int, frame: object) -> None:
        if self.stop_requested:
            raise KeyboardInterrupt
        self.stop_requested = True

    def _progress(self, stage: str):
        def report(frame: dict) -> None:
            if "index" in frame:
                self.heartbeat.update(
                    detail=f"{stage}: {frame['phase']} {frame['index'] + 1}/{frame['total']}"
                )

        return report

    def _incumbent(self) -> Incumbent:
        return Incumbent.load(self.store)

    def _beam_slots(self) -> dict[str, Slot]:
        slots = {}
        for role, row in self.store.beam().items():
            candidate = self.store.candidate(row["candidate_id"])
            if candidate is None or candidate.geomean_ns is None:
                continue
            scored = Scored(
                candidate.id,
                candidate.family,
                candidate.geomean_ns,
                candidate.spec_means_ns or {},
                source_lines(candidate.source),
            )
            slots[role] = Slot(scored, int(row["protected_until"] or 0))
        return slots

    def _parent_row(self, incumbent: Incumbent) -> CandidateRow:
        """The agent's role decides its parent: its own beam slot if held, else the incumbent."""
        slot = self.store.beam().get(self.spec.role)
        if slot is not None:
            row = self.store.candidate(slot["candidate_id"])
            if row is not None and (
                self.spec.role != "structural" or row.family == self.spec.family
            ):
                return row
        if self.spec.family != incumbent.row.family:
            return self._family_seed(incumbent)
        return incumbent.row

    def _family_seed(self, incumbent: Incumbent) -> CandidateRow:
        """A structural agent starts from its own family's best, or from nothing of it yet."""
        rows = [c for c in self.store.candidates() if c.family == self.spec.family and c.geomean_ns]
        if rows:
            return min(rows, key=lambda c: c.geomean_ns or float("inf"))
        return replace(
            incumbent.row,
            source="",
            family=self.spec.family,
            hypothesis="(no candidate of this family yet)",
        )

    def _memory(self) -> tuple[OutcomeSummary, ...]:
        return self.store.outcomes(self.name, limit=MEMORY_SIZE)

    def _own_best(self) -> float | None:
        values = [
            r["geomean_ns"]
            for r in self.store.iterations(self.name)
            if r["geomean_ns"] and r["outcome"] == "pass"
        ]
        return min(values) if values else None

    def _commit_candidate(self, row: CandidateRow) -> None:
        """Keep every candidate on the agent's own branch; a workspace without git skips this."""
        try:
            repo = open_repo(self.session.workspace)
            branch = f"qrsup/{self.session.name}/{self.name}"
            message = f"{row.id}: {row.hypothesis}\n\nparent: {row.parent_id}"
            commit_to_branch(repo, branch, row.source, message)
        except (WorkspaceError, git.GitError, OSError) as exc:
            self.log.write(f"could not commit {row.id} to the agent branch: {exc}")


def _usage(outcome: Proposal | ProposalFailure) -> dict[str, float]:
    usage = outcome.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": usage.cost_usd,
    }


def _scored(candidate_id: str, family: str, result: StageResult, source: str) -> Scored:
    return Scored(
        candidate_id,
        family,
        result.report.geomean_ns or float("inf"),
        result.spec_means_ns,
        source_lines(source),
    )


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
