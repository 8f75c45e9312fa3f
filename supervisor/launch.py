"""Creating or reattaching a session from command-line choices, with the product's defaults."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.git_workspace import WorkspaceError, init_repo, open_repo
from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.incumbent import default_family
from qrsup.agents.proposal import ROLES
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.kernels.judge.manifest import save_manifest, take_manifest
from qrsup.kernels.suites import SuiteError, get_suite

DEFAULT_GOAL = "beat incumbent by 5%"
DEFAULT_AGENTS = 3
_BUDGET = re.compile(r"^(?P<value>\d+(?:\.\d+)?)(?P<unit>s|m|h)?$")


class LaunchError(ValueError):
    """A launch choice that cannot be honoured, with a one-line reason."""


@dataclass(frozen=True)
class LaunchChoices:
    """What the person asked for; None means the product's default."""

    workspace: Path
    session: str = "default"
    agents: int | None = None
    proposer: str | None = None
    suite: str | None = None
    goal: str | None = None
    budget: str | None = None
    device: str = "cpu"
    init: bool = False
    gpus: str | None = None
    agents_per_gpu: int = 1
    executor: str = "local"
    ray_address: str = ""  # "": a local instance (only with the ray executor)


def parse_budget(text: str | None) -> tuple[int, float]:
    """`20` → 20 iterations; `90s`, `30m`, `2h` → seconds. Returns (iterations, seconds)."""
    if not text:
        return 0, 0.0
    match = _BUDGET.match(text.strip())
    if not match:
        raise LaunchError(f"budget must be a number of iterations or a time like 30m, got {text!r}")
    value, unit = float(match["value"]), match["unit"]
    if unit is None:
        return int(value), 0.0
    return 0, value * {"s": 1, "m": 60, "h": 3600}[unit]


def default_agents(
    count: int, proposer: str, goal: str, budget: str | None, device: str
) -> tuple[AgentSpec, ...]:
    """Roles exploit, near-miss, structural, cleanup in turn; structural searches another family."""
    iterations, seconds = parse_budget(budget)
    family = default_family(device)
    specs = []
    for i in range(count):
        role = ROLES[i % len(ROLES)]
        specs.append(
            AgentSpec(
                name=f"a{i + 1}",
                role=role,
                proposer=proposer,
                goal=goal,
                family="recursive_wy" if role == "structural" else family,
                device=device,
                max_iterations=iterations,
                max_seconds=seconds,
            )
        )
    return tuple(specs)


def prepare_session(choices: LaunchChoices) -> tuple[RunPaths, SessionConfig, bool]:
    """Reattach to an existing session, or create it with the defaults; (paths, config, created)."""
    workspace = choices.workspace.resolve()
    try:
        open_repo(workspace).close()
    except WorkspaceError as exc:
        if not choices.init:
            raise LaunchError(f"{exc} (or pass --init to let qrsup do it)") from None
        init_repo(workspace).close()
    paths = RunPaths.of(workspace, choices.session)
    if paths.config.exists():
        return paths, load_session(paths), False
    goal = choices.goal or DEFAULT_GOAL
    try:
        parse_goal(goal)
        suite = choices.suite or ("qr_v2" if choices.device.startswith("cuda") else "smoke")
        get_suite(suite)
    except (GoalError, SuiteError) as exc:
        raise LaunchError(str(exc)) from None
    count = choices.agents if choices.agents is not None else DEFAULT_AGENTS
    if count < 1:
        raise LaunchError(f"--agents must be at least 1, got {count}")
    proposer = choices.proposer or "tuner"
    if choices.agents_per_gpu < 1:
        raise LaunchError(f"--agents-per-gpu must be at least 1, got {choices.agents_per_gpu}")
    config = SessionConfig(
        name=choices.session,
        workspace=workspace,
        suite=suite,
        rule="quick",
        gpus=choices.gpus or "",
        agents_per_gpu=choices.agents_per_gpu,
        executor=choices.executor,
        ray_address=choices.ray_address,
        agents=default_agents(count, proposer, goal, choices.budget, choices.device),
    )
    _ignore_runs(workspace)
    save_session(paths, config)
    save_manifest(paths.judge_manifest, take_manifest())
    return paths, config, True


def _ignore_runs(workspace: Path) -> None:
    """Keep run directories out of the workspace's commits."""
    ignore = workspace / ".gitignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    if not any(line.strip() in ("runs/", "/runs/", "runs") for line in lines):
        with ignore.open("a") as handle:
            handle.write("\nruns/\n" if lines and lines[-1] else "runs/\n")
