"""The incumbent's first evaluation survives a judge killed from outside: a crash is judged
again (twice at most), and a crash that persists stops the agent with the judge's reason."""

from __future__ import annotations

from pathlib import Path

from qrsup.agents.evaluation import Evaluator, StageResult
from qrsup.agents.incumbent import INCUMBENT_CRASH_RETRIES, IncumbentError, bootstrap_incumbent
from qrsup.agents.records import AgentLog
from qrsup.agents.session import AgentSpec, load_session
from qrsup.agents.store import Store
from qrsup.kernels.judge.report import JudgeReport

from tests.loop_helpers import make_session

KILLED = "the judge process died (status -9) before reporting"


class KilledJudges(Evaluator):
    """The session's real evaluator, whose first `crashes` full stages lose their judge."""

    def __init__(self, base: Evaluator, crashes: int) -> None:
        super().__init__(base.suite, base.device, base.rule, base.isolation, base.manifest)
        self.crashes, self.runs = crashes, 0

    def full(self, path: Path, *args: object, **kwargs: object) -> StageResult:
        self.runs += 1
        if self.runs <= self.crashes:
            report = JudgeReport.from_dict(
                {"verdict": "crash", "reason": KILLED, "specs": [], "candidate": str(path)}
                | {"source_sha256": "", "suite": self.suite.name, "mode": "bench", "seed": None}
            )
            return StageResult("full", report, {})
        return super().full(path, *args, **kwargs)


def bootstrap(tmp_path: Path, crashes: int) -> tuple[KilledJudges, str, object]:
    paths = make_session(tmp_path, (AgentSpec("a1"),))
    session = load_session(paths)
    store = Store(paths.store)
    evaluator = KilledJudges(Evaluator.for_session(paths, session, "cpu"), crashes)
    log = AgentLog(paths.root / "a1.log")
    try:
        outcome: object = bootstrap_incumbent(paths, session, store, evaluator, log)
    except IncumbentError as error:
        outcome = error
    return evaluator, log.path.read_text(), outcome


def test_a_crashed_incumbent_evaluation_is_judged_again(tmp_path):
    evaluator, log, incumbent = bootstrap(tmp_path, INCUMBENT_CRASH_RETRIES)
    assert evaluator.runs == INCUMBENT_CRASH_RETRIES + 1
    assert not isinstance(incumbent, IncumbentError)
    assert incumbent.geomean_ns is not None
    assert log.count("judging it again") == INCUMBENT_CRASH_RETRIES
    assert KILLED in log


def test_a_crash_that_persists_stops_the_agent_with_its_reason(tmp_path):
    evaluator, _, outcome = bootstrap(tmp_path, INCUMBENT_CRASH_RETRIES + 1)
    assert evaluator.runs == INCUMBENT_CRASH_RETRIES + 1
    assert isinstance(outcome, IncumbentError) and KILLED in str(outcome)
