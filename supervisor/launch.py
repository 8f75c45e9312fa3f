"""Creating or reattaching a session from command-line choices, with the product's defaults.

Everything a new session's agents need is settled and checked here, before anything starts:
the proposers (models, endpoints, command templates), goal, budgets, suite and GPUs. A mistake
is a LaunchError, one line; nothing is written and no agent is started.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from qrsup.agents.git_workspace import WorkspaceError, init_repo, open_repo
from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.incumbent import default_family
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.probe import probe_endpoint
from qrsup.agents.session import (
    AgentSpec,
    RunPaths,
    SessionConfig,
    SessionError,
    load_session,
    save_session,
)
from qrsup.agents.settings import SettingsError, WorkspaceSettings, load_settings
from qrsup.agents.spend import CostBudget, parse_cost_budget
from qrsup.kernels.judge.manifest import save_manifest, take_manifest
from qrsup.kernels.schema import ROLE_NAMES
from qrsup.kernels.suites import SuiteError, get_suite
from qrsup.supervisor.fleet_plan import (
    AgentChoice,
    LaunchError,
    ProposerFlags,
    ProposerSetup,
    check_flags_apply,
    parse_agent_option,
    proposer_setup,
)
from qrsup.supervisor.leases import parse_gpus

DEFAULT_GOAL = "beat incumbent by 5%"
DEFAULT_AGENTS = 3
_BUDGET = re.compile(r"^(?P<value>\d+(?:\.\d+)?)(?P<unit>s|m|h)?$")
Probe = Callable[[ModelConfig, Mapping[str, str]], str]


@dataclass(frozen=True)
class LaunchChoices:
    """What the person asked for; None (or empty) means not given: a default applies."""

    workspace: Path
    session: str = "default"
    agents: int | None = None
    proposer: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    command: str | None = None
    agent_options: tuple[str, ...] = ()
    suite: str | None = None
    goal: str | None = None
    budget: str | None = None
    cost_budget: str | None = None
    device: str = "cpu"
    init: bool = False
    gpus: str | None = None
    agents_per_gpu: int | None = None
    executor: str | None = None  # local (the default) or ray
    ray_address: str | None = None  # None: RAY_ADDRESS, else a local instance (ray only)


# The options that shape a new session; given for an existing one they are refused, not ignored.
NEW_SESSION_OPTIONS = {
    "agents": "--agents",
    "proposer": "--proposer",
    "model": "--model",
    "base_url": "--base-url",
    "api_key_env": "--api-key-env",
    "command": "--command",
    "agent_options": "--agent",
    "suite": "--suite",
    "goal": "--goal",
    "budget": "--budget",
    "cost_budget": "--cost-budget",
    "gpus": "--gpus",
    "agents_per_gpu": "--agents-per-gpu",
    "executor": "--executor",
    "ray_address": "--ray-address",
}


@dataclass(frozen=True)
class Limits:
    """An agent's budgets: iterations, seconds, dollars, tokens (0: none)."""

    iterations: int = 0
    seconds: float = 0.0
    cost: CostBudget = field(default_factory=CostBudget)


def given_new_session_options(choices: LaunchChoices) -> list[str]:
    """The flags among NEW_SESSION_OPTIONS that the person gave."""
    values = {f.name: getattr(choices, f.name) for f in fields(choices)}
    return [flag for name, flag in NEW_SESSION_OPTIONS.items() if values[name] not in (None, ())]


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


def new_agent(
    name: str, index: int, setup: ProposerSetup, goal: str, device: str, limits: Limits
) -> AgentSpec:
    """The agent at position `index`: roles exploit, near-miss, structural, cleanup in turn; the
    structural one searches another family."""
    role = ROLE_NAMES[index % len(ROLE_NAMES)]
    return AgentSpec(
        name=name,
        role=role,
        proposer=setup.proposer,
        goal=goal,
        family="recursive_wy" if role == "structural" else default_family(device),
        device=device,
        max_iterations=limits.iterations,
        max_seconds=limits.seconds,
        max_usd=limits.cost.usd,
        max_tokens=limits.cost.tokens,
        model=dict(setup.model),
        command=setup.command,
    )


def default_agents(
    count: int, proposer: str, goal: str, budget: str | None, device: str
) -> tuple[AgentSpec, ...]:
    """`count` agents a1… of one offline proposer (scripts and measurements use it)."""
    iterations, seconds = parse_budget(budget)
    limits = Limits(iterations, seconds)
    setup = ProposerSetup(proposer)
    return tuple(new_agent(f"a{i + 1}", i, setup, goal, device, limits) for i in range(count))


def prepare_session(
    choices: LaunchChoices, environ: Mapping[str, str] = os.environ, probe: Probe = probe_endpoint
) -> tuple[RunPaths, SessionConfig, bool]:
    """Reattach to an existing session, or create it with the defaults; (paths, config, created).

    Every check runs before the workspace or the session is touched.
    """
    workspace = choices.workspace.resolve()
    try:
        settings = load_settings(workspace, environ)
    except SettingsError as exc:
        raise LaunchError(str(exc)) from None
    paths = RunPaths.of(workspace, choices.session)
    if paths.config.exists():
        if given := given_new_session_options(choices):
            raise LaunchError(
                f"{', '.join(given)} only shape{'s' if len(given) == 1 else ''} a new session, and "
                f"session '{choices.session}' exists; change its agents with qrsup goal, steer, "
                "budget or the TUI, or start another with --session NAME"
            )
        _open_workspace(workspace, choices.init)
        return paths, load_session(paths), False
    config = _new_session(choices, settings, workspace, environ, probe)
    _open_workspace(workspace, choices.init)
    _ignore_runs(workspace)
    save_session(paths, config)
    save_manifest(paths.judge_manifest, take_manifest())
    return paths, config, True


def _new_session(
    choices: LaunchChoices,
    settings: WorkspaceSettings,
    workspace: Path,
    environ: Mapping[str, str],
    probe: Probe,
) -> SessionConfig:
    launch = settings.launch
    goal = choices.goal or DEFAULT_GOAL
    suite = choices.suite or launch.suite
    suite = suite or ("qr_v2" if choices.device.startswith("cuda") else "smoke")
    gpus = choices.gpus or launch.gpus or ""
    try:
        parse_goal(goal)
        get_suite(suite)
        parse_gpus(gpus or None, lambda: 0)
        cost = parse_cost_budget(choices.cost_budget or launch.cost_budget or "")
    except (GoalError, SuiteError, ValueError) as exc:
        raise LaunchError(str(exc)) from None
    per_gpu = choices.agents_per_gpu if choices.agents_per_gpu is not None else 1
    if per_gpu < 1:
        raise LaunchError(f"--agents-per-gpu must be at least 1, got {per_gpu}")
    iterations, seconds = parse_budget(choices.budget)
    limits = Limits(iterations, seconds, cost)
    plans = _agent_plans(choices, settings)
    try:
        agents = tuple(
            new_agent(choice.name, i, setup, goal, choices.device, limits)
            for i, (choice, setup) in enumerate(plans)
        )
    except SessionError as exc:
        raise LaunchError(str(exc)) from None
    _probe_endpoints(agents, environ, probe)
    return SessionConfig(
        name=choices.session,
        workspace=workspace,
        suite=suite,
        rule="quick",
        gpus=gpus,
        agents_per_gpu=per_gpu,
        executor=choices.executor or "local",
        ray_address=choices.ray_address or "",
        agents=agents,
    )


def _agent_plans(
    choices: LaunchChoices, settings: WorkspaceSettings
) -> list[tuple[AgentChoice, ProposerSetup]]:
    """Who proposes how: `--agent` options one by one, else `--agents` alike."""
    flags = ProposerFlags(choices.model, choices.base_url, choices.api_key_env, choices.command)
    if choices.agent_options:
        if choices.agents is not None and choices.agents != len(choices.agent_options):
            raise LaunchError(
                f"--agents {choices.agents} disagrees with the {len(choices.agent_options)} "
                "--agent option(s); give one or the other"
            )
        if choices.proposer is not None:
            raise LaunchError("--proposer applies to --agents; an --agent option names its own")
        picked = [parse_agent_option(text) for text in choices.agent_options]
        names = [c.name for c in picked]
        if dup := sorted({n for n in names if names.count(n) > 1}):
            raise LaunchError(f"--agent names must differ: {', '.join(dup)} given twice")
        plans = [(c, proposer_setup(c.proposer, c.value, flags, settings, c.name)) for c in picked]
        check_flags_apply(flags, [setup for _, setup in plans])
        return plans
    count = choices.agents if choices.agents is not None else settings.launch.agents
    count = count if count is not None else DEFAULT_AGENTS
    if count < 1:
        raise LaunchError(f"--agents must be at least 1, got {count}")
    proposer = choices.proposer or flags.implied_proposer() or settings.launch.proposer or "tuner"
    setup = proposer_setup(proposer, "", flags, settings, "--proposer")
    check_flags_apply(flags, [setup])
    return [(AgentChoice(f"a{i + 1}", proposer, ""), setup) for i in range(count)]


def _probe_endpoints(
    agents: tuple[AgentSpec, ...], environ: Mapping[str, str], probe: Probe
) -> None:
    """One `GET /models` per distinct endpoint, model and key variable."""
    seen: set[tuple[object, ...]] = set()
    for spec in agents:
        if spec.proposer != "openai":
            continue
        config = ModelConfig.from_mapping(spec.model)
        key = (config.base_url, config.model, config.fallback_model, config.api_key_env)
        if key in seen:
            continue
        seen.add(key)
        if problem := probe(config, environ):
            raise LaunchError(f"agent {spec.name}: {problem}")


def _open_workspace(workspace: Path, init: bool) -> None:
    try:
        open_repo(workspace).close()
    except WorkspaceError as exc:
        if not init:
            raise LaunchError(f"{exc} (or pass --init to let qrsup do it)") from None
        init_repo(workspace).close()


def _ignore_runs(workspace: Path) -> None:
    """Keep run directories out of the workspace's commits."""
    ignore = workspace / ".gitignore"
    lines = ignore.read_text().splitlines() if ignore.exists() else []
    if not any(line.strip() in ("runs/", "/runs/", "runs") for line in lines):
        with ignore.open("a") as handle:
            handle.write("\nruns/\n" if lines and lines[-1] else "runs/\n")
