"""The session's incumbent: registered, committed and fully evaluated before any agent iterates."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.beam import Scored, source_lines
from qrsup.agents.evaluation import Evaluator, Progress, StageResult
from qrsup.agents.git_workspace import (
    INCUMBENT_PATH,
    WorkspaceError,
    commit_incumbent,
    open_repo,
    read_incumbent,
)
from qrsup.agents.recorder import Recorder
from qrsup.agents.records import AgentLog, format_ms
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.agents.spaces import space_for
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash
from qrsup.kernels.device_arch import device_arch
from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.schema import BOOTSTRAP_AGENT, Candidate, Verdict

REPO_ROOT = Path(__file__).resolve().parent.parent
INCUMBENT_CRASH_RETRIES = 2
SETTLE_LOCK = "incumbent-settle.lock"  # held while a stored candidate is timed again


class IncumbentError(RuntimeError):
    """The incumbent cannot be set up or did not pass the judge: the session cannot start."""


@dataclass(frozen=True)
class Incumbent:
    """The current incumbent candidate and its full evaluation."""

    row: Candidate

    @classmethod
    def load(cls, store: Store, device: str | None = None) -> Incumbent:
        """With its best figures on `device` (Store.candidate), or on any when None."""
        incumbent_id = store.incumbent_id()
        row = store.candidate(incumbent_id, device) if incumbent_id else None
        if row is None:
            raise IncumbentError("the session has no incumbent yet")
        return cls(row)

    @property
    def geomean_ns(self) -> float | None:
        return self.row.geomean_ns

    @property
    def spec_means_ns(self) -> dict[int, float]:
        return self.row.spec_means_ns or {}

    @property
    def scored(self) -> Scored:
        return Scored(
            self.row.id,
            self.row.family,
            self.row.geomean_ns or float("inf"),
            self.spec_means_ns,
            source_lines(self.row.source),
        )


def default_family(device: str) -> str:
    """The shipped incumbent's family: the fast Triton kernel on CUDA, blocked WY on the CPU."""
    return "fast" if device.startswith("cuda") else "blocked_wy"


def bootstrap_incumbent(
    paths: RunPaths,
    session: SessionConfig,
    store: Store,
    evaluator: Evaluator,
    log: AgentLog,
    progress: Progress | None = None,
) -> Incumbent:
    """Under the session lock: seed and commit the incumbent if missing, register, evaluate."""
    with file_lock(paths.root / "bootstrap.lock"):
        if store.incumbent_id() is None:
            _register(session, store, evaluator.device, log)
        incumbent = Incumbent.load(store)
        if incumbent.geomean_ns is None:
            log.write(f"evaluating the incumbent {incumbent.row.id} on the full suite")
            path = paths.root / f"{incumbent.row.id}.py"
            path.write_text(incumbent.row.source)
            result = evaluator.full(path, progress)
            crashes = 0
            while again := _judge_again(result.report, crashes):
                log.write(f"the incumbent's evaluation {again}; judging it again")
                crashes += result.report.verdict == Verdict.CRASH
                result = evaluator.full(path, progress)
            store.add_evaluation(
                incumbent.row.id,
                BOOTSTRAP_AGENT,
                0,
                "full",
                result.report.to_dict(),
                result.spec_means_ns,
            )
            if not result.passed:
                raise IncumbentError(
                    f"the incumbent {incumbent.row.id} fails the judge: {result.report.reason}"
                )
            incumbent = Incumbent.load(store)
        return incumbent


def _judge_again(report: JudgeReport, crashes: int) -> str:
    """Why the incumbent's evaluation is run again, or "". A lost node judged nothing. A crash
    is most often a judge process killed from outside (the shipped incumbent passed before): an
    agent that gave up on it would die with its session unstarted, so it is judged again, up to
    INCUMBENT_CRASH_RETRIES times; a crash that persists is the incumbent's."""
    first_line = report.reason.splitlines()[0] if report.reason else ""
    if report.verdict == Verdict.LOST_NODE:
        return f"lost its node: {first_line}"
    if report.verdict == Verdict.CRASH and crashes < INCUMBENT_CRASH_RETRIES:
        return f"crashed ({first_line}, {crashes + 1} of {INCUMBENT_CRASH_RETRIES})"
    return ""


def _register(session: SessionConfig, store: Store, device: str, log: AgentLog) -> None:
    family = default_family(device)
    space = space_for(family, REPO_ROOT, device_arch(device))
    sha = None
    try:
        with open_repo(session.workspace) as repo:
            source = read_incumbent(repo)
            if source is None:
                source = space.render(space.default_point())
                sha = commit_incumbent(
                    repo, source, f"Seed the incumbent ({family} defaults) at {INCUMBENT_PATH}"
                )
                log.write(f"seeded {INCUMBENT_PATH} with the {family} defaults ({sha[:10]})")
            else:
                sha = repo.head.commit.hexsha
    except WorkspaceError as exc:
        raise IncumbentError(str(exc)) from None
    digest = source_hash(source)
    existing = store.candidate_by_hash(digest)
    if existing is None:
        point = space.read(source)
        candidate_id = f"c-{digest[:10]}"
        store.add_candidate(
            Candidate(
                id=candidate_id,
                hash=digest,
                source=source,
                parent_id=None,
                agent="workspace",
                role="exploit",
                family=family if point is not None else "external",
                hypothesis="the workspace's incumbent",
                params=point,
                created_at=time.time(),
            )
        )
    else:
        candidate_id = existing.id
    store.add_promotion(candidate_id, sha, None, None, {}, "seed")


def settle_incumbent(
    recorder: Recorder,
    evaluator: Evaluator,
    iteration: int,
    since: float,
    device: str | None = None,
    progress: Progress | None = None,
) -> Incumbent:
    """The incumbent with a full-rule evaluation taken since `since` (this agent's start), on
    `device` when one is named, and its figures there.

    Its bootstrap figure was timed while the other agents' processes started beside it: on the
    CPU, three agents' bootstrap read 15.7 ms against 12.2 ms re-timed. A relaunched session's
    figure was timed in another launch, perhaps on another machine. The near-miss and
    structural slots compare against it, so until an exploit's re-timing refreshed it, any
    candidate looked faster than the incumbent there. The first agent to reach a full stage or a
    decision times it again (its figure is its best full evaluation, so the refresh never makes
    it slower); the others, started before that run, find it stored and go on. A run that fails
    leaves the incumbent on its figures from before, wherever they were timed.
    """
    store = recorder.store
    with file_lock(recorder.paths.root / SETTLE_LOCK):
        incumbent = Incumbent.load(store, device)
        if any(
            e.stage == "full"
            and e.agent != BOOTSTRAP_AGENT
            and e.created_at >= since
            and device in (None, e.device_name)
            for e in store.evaluations(incumbent.row.id)
        ):
            return incumbent
        why = "no agent has since this one started (a start figure is timed as the agents start)"
        what = f"the incumbent {incumbent.row.id}"
        result = time_again(recorder, evaluator, incumbent.row, what, why, iteration, progress)
        return Incumbent.load(store, (result.report.device_name or None) if result.passed else None)


def time_again(
    recorder: Recorder,
    evaluator: Evaluator,
    row: Candidate,
    what: str,
    why: str,
    iteration: int,
    progress: Progress | None = None,
) -> StageResult:
    """A stored candidate's full stage run again and stored, with a line in the agent's log
    before and after. The caller holds `SETTLE_LOCK`, so two agents never time one candidate
    for the same reason at once."""
    log = recorder.log
    before = row.geomean_ns
    log.write(f"timing {what} again under the full rule: {why}")
    result = evaluator.full(recorder.paths.source_file(recorder.agent, row), progress)
    result.store(recorder.store, row.id, recorder.agent, iteration)
    best = recorder.store.candidate(row.id, result.report.device_name or None)
    stands = best.geomean_ns if best else None
    was = "no figure here" if before is None else format_ms(before)
    log.write(
        f"{what}: {was} before, {format_ms(result.geomean_ns)} now "
        f"({result.report.verdict}); it stands at {format_ms(stands)}"
    )
    return result
