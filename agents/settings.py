"""The workspace's `qrsup.toml` and the environment: defaults a person keeps beside a workspace.

Built once by `load_settings` (defaults, then the file, then the environment) into one frozen
object that the command line, the TUI, the agents and the tests share; command-line flags are
applied over it when a session is launched. Keys never live here: they come from the
environment only, read where a request is made.

```toml
[launch]                # a new session's defaults (flags override each)
suite = "qr_v2"
gpus = "0,1"
agents = 3
proposer = "openai"     # tuner, openai or command
cost_budget = "$5"      # per agent: dollars ($5, 5usd), tokens (200k tokens), or both

[model]                 # the openai proposer's endpoint and model (any `[agents.model]` setting)
model = "gpt-5"
base_url = "http://127.0.0.1:8000/v1"   # OPENAI_BASE_URL overrides it
api_key_env = "OPENAI_API_KEY"          # the variable holding the key, never the key
fallback_model = "gpt-5-mini"           # asked while the model waits for quota

[commands]              # command templates for the command proposer, by name
default = "codex exec {prompt_file}"
claude = "claude -p {prompt}"

[hooks]                 # run once per status change of an agent
command = "notify-send qrsup '{agent}: {status} {detail}'"
on = ["new_best", "crash", "stall", "budget", "quota"]

[guidance]
file = "guidance.md"    # every agent re-reads it each iteration

[judge]
isolation = "auto"      # "auto", "required" (fail without the boundary) or "off"
user = "qrsup-judge"    # who the contestant runs as when the judge runs as root
private_dir_mb = 2048   # the contestant's work directory, Triton's cache included
tmp_mb = 512            # each of its /tmp and /dev/shm
max_processes = 4096    # processes and threads; a fork bomb stops here
warm = true             # an agent on a GPU starts each run's referee ahead of it

[loop]
compile_patience_s = 45 # a tuner candidate whose kernels take longer to compile is not judged
```
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from qrsup.agents.hooks import HookSettings
from qrsup.agents.proposers.chat import checked_settings
from qrsup.agents.spend import parse_cost_budget
from qrsup.kernels.judge.sandbox import IsolationSettings

SETTINGS_FILE = "qrsup.toml"
# How long the loop waits for a tuner candidate's kernels before it sets the candidate aside
# unjudged (`[loop] compile_patience_s`). On an H200 candidates' kernels took 1–27 s, and one
# (huge.path = "fused") 218 s while the GPU stood idle (docs/benchmarks.md, 2026-12-04).
PATIENCE_S = 45.0
MiB = 2**20
BASE_URL_ENV = "OPENAI_BASE_URL"
DEFAULT_GUIDANCE = "guidance.md"
_JUDGE_KEYS = {"isolation", "user", "private_dir_mb", "tmp_mb", "max_processes", "warm"}
_TABLES = {"launch", "model", "commands", "hooks", "guidance", "judge", "loop"}


class SettingsError(ValueError):
    """qrsup.toml cannot be read or holds a value qrsup does not accept."""


@dataclass(frozen=True)
class LaunchDefaults:
    """The `[launch]` table: a new session's defaults; None leaves the product's default."""

    suite: str | None = None
    """Suite name or TOML file; qr_v2 on CUDA, smoke on the CPU otherwise."""
    gpus: str | None = None
    """GPUs agents may lease, e.g. "0,1"; every visible one otherwise."""
    agents: int | None = None
    """How many agents a new session starts (3)."""
    proposer: str | None = None
    """tuner, openai or command (tuner)."""
    cost_budget: str | None = None
    """Per agent, e.g. "$5" or "200k tokens"; none otherwise."""


@dataclass(frozen=True)
class WorkspaceSettings:
    """What qrsup.toml and the environment set; every field has a default, so both are optional."""

    judge: IsolationSettings = field(default_factory=IsolationSettings)
    """The judge's boundary."""
    warm_referees: bool = True
    """Agents on a GPU start the referee of their next judge run ahead of it (`[judge] warm`)."""
    launch: LaunchDefaults = field(default_factory=LaunchDefaults)
    """A new session's defaults."""
    model: Mapping[str, object] = field(default_factory=dict)
    """Model settings for `openai` agents, and for side questions about agents without a model;
    `base_url` from OPENAI_BASE_URL when that is set."""
    commands: Mapping[str, str] = field(default_factory=dict)
    """Named command templates; `default` serves `--proposer command` without `--command`."""
    hooks: HookSettings = field(default_factory=HookSettings)
    """The status-change hook."""
    guidance_file: str = DEFAULT_GUIDANCE
    """Relative to the workspace; every agent re-reads it each iteration."""
    compile_patience_s: float = PATIENCE_S
    """How long an agent waits for a tuner candidate's kernels before it sets the candidate
    aside unjudged (`[loop] compile_patience_s`)."""


def load_settings(workspace: Path, environ: Mapping[str, str] = os.environ) -> WorkspaceSettings:
    """The workspace's settings: defaults, then its qrsup.toml, then the environment."""
    path = workspace / SETTINGS_FILE
    data: dict[str, object] = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(f"{path}: {exc}") from None
    if unknown := sorted(set(data) - _TABLES):
        raise SettingsError(f"{path}: unknown table(s) or key(s): {', '.join(unknown)}")
    try:
        model = checked_settings(_table(data, "model"))
        if environ.get(BASE_URL_ENV):
            model["base_url"] = environ[BASE_URL_ENV]
        judge = _table(data, "judge")
        return WorkspaceSettings(
            judge=_judge(judge),
            warm_referees=_flag(judge, "judge", "warm", default=True),
            launch=_launch(_table(data, "launch")),
            model=model,
            commands=_commands(_table(data, "commands")),
            hooks=_hooks(_table(data, "hooks")),
            guidance_file=_guidance(_table(data, "guidance")),
            compile_patience_s=_loop(_table(data, "loop")),
        )
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{path}: {exc}") from None


def _table(data: Mapping[str, object], name: str) -> dict[str, object]:
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ValueError(f"[{name}] must be a table")
    return table


def _only(table: Mapping[str, object], name: str, known: set[str]) -> None:
    if unknown := sorted(set(table) - known):
        raise ValueError(f"unknown [{name}] key(s): {', '.join(unknown)}")


def _flag(table: Mapping[str, object], name: str, key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ValueError(f"[{name}] {key} must be true or false, got {value!r}")
    return value


def _judge(table: Mapping[str, object]) -> IsolationSettings:
    _only(table, "judge", _JUDGE_KEYS)
    defaults = IsolationSettings()
    values = {
        "isolation": defaults.mode,
        "user": defaults.user,
        "private_dir_mb": defaults.private_dir_bytes // MiB,
        "tmp_mb": defaults.tmp_bytes // MiB,
        "max_processes": defaults.max_processes,
        **{k: v for k, v in table.items() if k != "warm"},
    }
    try:
        return IsolationSettings(
            mode=str(values["isolation"]),
            user=values["user"],  # type: ignore[arg-type]
            private_dir_bytes=int(values["private_dir_mb"]) * MiB,  # type: ignore[call-overload]
            tmp_bytes=int(values["tmp_mb"]) * MiB,  # type: ignore[call-overload]
            max_processes=int(values["max_processes"]),  # type: ignore[call-overload]
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"[judge]: {exc}") from None


def _loop(table: Mapping[str, object]) -> float:
    """The `[loop]` table's compile patience, in seconds."""
    _only(table, "loop", {"compile_patience_s"})
    value = table.get("compile_patience_s", PATIENCE_S)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(
            f"[loop] compile_patience_s must be a number of seconds > 0, got {value!r}"
        )
    return float(value)


def _launch(table: Mapping[str, object]) -> LaunchDefaults:
    _only(table, "launch", {"suite", "gpus", "agents", "proposer", "cost_budget"})
    text = {k: table[k] for k in ("suite", "gpus", "proposer", "cost_budget") if k in table}
    if any(not isinstance(v, str) for v in text.values()):
        raise ValueError(f"[launch]: {', '.join(sorted(text))} must be strings")
    agents = table.get("agents")
    if agents is not None and (not isinstance(agents, int) or agents < 1):
        raise ValueError(f"[launch] agents must be a whole number ≥ 1, got {agents!r}")
    if "cost_budget" in text:
        parse_cost_budget(str(text["cost_budget"]))
    return LaunchDefaults(agents=agents, **text)  # type: ignore[arg-type]


def _commands(table: Mapping[str, object]) -> dict[str, str]:
    bad = sorted(k for k, v in table.items() if not isinstance(v, str))
    if bad:
        raise ValueError(f"[commands] {', '.join(bad)}: a command template is a string")
    return {k: str(v) for k, v in table.items()}


def _hooks(table: Mapping[str, object]) -> HookSettings:
    _only(table, "hooks", {"command", "on", "timeout_s"})
    on = table.get("on", HookSettings.on)
    if not isinstance(on, list | tuple) or not all(isinstance(s, str) for s in on):
        raise ValueError("[hooks] on must be a list of statuses")
    return HookSettings(
        command=str(table.get("command", "")),
        on=tuple(on),
        timeout_s=float(table.get("timeout_s", HookSettings.timeout_s)),  # type: ignore[arg-type]
    )


def _guidance(table: Mapping[str, object]) -> str:
    _only(table, "guidance", {"file"})
    file = table.get("file", DEFAULT_GUIDANCE)
    if not isinstance(file, str) or not file.strip():
        raise ValueError("[guidance] file must be a path relative to the workspace")
    return file
