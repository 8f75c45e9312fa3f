"""Sessions for the TUI tests: a frozen one (records, no processes) and its fixed live figures."""

from __future__ import annotations

from pathlib import Path

from qrsup.agents.heartbeat import Beat, write_beat
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, save_session
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict
from qrsup.supervisor.fleet import AgentStatus
from qrsup.supervisor.gpu_stats import GpuReport
from qrsup.supervisor.messages import AgentsSampled
from qrsup.supervisor.process_stats import TreeLoad

from tests.loop_helpers import TINY_SUITE

T0 = 1_790_000_000.0  # fixed creation times: the leaderboard shows them
AGENTS = (
    AgentSpec("a1", role="exploit", goal="beat incumbent by 5%"),
    AgentSpec("a2", role="near-miss", goal="beat incumbent by 5%"),
    AgentSpec("a3", role="structural", family="recursive_wy", goal="geomean < 0.05ms"),
)
# id, agent, role, parent, verdict, decision, per-spec means (ns) of the two benchmark specs
CANDIDATES = (
    ("c-incumbent", "bootstrap", "incumbent", None, "pass", "", (41_000.0, 98_000.0)),
    ("c-1a2b3c4d5e", "a1", "exploit", "c-incumbent", "pass", "beam exploit", (38_000.0, 90_500.0)),
    (
        "c-2b3c4d5e6f",
        "a2",
        "near-miss",
        "c-incumbent",
        "pass",
        "beam near-miss",
        (40_100.0, 99_000.0),
    ),
    ("c-3c4d5e6f7a", "a1", "exploit", "c-1a2b3c4d5e", "fail", "rejected", ()),
    (
        "c-4d5e6f7a8b",
        "a3",
        "structural",
        "c-incumbent",
        "pass",
        "beam structural",
        (52_000.0, 120_000.0),
    ),
)
SOURCE = (
    "PANEL = {panel}\nCHUNK = {chunk}\n\n\ndef custom_kernel(A):\n    return qr(A, PANEL, CHUNK)\n"
)


def _source(index: int) -> str:
    return SOURCE.format(panel=16 + 8 * index, chunk=32 if index % 2 else 0)


def _geomean(means: tuple[float, ...]) -> float | None:
    if not means:
        return None
    product = 1.0
    for value in means:
        product *= value
    return product ** (1 / len(means))


def frozen_session(tmp_path: Path) -> RunPaths:
    """Three agents that are not running, five candidates, a beam and an incumbent, logs."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    suite = workspace / "tiny.toml"
    suite.write_text(TINY_SUITE)
    paths = RunPaths.of(workspace, "frozen")
    save_session(paths, SessionConfig("frozen", workspace, suite=str(suite), agents=AGENTS))
    store = Store(paths.store)
    for index, (cid, agent, role, parent, verdict, decision, means) in enumerate(CANDIDATES):
        row = Candidate(
            cid, f"hash{index}", _source(index), parent, agent, role, "blocked_wy",
            f"panel {16 + 8 * index}", {"panel": 16 + 8 * index}, T0 + 60 * index,
        )  # fmt: skip
        store.add_candidate(row)
        report = {"verdict": verdict, "geomean_ns": _geomean(means), "reason": ""}
        spec_means = dict(enumerate(means))
        store.add_evaluation(cid, agent, index, "full", report, spec_means)
        if agent != "bootstrap":
            store.record_iteration(
                Iteration(
                    agent,
                    index,
                    Verdict(verdict),
                    Decision(decision),
                    cid,
                    hypothesis=row.hypothesis,
                    geomean_ns=_geomean(means),
                )
            )
    store.add_promotion(
        "c-incumbent", "0123456789abcdef", _geomean(CANDIDATES[0][6]), None, {}, "seed"
    )
    for role, cid in (("exploit", "c-1a2b3c4d5e"), ("near-miss", "c-2b3c4d5e6f")):
        store.set_beam(role, cid, store.candidate(cid).geomean_ns, None)
    store.set_beam("structural", "c-4d5e6f7a8b", store.candidate("c-4d5e6f7a8b").geomean_ns, None)
    store.close()
    for number, spec in enumerate(AGENTS, start=1):
        paths.ensure(spec.name)
        lines = [f"12:00:{i:02d} it {i}: judging c-{number}{i}: panel {8 * i}" for i in range(30)]
        paths.agent_log(spec.name).write_text("\n".join(lines) + "\n")
        write_beat(paths.heartbeat(spec.name), Beat(0, "stopped", 3, T0, goal=spec.goal))
    profile = paths.profile("a1")
    profile.parent.mkdir(parents=True)
    profile.write_text("stage      share\npanel      61%\ntrailing   33%\nT build     6%\n")
    return paths


def add_full_pass(
    paths: RunPaths,
    row: Candidate,
    iteration: int,
    geomean_ns: float,
    decision: str,
    outcome: str = "pass",
) -> None:
    """A candidate passing the full suite (`geomean_ns` on each spec), as an agent records it;
    `outcome` is the iteration's, which differs when a later re-timing run failed."""
    store = Store(paths.store)
    try:
        store.add_candidate(row)
        report = {"verdict": "pass", "geomean_ns": geomean_ns, "reason": ""}
        store.add_evaluation(
            row.id, row.agent, iteration, "full", report, {0: geomean_ns, 1: geomean_ns}
        )
        store.record_iteration(
            Iteration(
                row.agent,
                iteration,
                Verdict(outcome),
                Decision(decision),
                row.id,
                hypothesis=row.hypothesis,
                geomean_ns=geomean_ns,
            )
        )
    finally:
        store.close()


def frozen_sample() -> AgentsSampled:
    """What the fleet sampler would say, with no clock or process in it."""
    states = (
        ("a1", "evaluating", "quick 1/2", 4, 38_000.0, "pass", 101, 12.0, 310 * 2**20),
        ("a2", "paused", "", 3, 60_000.0, "pass", 102, 0.0, 295 * 2**20),
        ("a3", "crashed", "ValueError: bad panel", 2, None, "fail", None, 0.0, 0),
    )
    statuses = tuple(
        AgentStatus(
            name=name,
            role=spec.role,
            proposer=spec.proposer,
            goal=spec.goal,
            pid=pid,
            alive=pid is not None,
            state=state,
            iteration=iteration,
            heartbeat_age_s=3.0,
            best_geomean_ns=best,
            last_verdict=verdict,
            detail=detail,
        )
        for (name, state, detail, iteration, best, verdict, pid, _, _), spec in zip(
            states, AGENTS, strict=True
        )
    )
    loads = {
        name: TreeLoad(frozenset({pid}) if pid else frozenset(), cpu, rss)
        for name, _, _, _, _, _, pid, cpu, rss in states
    }
    return AgentsSampled(statuses, loads, GpuReport(note="no NVIDIA GPU on this machine"))


class FrozenSampler:
    """Stands in for the fleet sampler: posts one fixed sample and never looks at processes."""

    def __init__(self, post) -> None:
        self._post = post

    def start(self) -> None:
        self._post(frozen_sample())

    def stop(self) -> None:
        return None

    def poke(self) -> None:
        return None
