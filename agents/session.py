"""A session's launch description (`session.toml`) and the layout of its run directory."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from qrsup.kernels.schema import ROLE_NAMES, Candidate

PROPOSERS = ("tuner", "openai", "command")
EXECUTORS = ("local", "ray")  # where judge runs execute (qrsup.kernels.executors)


class SessionError(ValueError):
    """A session description that cannot be used, with a one-line reason."""


@dataclass(frozen=True)
class AgentSpec:
    """One research agent: who it is, what it aims for, how it proposes, where it runs."""

    name: str
    role: str = "exploit"
    proposer: str = "tuner"
    goal: str = "beat incumbent by 3%"
    family: str = "blocked_wy"
    device: str = "cpu"  # cpu; cuda (a GPU leased at start); cuda:N (pinned to GPU N)
    max_iterations: int = 0  # 0: no limit
    max_seconds: float = 0.0  # 0: no limit
    max_usd: float = 0.0  # cost budget; reaching it pauses the agent and asks; 0: no limit
    max_tokens: int = 0  # the same in tokens
    model: dict[str, object] = field(default_factory=dict)
    command: str = ""

    def __post_init__(self) -> None:
        if not self.name.replace("-", "").replace("_", "").isalnum():
            raise SessionError(f"agent name {self.name!r} must be letters, digits, - or _")
        if self.role not in ROLE_NAMES:
            raise SessionError(f"agent {self.name}: role must be one of {', '.join(ROLE_NAMES)}")
        if self.proposer not in PROPOSERS:
            raise SessionError(f"agent {self.name}: proposer must be one of {', '.join(PROPOSERS)}")


@dataclass(frozen=True)
class SessionConfig:
    """What was launched: the suite, the device policy, the agents and the promotion rule."""

    name: str
    workspace: Path
    suite: str = "smoke"
    rule: str = "quick"
    auto_promote: bool = True
    structural_protection: int = 10  # iterations a new structural entry is safe from eviction
    advisor_after: int = 8  # non-improving iterations before the advisor is asked
    incumbent_refresh: int = 10  # an agent's evaluations before it re-times the incumbent's quick
    # A change confined to some shape classes gets its full stage on their specs alone, its
    # parent's full-stage figures standing for the rest (evaluation.Inherited).
    full_on_focus: bool = True
    advisor: dict[str, object] = field(default_factory=dict)  # the advisor's model; empty: playbook
    gpus: str = ""  # GPUs agents on "cuda" may lease, e.g. "0,1,2"; empty: every visible one
    agents_per_gpu: int = 1
    executor: str = "local"  # "local": this host's GPUs; "ray": tasks on a Ray cluster
    ray_address: str = ""  # the cluster (`--ray-address` or RAY_ADDRESS); "": a local instance
    agents: tuple[AgentSpec, ...] = ()

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise SessionError(
                f"executor must be one of {', '.join(EXECUTORS)}, not {self.executor!r}"
            )

    def agent(self, name: str) -> AgentSpec:
        for spec in self.agents:
            if spec.name == name:
                return spec
        raise SessionError(f"no agent named {name!r} in session {self.name}")

    def with_agent(self, spec: AgentSpec) -> SessionConfig:
        if any(a.name == spec.name for a in self.agents):
            raise SessionError(f"session {self.name} already has an agent named {spec.name!r}")
        return replace(self, agents=(*self.agents, spec))


@dataclass(frozen=True)
class RunPaths:
    """Where everything of one session lives: `runs/<session>/` in the workspace."""

    root: Path

    @classmethod
    def of(cls, workspace: Path, session: str) -> RunPaths:
        return cls(workspace / "runs" / session)

    @property
    def config(self) -> Path:
        return self.root / "session.toml"

    @property
    def store(self) -> Path:
        return self.root / "store.sqlite"

    @property
    def judge_manifest(self) -> Path:
        """Hashes of the judge's files when the session started (qrsup.kernels.judge.manifest)."""
        return self.root / "judge-manifest.json"

    @property
    def triton_caches(self) -> Path:
        """Compiled kernels kept between judge runs (qrsup.kernels.judge.triton_cache)."""
        return self.root / "triton"

    @property
    def ray_instance(self) -> Path:
        """The session's local Ray instance, while one runs (qrsup.supervisor.ray_host)."""
        return self.root / "ray" / "instance.json"

    @property
    def ray_users(self) -> Path:
        """Processes besides the agents that keep the local Ray instance up, one file each."""
        return self.root / "ray" / "users"

    @property
    def promote_lock(self) -> Path:
        return self.root / "promote.lock"

    def agent_dir(self, name: str) -> Path:
        return self.root / "agents" / name

    def agent_log(self, name: str) -> Path:
        return self.agent_dir(name) / "agent.log"

    def events(self, name: str) -> Path:
        return self.agent_dir(name) / "events.jsonl"

    def every_events(self) -> list[Path]:
        """Every agent's events, those added while the session ran included."""
        return sorted(self.root.glob("agents/*/events.jsonl"))

    def inbox(self, name: str) -> Path:
        return self.agent_dir(name) / "inbox"

    def work(self, name: str) -> Path:
        return self.agent_dir(name) / "work"

    def source_file(self, name: str, row: Candidate) -> Path:
        """`row`'s source, written afresh where agent `name`'s judge runs read it: the store's
        copy is the one judged, whatever the work directory holds now."""
        path = self.work(name) / f"{row.id}.py"
        path.write_text(row.source)
        return path

    def heartbeat(self, name: str) -> Path:
        return self.agent_dir(name) / "heartbeat"

    def judge_slot(self, name: str) -> Path:
        """The agent's judge run on a Ray cluster: queued, running where, or waiting."""
        return self.agent_dir(name) / "judge.json"

    def pid_file(self, name: str) -> Path:
        return self.agent_dir(name) / "pid"

    def profile(self, name: str) -> Path:
        return self.work(name) / "profiles" / "latest.txt"

    def ensure(self, name: str) -> None:
        for path in (self.inbox(name), self.work(name)):
            path.mkdir(parents=True, exist_ok=True)


def save_session(paths: RunPaths, config: SessionConfig) -> None:
    """Write session.toml atomically."""
    paths.root.mkdir(parents=True, exist_ok=True)
    top = {k: v for k, v in asdict(config).items() if k not in ("agents", "advisor")}
    top["workspace"] = str(config.workspace)
    lines = [f"{key} = {_toml(value)}" for key, value in top.items()]
    if config.advisor:
        lines += ["", "[advisor]"] + [f"{k} = {_toml(v)}" for k, v in config.advisor.items()]
    for spec in config.agents:
        lines += ["", "[[agents]]"]
        for key, value in asdict(spec).items():
            if key == "model":
                continue
            lines.append(f"{key} = {_toml(value)}")
        if spec.model:
            lines += ["[agents.model]"] + [f"{k} = {_toml(v)}" for k, v in spec.model.items()]
    temp = paths.config.with_suffix(".tmp")
    temp.write_text("\n".join(lines) + "\n")
    temp.replace(paths.config)


def load_session(paths: RunPaths) -> SessionConfig:
    """Read session.toml; a SessionError says what is wrong."""
    try:
        data = tomllib.loads(paths.config.read_text())
    except FileNotFoundError:
        raise SessionError(f"no session at {paths.root} (missing session.toml)") from None
    except tomllib.TOMLDecodeError as exc:
        raise SessionError(f"{paths.config} is malformed: {exc}") from None
    known = {f.name for f in fields(AgentSpec)}
    try:
        agents = tuple(
            AgentSpec(**{k: v for k, v in raw.items() if k in known})
            for raw in data.pop("agents", [])
        )
        top = {f.name for f in fields(SessionConfig)}
        values = {k: v for k, v in data.items() if k in top}
        values["workspace"] = Path(values["workspace"])
        return SessionConfig(**values, agents=agents)
    except (KeyError, TypeError) as exc:
        raise SessionError(f"{paths.config} is incomplete: {exc}") from None


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, dict):  # a model table's `retry`, as an inline table
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    raise SessionError(f"cannot write {value!r} to session.toml")
