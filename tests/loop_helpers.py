"""Helpers for tests that run real agent processes on a tiny suite in a throwaway workspace."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qrsup.agents.evaluation import Evaluator, StageResult
from qrsup.agents.git_workspace import init_repo
from qrsup.agents.incumbent import bootstrap_incumbent
from qrsup.agents.records import AgentLog
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.agents.settings import PATIENCE_S
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Progress
from qrsup.kernels.suites import Spec, Suite, get_suite

TINY_SUITE = """
name = "tiny-loop"
[[tests]]
batch = 2
n = 12
case = "dense"
[[tests]]
batch = 2
n = 9
case = "rankdef"
[[benchmarks]]
batch = 4
n = 16
cond = 1
[[benchmarks]]
batch = 2
n = 24
case = "mixed"
cond = 2
"""

# A model's answer that edits the incumbent (blocked WY defaults) into 16-column panels.
PANEL_EDIT = """HYPOTHESIS: 16-column panels shorten the sequential panel chain
FAMILY: blocked_wy

<<<<<<< SEARCH
panel_width=32
=======
panel_width=16
>>>>>>> REPLACE
"""


def make_session(
    tmp_path: Path,
    agents: tuple[AgentSpec, ...],
    auto_promote: bool = False,
    name: str = "t",
    full_on_focus: bool = True,
) -> RunPaths:
    """A git workspace with a tiny suite and a saved session; agents not started."""
    workspace = tmp_path / "ws"
    init_repo(workspace).close()
    suite = workspace / "tiny.toml"
    suite.write_text(TINY_SUITE)
    config = SessionConfig(
        name=name,
        workspace=workspace,
        suite=str(suite),
        rule="quick",
        auto_promote=auto_promote,
        full_on_focus=full_on_focus,
        agents=agents,
    )
    paths = RunPaths.of(workspace, name)
    save_session(paths, config)
    return paths


@dataclass
class IncumbentSeeder:
    """Registers and records a session's incumbent as an agent's first start does, so that its
    agents start without judging it: for tests about what agents do after their start. Sessions
    of make_session share the suite and the shipped incumbent, so the first one's full stage is
    judged for real and the others take its figures (about 6 s less each, here)."""

    device: str = "cpu"
    evaluator: Evaluator | None = None
    run: StageResult | None = None
    judged: tuple[str, Suite, str] | None = None  # the incumbent's file, suite and rule

    def __call__(self, paths: RunPaths) -> None:
        session = load_session(paths)
        self.evaluator = Evaluator(get_suite(session.suite), self.device, session.rule)
        with Store(paths.store) as store:
            bootstrap_incumbent(paths, session, store, self, AgentLog(paths.root / "seed.log"))

    def full(self, path: Path, progress: Progress | None = None) -> StageResult:
        assert self.evaluator is not None
        asked = (path.name, self.evaluator.suite, self.evaluator.rule)
        if self.run is None:
            self.run, self.judged = self.evaluator.full(path, progress), asked
        assert asked == self.judged, f"{asked} is not what was judged, {self.judged}"
        return self.run


# Polls start fast (a process's death or a file's change is often a moment away) and back off
# to the slowest interval, so a long wait does not spend the cores the agents need.
FIRST_POLL_S = 0.02
SLOWEST_POLL_S = 0.2


def wait_for(condition: Callable[[], object], timeout_s: float, what: str) -> object:
    """Poll a condition until it is truthy; fail the test with `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    pause = FIRST_POLL_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(pause)
        pause = min(SLOWEST_POLL_S, pause * 1.5)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@dataclass
class StandInCompile:
    """What a GPU host's compile of one candidate would be: done `wait_s` after it is waited
    for."""

    device: str
    candidate_id: str
    source: str
    shapes: list[int]
    wait_s: float = 0.0
    patience_s: float = PATIENCE_S
    started: float = field(default_factory=time.time)
    cancelled: bool = False
    overran: bool = False
    holds: list[bool] = field(default_factory=list)  # each hold(held) the agent asked for

    def wait(self) -> str:
        if self.wait_s > self.patience_s:
            time.sleep(self.patience_s)
            self.overran = True
            return f"precompile: still compiling after the loop waited {self.patience_s:g} s"
        time.sleep(self.wait_s)
        return "precompiled 3 kernels (0 already cached) in 0.1 s"

    def hold(self, held: bool) -> None:
        self.holds.append(held)

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class StandInCompiler:
    """Stands in for `Precompiler.for_device` on a machine without a GPU: records each compile
    an agent starts (the real one needs a GPU that NVML can name)."""

    started: list[StandInCompile] = field(default_factory=list)
    device: str = ""
    wait_s: float = 0.0  # how long each compile keeps the agent waiting
    patience_s: float = PATIENCE_S  # the agent's, from its workspace settings
    cache: Path | None = None  # the Triton cache it was given

    def for_device(
        self, device: str, cache: Path, work: Path, patience_s: float = PATIENCE_S
    ) -> StandInCompiler:
        self.device, self.patience_s, self.cache = device, patience_s, cache
        return self

    def start(self, candidate: Candidate, specs: Sequence[Spec]) -> StandInCompile:
        shapes = [spec.n for spec in specs]
        compile_ = StandInCompile(
            self.device, candidate.id, candidate.source, shapes, self.wait_s, self.patience_s
        )
        self.started.append(compile_)
        return self.started[-1]
