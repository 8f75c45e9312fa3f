"""One research agent's loop: take steering → propose → check → judge → decide → record.

Each iteration is one pass of `iterate`, which reads top to bottom. Steering is taken only at
the boundary between iterations; an evaluation in flight always finishes unless the process is
killed. The store is the source of truth; `events.jsonl` and `log.md` are appended after it and
reconciled against it on start, so a kill at any instant loses nothing that was recorded.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType

import git
from qrsup.agents import inbox
from qrsup.agents.advisor import Advisor
from qrsup.agents.affected_specs import AffectedSpecs
from qrsup.agents.best_figures import BestFigures, show_earlier_figures
from qrsup.agents.decision import Decider, Focus
from qrsup.agents.evaluation import Evaluator, StageResult, geomean_over
from qrsup.agents.fault_points import fault_point
from qrsup.agents.git_workspace import WorkspaceError
from qrsup.agents.guidance import Guidance
from qrsup.agents.heartbeat import Heartbeat
from qrsup.agents.hooks import StatusHook
from qrsup.agents.incumbent import Incumbent, bootstrap_incumbent
from qrsup.agents.lifecycle import record_death
from qrsup.agents.phase_focus import latest_stage_shares
from qrsup.agents.precompile import Compilation, Precompiler
from qrsup.agents.proposal import (
    ParentCandidate,
    Proposal,
    ProposalContext,
    ProposalFailure,
    Proposer,
)
from qrsup.agents.proposed_ahead import ProposedAhead
from qrsup.agents.quota import clock, model_of
from qrsup.agents.recorder import IterationDraft, Recorder
from qrsup.agents.records import format_ms
from qrsup.agents.recovery import commit_candidate, recover_branch, recover_promotion
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig
from qrsup.agents.spend import recorded_spend
from qrsup.agents.status_changes import StatusChanges
from qrsup.agents.steering import AgentState, current_budget, current_goal, take_messages
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.static_checks import CONTEST_FORBIDDEN_WORDS, check_candidate_file
from qrsup.kernels.profiling.candidate import profile_candidate, trace_path_for, write_latest
from qrsup.kernels.profiling.summary import ProfileSummary
from qrsup.kernels.schema import (
    Actor,
    Candidate,
    Comparison,
    Decision,
    EventKind,
    Progress,
    ProgressUpdate,
    Verdict,
    role,
)

MEMORY_SIZE = 12
FREE_RETRIES = 3  # a free proposer's tries for a point no other agent holds, per iteration
FRUITLESS_BEFORE_PAUSE = 5  # proposals in a row that gave no new candidate to judge
IDLE_POLL_SECONDS = 1.0


def compiles_beside(update: ProgressUpdate) -> bool:
    """Whether a compile started ahead may run at this point of a judge run: during a test spec
    that another test spec follows, and nowhere else. A hold takes effect only when the agent
    hears of the phase, after the referee has moved on; a compile let go during a phase that
    leads straight into timing (the load, the last test) ran into the first timed cycles. On
    the H200 (2026-12-02), let go during the load and every test, a compile in a fresh process
    (its first seconds spent importing) cost no honest candidate in 77; the warm compiler,
    which compiles at once, failed two judge runs of 49 on timing integrity, one of them the
    shipped kernel's own."""
    if update.phase != "test" or update.index is None or update.total is None:
        return False
    return update.index < update.total - 1


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
        advisor: Advisor,
        fallback: Proposer | None = None,
        hook: StatusHook | None = None,
        guidance: Path | None = None,
        focus: Callable[[Candidate], AffectedSpecs | None] | None = None,
        retime_focus: Focus | None = None,
        precompile: Precompiler | None = None,
    ) -> None:
        self.paths = paths
        self.focus = focus  # which specs a candidate's change can reach, where that is known
        self.precompile = precompile  # compiles a candidate's kernels before its judge run
        self.ahead: ProposedAhead | None = None  # the next proposal, made during a judge run
        self.compiling: Compilation | None = None  # its kernels, compiling meanwhile
        self.session = session
        self.spec = spec
        self.store = store
        self.proposer = proposer
        self.fallback = fallback  # asked while the proposer's model waits for quota
        self.evaluator = evaluator
        self.advisor = advisor
        self.name = spec.name
        self.recorder = Recorder(paths, store, session.workspace, spec.name, spec.role)
        self.log = self.recorder.log
        goal = current_goal(spec, store)
        self.heartbeat = Heartbeat(paths.heartbeat(spec.name), goal.text)
        self.decider = Decider(
            paths, session, store, evaluator, self.recorder, self._progress, retime_focus
        )
        self.state = AgentState(goal=goal, budget=current_budget(spec, store))
        spend = recorded_spend(store, paths.events(spec.name), spec.name)
        self.changes = StatusChanges(self.recorder.event, hook, spend, session.advisor_after)
        self.guidance = Guidance(guidance)
        self.started = time.monotonic()
        self.iteration = 0
        self.fruitless_in_a_row = 0
        self.best = BestFigures()
        self.isolation_warning = ""

    def run(self) -> int:
        """Reconcile, bootstrap, then iterate until stopped, out of budget or killed."""
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        self.paths.ensure(self.name)
        # A death nobody recorded (the supervisor was not watching): record it before this
        # start's heartbeat replaces the last one. A beat of this process's own pid is the
        # supervisor's mark of this start, which recorded any death before it.
        how = "found at its next start; exit status unknown"
        role, me = self.spec.role, os.getpid()
        record_death(self.paths, self.store, self.name, role, how, Actor.AGENT, alive_pid=me)
        self._recover()
        self.heartbeat.start()
        self.recorder.reconcile()
        self.iteration = self.store.last_iteration(self.name)
        # A restarted agent's row keeps its figures at once, not only after its first iteration
        # here: the incumbent's bootstrap alone can take minutes.
        self.best = show_earlier_figures(self.store.iterations(self.name), self.heartbeat)
        self.log.write(
            f"agent {self.name} starting at iteration {self.iteration + 1}: role {self.spec.role}, "
            f"proposer {self.proposer.name}, goal '{self.state.goal.text}'"
        )
        self.heartbeat.update(state="evaluating", detail="incumbent", iteration=self.iteration)
        incumbent = bootstrap_incumbent(
            self.paths,
            self.session,
            self.store,
            self.evaluator,
            self.log,
            self._progress("incumbent"),
        )
        self.state.goal_reference = incumbent.row.id
        self._see_incumbent(incumbent)
        while True:
            take_messages(
                self.paths,
                self.store,
                self.recorder,
                self.state,
                self.iteration,
                self.store.incumbent_id,
            )
            if self.heartbeat.beat.goal != self.state.goal.text:  # a person's goal, shown at once
                self.heartbeat.update(goal=self.state.goal.text)
            if self.state.stop_requested:
                break
            if budget := self._budget_used():
                self.recorder.event({"event": "stopped", "reason": budget})
                self.log.write(f"stopping: {budget}")
                break
            if not self.state.paused and (over := self.state.budget.exceeded(self.changes.spend)):
                self._pause_for_budget(over)
            if self.state.paused or self.state.goal_met:
                self.fruitless_in_a_row = 0  # after a pause, the count starts afresh
                self._idle("paused" if self.state.paused else "goal met")
                continue
            if self._proposer_now() is None:
                until = clock(self.changes.quota.earliest() or 0.0)
                self._idle("waiting", f"for quota until {until}")
                continue
            self.iteration += 1
            self.iterate(self.iteration)
        self._drop_ahead()
        self.heartbeat.update(state="stopped", detail="stopped")
        self.heartbeat.stop()
        self.log.write(f"agent {self.name} stopped after iteration {self.iteration}")
        return 0

    def iterate(self, iteration: int) -> None:
        record = IterationDraft(iteration)
        incumbent = Incumbent.load(self.store)
        context = self._context(iteration, incumbent)
        record.parent_id = context.parent.candidate_id
        outcome = self._take_ahead(context) or self._propose(context)
        if isinstance(outcome, ProposalFailure) and outcome.kind == "quota":
            self.iteration = iteration - 1  # a wait for quota, not an attempt: nothing was tried
            return
        record.usage = _usage(outcome)
        if isinstance(outcome, ProposalFailure):
            record.reason = f"{outcome.kind}: {outcome.reason}"
            if outcome.pause:
                self.state.paused = True
                record.decision = Decision.PAUSED
            else:
                self._count_fruitless(record, fruitless=True)
            self._finish(record)
            return
        record.hypothesis = outcome.hypothesis
        candidate = self._register(outcome, context.parent.candidate_id, record)
        retries = FREE_RETRIES if self.proposer.free else 0
        while candidate is None and record.verdict == Verdict.DUPLICATE and retries:
            retries -= 1
            # Agents proposing at once can meet on one point: a free proposer tries another.
            self.log.write(f"it {iteration}: {record.reason}; proposing again")
            outcome = self._propose(context)
            if not isinstance(outcome, Proposal):
                break
            record = IterationDraft(iteration, outcome.hypothesis, parent_id=record.parent_id)
            candidate = self._register(outcome, context.parent.candidate_id, record)
        self._count_fruitless(record, fruitless=candidate is None)
        if candidate is None:
            self._finish(record)
            return
        record.candidate_id = candidate.id
        record.compile_wait_s, overran_patience = self._compile(candidate)
        if overran_patience is not None:
            self._set_aside_unjudged(record, overran_patience)
            return
        self._propose_ahead(incumbent)
        result, record.comparison = self._judge(candidate, incumbent)
        self._hold_ahead(False)  # the judge is done timing: the next candidate compiles on
        record.evaluated = True
        self._note_isolation(result.report)
        record.verdict, record.reason = Verdict(result.report.verdict), result.report.reason
        record.spec_means_ns, record.geomean_ns = result.spec_means_ns, result.geomean_ns
        if record.verdict == Verdict.TAMPERED:
            self._pause_session(result.report.reason)
        elif result.passed and result.stage == "full":
            self.heartbeat.update(detail="deciding")
            decided = self.decider.decide(candidate, result, self.spec.role, iteration)
            record.decision, record.reason = decided.decision, decided.reason
            record.verdict = decided.verdict
            if record.decision != Decision.REJECTED:
                self.changes.passed(self.store, candidate.id, result.geomean_ns)
                worst = worst_spec(result.spec_means_ns, incumbent.spec_means_ns)
                self._profile(candidate, worst, why="a beam entry, where it trails most")
        elif result.passed and record.comparison is not None:
            record.decision = Decision.NOT_PROMISING
            margin = f"{record.comparison.margin:.0%}"
            record.reason = f"quick stage more than {margin} slower: {record.comparison.describe()}"
        self.best.note(record.verdict, record.decision, record.geomean_ns)
        self._finish(record)
        self._check_goal(record, result.report.device_name or None)
        history = self.store.outcomes(self.name)
        self.changes.stall(history, self.decider.noise)
        self._consult_advisor(context, history)

    def _count_fruitless(self, record: IterationDraft, fruitless: bool) -> None:
        """A proposer that keeps giving nothing new to judge (repeats, edits that change
        nothing, answers that do not apply) is paused until a person steers or resumes it: a
        model's or a CLI's every try costs a call, and even a free one would spin through
        iterations and flood the log."""
        self.fruitless_in_a_row = self.fruitless_in_a_row + 1 if fruitless else 0
        if self.fruitless_in_a_row >= FRUITLESS_BEFORE_PAUSE:
            self.fruitless_in_a_row = 0
            self.state.paused = True
            record.decision = Decision.PAUSED
            record.reason += (
                f"; {FRUITLESS_BEFORE_PAUSE} proposals in a row gave nothing new to judge: "
                "paused until steered or resumed"
            )

    def _context(self, iteration: int, incumbent: Incumbent) -> ProposalContext:
        parent = self._parent_row(incumbent)
        shares, profiled = latest_stage_shares(self.store.profiles(parent.id))
        return ProposalContext(
            agent=self.name,
            role=self.spec.role,
            goal=self.state.goal.text,
            iteration=iteration,
            parent=ParentCandidate.of(parent),
            incumbent=ParentCandidate.of(incumbent.row),
            memory=self.store.outcomes(self.name, limit=MEMORY_SIZE),
            steering=tuple(self.state.steering),
            advisor_ideas=tuple(self.state.advice),
            profile_summary=_read_text(self.paths.profile(self.name)),
            spec_labels=tuple(s.label for s in self.evaluator.suite.benchmarks),
            work_dir=self.paths.work(self.name),
            stage_shares=shares,
            stage_spec=profiled,
            guidance=self._read_guidance(),
        )

    def _propose(self, context: ProposalContext) -> Proposal | ProposalFailure:
        model, proposer = self._proposer_now() or (model_of(self.proposer), self.proposer)
        detail = "" if proposer is self.proposer else f"fallback {model} while waiting for quota"
        self.heartbeat.update(state="proposing", iteration=context.iteration, detail=detail)
        self.log.write(
            f"it {context.iteration}: proposing from {context.parent.candidate_id}"
            + (f" ({detail})" if detail else "")
        )
        outcome = proposer.propose(context)
        fault_point("proposing")
        if outcome.transcript:
            self.log.write(outcome.transcript)
        self.changes.spent(outcome.usage)
        if isinstance(outcome, ProposalFailure) and outcome.kind == "quota":
            until = self.changes.quota_wait(model, outcome, time.time())
            self.log.write(f"{model} waits for quota until {clock(until)}: {outcome.reason}")
        else:
            self.changes.quota_answered(model)
        if isinstance(outcome, Proposal):
            self.state.steering.clear()
            self.state.advice.clear()
        return outcome

    def _register(
        self, proposal: Proposal, parent_id: str, record: IterationDraft
    ) -> Candidate | None:
        """Static checks and dedupe by source hash; a duplicate is never evaluated again."""
        digest = source_hash(proposal.source)
        existing = self.store.candidate_by_hash(digest)
        if existing is not None:
            record.verdict, record.decision = Verdict.DUPLICATE, Decision.SKIPPED
            record.candidate_id = existing.id
            record.reason = f"same source as {existing.id}; not evaluated again"
            return None
        row = self._candidate_row(proposal, parent_id)
        candidate_id = row.id
        path = self.paths.work(self.name) / f"{candidate_id}.py"
        path.write_text(proposal.source)
        static = check_candidate_file(path, CONTEST_FORBIDDEN_WORDS)
        if not static.ok:
            record.verdict, record.reason = Verdict.REJECTED, static.reason
            return None
        if not self.store.add_candidate(row):  # another agent stored the same source first
            record.verdict, record.decision = Verdict.DUPLICATE, Decision.SKIPPED
            record.candidate_id = candidate_id
            record.reason = f"another agent proposed the same source ({candidate_id}) first"
            return None
        fault_point("branch")  # stored, not yet on the agent's branch
        self._commit_candidate(row)
        return row

    def _candidate_row(self, proposal: Proposal, parent_id: str) -> Candidate:
        digest = source_hash(proposal.source)
        return Candidate(
            id=f"c-{digest[:10]}",
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

    def _compile(self, candidate: Candidate) -> tuple[float | None, float | None]:
        """Its kernels, compiled ahead during the last judge run or now, before its own: the
        judge compiles whatever is still missing, on the GPU's clock. Returns how long the loop
        waited for them (None where no compiler runs), which the tuner weighs, and the patience
        they outlasted (None where they did not)."""
        if self.precompile is None:
            return None, None
        self.heartbeat.update(state="evaluating", candidate=candidate.id, detail="compiling")
        compilation, self.compiling = self.compiling, None
        if compilation is not None and compilation.source != candidate.source:
            compilation.cancel()  # it was compiling a proposal that was dropped
            compilation = None
        if compilation is None:
            compilation = self._start_compile(self.precompile, candidate)
        if compilation is None:
            return None, None
        started = time.monotonic()
        if line := compilation.wait():
            self.log.write(f"it {self.iteration}: {line}")
        return time.monotonic() - started, compilation.patience_s if compilation.overran else None

    def _set_aside_unjudged(self, record: IterationDraft, patience_s: float) -> None:
        """A candidate whose kernels outlast the agent's compile patience is not judged: the
        judge would compile them on the GPU's clock, and the GPU would stand idle meanwhile. It
        stays in the store; its record says why, and the tuner shuns what made it slow."""
        record.verdict, record.decision = Verdict.SLOW_COMPILE, Decision.REJECTED
        record.reason = (
            f"not judged: its kernels were still compiling after {record.compile_wait_s:.0f} s "
            f"(compile patience {patience_s:g} s, `[loop] compile_patience_s` in qrsup.toml)"
        )
        self._finish(record)

    def _propose_ahead(self, incumbent: Incumbent) -> None:
        """A free proposer's next proposal now, its kernels compiling while this candidate is
        judged (proposed_ahead.py)."""
        if self.precompile is None or not self.proposer.free:
            return
        context = self._context(self.iteration + 1, incumbent)
        outcome = self.proposer.propose(context)
        if not isinstance(outcome, Proposal):
            return  # the next iteration proposes, and records whatever went wrong
        self.ahead = ProposedAhead.of(outcome, context)
        row = self._candidate_row(outcome, context.parent.candidate_id)
        self.compiling = self._start_compile(self.precompile, row)
        self._hold_ahead(True)  # the judge run starts now: see compiles_beside

    def _start_compile(self, precompile: Precompiler, candidate: Candidate) -> Compilation | None:
        """Its kernels, for the specs its judge run will time."""
        return precompile.start(candidate, self.evaluator.judged_specs(self._focus(candidate)))

    def _focus(self, candidate: Candidate) -> AffectedSpecs | None:
        return self.focus(candidate) if self.focus else None

    def _take_ahead(self, context: ProposalContext) -> Proposal | None:
        """The proposal made during the last judge run, if it still fits this context."""
        ahead, self.ahead = self.ahead, None
        if ahead is None:
            return None
        if not ahead.still_fits(context):
            self._drop_ahead()
            self.log.write(
                f"it {context.iteration}: dropped the proposal made during the last judge run "
                f"({ahead.proposal.hypothesis}): its parent, the steering or the guidance changed"
            )
            return None
        self.heartbeat.update(state="proposing", iteration=context.iteration, detail="")
        self.log.write(
            f"it {context.iteration}: proposing from {context.parent.candidate_id} "
            "(proposed during the last judge run)"
        )
        return ahead.proposal

    def _hold_ahead(self, held: bool) -> None:
        if self.compiling is not None:
            self.compiling.hold(held)

    def _drop_ahead(self) -> None:
        self.ahead = None
        if self.compiling is not None:
            self.compiling.cancel()
            self.compiling = None

    def _judge(
        self, candidate: Candidate, incumbent: Incumbent
    ) -> tuple[StageResult, Comparison | None]:
        """The quick stage; the full stage only when quick passes and looks promising."""
        path = self.paths.work(self.name) / f"{candidate.id}.py"
        self.heartbeat.update(state="evaluating", candidate=candidate.id, detail="quick")
        self.log.write(f"it {self.iteration}: judging {candidate.id}: {candidate.hypothesis}")
        focus = self._focus(candidate)
        quick = self.evaluator.quick(path, self._progress("quick"), focus)
        self._store_stage(candidate.id, quick)
        if not quick.passed:
            return quick, None
        comparison = self._promising(quick, incumbent)
        if not comparison.favours_candidate:
            return quick, comparison
        device = quick.report.device_name or None
        self.decider.settle(self.iteration, device)  # before the figures a focused stage takes
        self.heartbeat.update(detail="full")
        full = self._full_stage(path, candidate, focus, device)
        self._store_stage(candidate.id, full)
        return full, comparison

    def _full_stage(
        self, path: Path, candidate: Candidate, focus: AffectedSpecs | None, device: str | None
    ) -> StageResult:
        """Every spec under the session's rule; a change confined to some classes times their
        specs alone, and its parent's figures on the same `device` stand for the rest (unless
        the session says `full_on_focus = false`)."""
        progress = self._progress("full")
        parent = self.store.candidate(candidate.parent_id, device) if candidate.parent_id else None
        if focus is None or parent is None or not self.session.full_on_focus:
            return self.evaluator.full(path, progress)
        means = parent.spec_means_ns or {}
        full = self.evaluator.focused_full(path, focus, parent.id, means, progress)
        if full.inherited is not None:
            specs = ", ".join(str(i) for i in focus.benchmarks)
            self.log.write(
                f"it {self.iteration}: full stage on specs {specs}; {parent.id}'s figures "
                f"stand for the other {len(full.inherited.specs)}"
            )
        return full

    def _profile(self, candidate: Candidate, index: int, why: str) -> None:
        """Profile `candidate` on benchmark `index`: the agent's eyes, and the stage shares the
        tuner weighs knobs by when it next starts from that candidate."""
        self.heartbeat.update(detail="profiling")
        path = self.paths.source_file(self.name, candidate)
        started = time.monotonic()
        result = profile_candidate(
            path,
            self.evaluator.suite,
            self.evaluator.device,
            index,
            rule=self.evaluator.rule,
            trace_out=trace_path_for(path),
            isolation=self.evaluator.isolation,
            triton_cache=self.evaluator.cache_for(path),
            executor=self.evaluator.executor,
        )
        seconds = time.monotonic() - started
        ok = isinstance(result, ProfileSummary)
        self.store.add_profile(candidate.id, self.name, index, ok, result.to_dict(), seconds)
        write_latest(result, self.paths.profile(self.name))
        self.recorder.event(
            {
                "event": "profile",
                "candidate_id": candidate.id,
                "spec_index": index,
                "ok": ok,
                "seconds": round(seconds, 2),
            }
        )
        self.log.write(
            f"it {self.iteration}: profiled {candidate.id} ({why}) on spec {index} "
            f"in {seconds:.1f} s"
        )

    def _see_incumbent(self, incumbent: Incumbent) -> None:
        """The incumbent's profile in this agent's pane from its start, and its stage shares for
        the tuner's first proposals: in a CPU session the pane said "no profile yet" through
        every iteration whose candidate missed the beam. The first agent to start profiles it
        on its slowest spec; the others, and restarts, show the stored profile."""
        if self.paths.profile(self.name).exists():
            return
        with file_lock(self.paths.root / "incumbent-profile.lock"):  # one profile, not one each
            stored = [p for p in self.store.profiles(incumbent.row.id) if p.ok]
            if stored:
                summary = ProfileSummary.from_dict(stored[-1].summary)
                write_latest(summary, self.paths.profile(self.name))
                return
            means = incumbent.spec_means_ns
            slowest = max(means, key=means.__getitem__, default=0)
            self._profile(incumbent.row, slowest, why="the incumbent, on its slowest spec")

    def _store_stage(self, candidate_id: str, result: StageResult) -> None:
        result.store(self.store, candidate_id, self.name, self.iteration)

    def _promising(self, quick: StageResult, incumbent: Incumbent) -> Comparison:
        """The quick stage against the incumbent's figures on the specs it timed: the same rule,
        on the same device, from a run at most `incumbent_refresh` of this agent's evaluations
        old."""
        margin = role(self.spec.role).promise_margin
        indices = sorted(quick.spec_means_ns)  # a passed stage timed every spec it was given
        theirs, age = self._incumbent_quick(incumbent, indices, quick.report.device_name)
        mine = quick.geomean_over(indices)
        return Comparison("quick", mine, geomean_over(theirs, indices), margin, age, indices)

    def _incumbent_quick(
        self, incumbent: Incumbent, indices: list[int], device: str
    ) -> tuple[dict[int, float], int]:
        """The incumbent's quick-rule means over every benchmark spec on `device` and their
        age, re-timed when too old or when they miss one of `indices`. The agent's name
        outlives a relaunch, which may be on another machine."""
        timed = [
            e
            for e in self.store.evaluations(incumbent.row.id)
            if e.agent == self.name
            and e.stage == "quick"
            and e.verdict == Verdict.PASS
            and e.device_name == device
        ]
        if timed and all(i in timed[-1].spec_means_ns for i in indices):
            age = self.store.evaluations_since(self.name, timed[-1].id)
            if age <= self.session.incumbent_refresh:
                return timed[-1].spec_means_ns, age
        path = self.paths.source_file(self.name, incumbent.row)
        self.heartbeat.update(detail="re-timing the incumbent")
        result = self.evaluator.reference(path, self._progress("incumbent"))
        self._store_stage(incumbent.row.id, result)
        return (result.spec_means_ns if result.passed else {}), 0

    def _finish(self, record: IterationDraft) -> None:
        self.recorder.record(record, self.state.goal.text)
        self.heartbeat.update(
            state="idle",
            last_verdict=record.verdict,
            best_geomean_ns=self.best.full_ns,
            best_quick_geomean_ns=self.best.quick_ns,
            detail="",
            extra=self._beat_extra(),
        )

    def _idle(self, state: str, detail: str | None = None) -> None:
        """Between iterations without iterating: paused, goal met, or waiting for quota."""
        changes: dict[str, object] = {"state": state}
        if detail is not None:
            changes["detail"] = detail
        self.heartbeat.update(**changes, extra=self._beat_extra())
        time.sleep(IDLE_POLL_SECONDS)

    def _beat_extra(self) -> dict[str, object]:
        """Spend, budget, stall and quota wait, for the agent list and `qrsup status`."""
        return {
            **self.changes.beat_extra(),
            "budget": self.state.budget.to_dict(),
            "budget_paused": self.state.budget_paused,
        }

    def _pause_for_budget(self, reason: str) -> None:
        """Pause and ask: a person raises the budget (which resumes it) or leaves it paused."""
        if not self.state.budget_paused:
            self.changes.budget_paused(reason)
            self.log.write(f"pausing: {reason}; raise it (qrsup budget {self.name} …) to go on")
        self.state.budget_paused = self.state.paused = True
        self.heartbeat.update(detail=f"at its budget: {reason}")

    def _proposer_now(self) -> tuple[str, Proposer] | None:
        """The agent's own proposer, or its fallback while the own model waits for quota."""
        return self.changes.quota.pick((self.proposer, self.fallback), time.time())

    def _read_guidance(self) -> str:
        text, changed = self.guidance.read()
        if changed:
            self.recorder.event(
                {"event": "guidance", "digest": self.guidance.digest, "chars": len(text)}
            )
            lines = len(text.splitlines())
            self.log.write(f"guidance changed: {lines} line(s) now in every prompt")
        return text

    def _check_goal(self, record: IterationDraft, device: str | None) -> None:
        """Only a candidate the decision kept (a beam slot or a promotion) can meet the goal,
        against the reference's figures on the same `device`."""
        kept = record.decision == Decision.PROMOTED or record.decision.startswith("beam ")
        if record.verdict != Verdict.PASS or not kept or not record.spec_means_ns:
            return
        benchmarks = self.evaluator.suite.benchmarks
        reference_id = self.state.goal_reference
        reference = self.store.candidate(reference_id, device) if reference_id else None
        reference_means = (reference.spec_means_ns or {}) if reference else {}
        status = self.state.goal.evaluate(record.spec_means_ns, reference_means, benchmarks)
        if not status.met:
            return
        self.state.goal_met = True
        self.recorder.event(
            {
                "event": str(EventKind.GOAL_MET),
                "goal": self.state.goal.text,
                "candidate_id": record.candidate_id,
                "value_ns": status.value_ns,
                "target_ns": status.target_ns,
                "iteration": record.iteration,
            }
        )
        value, target = format_ms(status.value_ns), format_ms(status.target_ns)
        self.log.write(f"goal met by {record.candidate_id}: {value} < {target}; idling")
        self.heartbeat.update(state="goal met")  # last: whoever sees the state finds the record

    def _note_isolation(self, report: JudgeReport) -> None:
        """Say once, in the log the TUI shows, when candidates run without the full boundary."""
        warning = report.isolation_warning()
        if warning and warning != self.isolation_warning:
            self.log.write(warning)
            self.recorder.event({"event": "isolation_incomplete", "missing": report.isolation})
        self.isolation_warning = warning

    def _pause_session(self, reason: str) -> None:
        """Judge files changed on disk: every agent of the session pauses until a person looks."""
        remedy = "qrsup stop, then start the session again to judge with the changed files"
        text = f"session paused by {self.name}: {reason} ({remedy})"
        self.state.paused = True
        for spec in self.session.agents:
            inbox.send(self.paths.inbox(spec.name), "pause", text, sender=f"agent {self.name}")
        self.recorder.event({"event": "session_paused", "reason": reason})
        self.log.write(text)

    def _consult_advisor(self, context: ProposalContext, history: tuple) -> None:
        """On a new stall, the advisor's ideas go to the inbox like any other steering."""
        beam = self._beam_summary()
        advice = self.advisor.maybe_advise(history, context, beam, self.decider.noise)
        self.changes.spent(advice.usage)
        if not advice.ideas:
            return
        for idea in advice.ideas:
            inbox.send(self.paths.inbox(self.name), "advisor", idea, sender="advisor")
        self.recorder.event({"event": "advisor", "iteration": self.iteration, **advice.to_record()})
        self.log.write(f"advisor ({advice.source}): " + " | ".join(advice.ideas))

    def _beam_summary(self) -> str:
        lines = []
        for name, slot in self.decider.beam_slots().items():
            holder = slot.holder
            lines.append(
                f"{name}: {holder.candidate_id} {format_ms(holder.geomean_ns)} ({holder.family})"
            )
        return "\n".join(lines)

    def _budget_used(self) -> str:
        if self.spec.max_iterations and self.iteration >= self.spec.max_iterations:
            return f"iteration budget of {self.spec.max_iterations} used"
        if self.spec.max_seconds and time.monotonic() - self.started > self.spec.max_seconds:
            return f"time budget of {self.spec.max_seconds:g} s used"
        return ""

    def _request_stop(self, signum: int, frame: FrameType | None) -> None:
        """First signal: finish the evaluation in flight and stop; a second one interrupts."""
        if self.state.stop_requested:
            raise KeyboardInterrupt
        self.state.stop_requested = True

    def _progress(self, stage: str) -> Progress:
        def report(update: ProgressUpdate) -> None:
            # An executor waiting for its cluster says so with a state ("waiting") of its own.
            state = update.state or "evaluating"
            self.heartbeat.update(state=state, detail=f"{stage}: {update.describe()}")
            self._hold_ahead(not compiles_beside(update))

        return report

    def _parent_row(self, incumbent: Incumbent) -> Candidate:
        """The agent's role decides its parent: its own beam slot if held, else the incumbent."""
        slot = self.store.beam().get(self.spec.role)
        if slot is not None:
            row = self.store.candidate(slot.candidate_id)
            if row is not None and row.family == self.spec.family:
                return row
        if self.spec.family == incumbent.row.family:
            return incumbent.row
        rows = [c for c in self.store.candidates() if c.family == self.spec.family and c.geomean_ns]
        if rows:
            return min(rows, key=lambda c: c.geomean_ns or float("inf"))
        return replace(
            incumbent.row,
            source="",
            family=self.spec.family,
            hypothesis="(no candidate of this family yet)",
        )

    def _commit_candidate(self, row: Candidate) -> None:
        """Keep every candidate on the agent's own branch; git trouble never stops the loop."""
        try:
            commit_candidate(self.session, row)
        except (WorkspaceError, git.GitError, OSError) as exc:
            self.log.write(f"could not commit {row.id} to the agent branch: {exc}")

    def _recover(self) -> None:
        """Git and the store back in step after a kill (qrsup.agents.recovery)."""
        try:
            with file_lock(self.paths.promote_lock):
                done = recover_promotion(self.paths, self.session, self.store, self.name)
            committed = recover_branch(self.paths, self.session, self.store, self.name)
        except (WorkspaceError, git.GitError, OSError) as exc:
            self.log.write(f"could not check the workspace's git history: {exc}")
            return
        if done:
            self.log.write(f"recovered after a restart: {done}")
        if committed:
            self.log.write(
                f"recovered after a restart: {', '.join(committed)} committed to the branch"
            )


def _usage(outcome: Proposal | ProposalFailure) -> dict[str, float]:
    usage = outcome.usage
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "cost_usd": usage.cost_usd,
    }


def worst_spec(means: dict[int, float], incumbent: dict[int, float]) -> int:
    """The benchmark index where the candidate's time is worst against the incumbent's."""
    shared = [i for i in means if i in incumbent and incumbent[i] > 0]
    if shared:
        return max(shared, key=lambda i: means[i] / incumbent[i])
    return max(means, key=means.__getitem__) if means else 0


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None
