"""How each agent of a new fleet proposes: from flags, `--agent` options and qrsup.toml.

Precedence is flags, then the environment (folded into the settings by `load_settings`), then
the file. Shared by the launch and the TUI's add-agent dialog, so both accept and refuse the same
things with the same one-line reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.command_proposer import template_problem
from qrsup.agents.session import PROPOSERS
from qrsup.agents.settings import WorkspaceSettings


class LaunchError(ValueError):
    """A launch choice that cannot be honoured, with a one-line reason."""


@dataclass(frozen=True)
class AgentChoice:
    """One `--agent NAME=PROPOSER[:MODEL_OR_COMMAND]`; `value` is "" when not given."""

    name: str
    proposer: str
    value: str = ""


@dataclass(frozen=True)
class ProposerFlags:
    """The proposer options of the command line (or the dialog's fields); None: not given."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    command: str | None = None

    def implied_proposer(self) -> str | None:
        """`--model` alone means openai agents, `--command` alone command agents."""
        model = self.model or self.base_url or self.api_key_env
        if model and self.command:
            raise LaunchError(
                "--model/--base-url and --command name different proposers; "
                "use --agent NAME=PROPOSER:… for a mixed fleet"
            )
        return "openai" if model else "command" if self.command else None


@dataclass(frozen=True)
class ProposerSetup:
    """A proposer with its model table (openai) or command template (command)."""

    proposer: str = "tuner"
    model: dict[str, object] = field(default_factory=dict)
    command: str = ""


def parse_agent_option(text: str) -> AgentChoice:
    """`a2=openai:gpt-5`, `a3=command:codex exec {prompt_file}`, `a1=tuner`."""
    name, equals, rest = text.partition("=")
    proposer, _, value = rest.partition(":")
    if not equals or not name.strip() or not proposer.strip():
        raise LaunchError(f"--agent takes NAME=PROPOSER[:MODEL_OR_COMMAND], got {text!r}")
    return AgentChoice(name.strip(), proposer.strip(), value.strip())


def proposer_setup(
    proposer: str, value: str, flags: ProposerFlags, settings: WorkspaceSettings, who: str
) -> ProposerSetup:
    """The setup for one agent; `value` (its own model or command) wins over the flags."""
    if proposer not in PROPOSERS:
        raise LaunchError(f"{who}: unknown proposer {proposer!r} (one of {', '.join(PROPOSERS)})")
    if proposer == "openai":
        return ProposerSetup("openai", model=_model_table(value, flags, settings, who))
    if proposer == "command":
        return ProposerSetup("command", command=_command(value, flags, settings, who))
    if value:
        raise LaunchError(f"{who}: the tuner takes no model or command, got {value!r}")
    return ProposerSetup("tuner")


def check_flags_apply(flags: ProposerFlags, setups: list[ProposerSetup]) -> None:
    """A proposer option that no agent uses is a mistake, not something to ignore."""
    used = {setup.proposer for setup in setups}
    for flag, value, proposer in (
        ("--model", flags.model, "openai"),
        ("--base-url", flags.base_url, "openai"),
        ("--api-key-env", flags.api_key_env, "openai"),
        ("--command", flags.command, "command"),
    ):
        if value and proposer not in used:
            raise LaunchError(f"{flag} applies to {proposer} agents, and none is launched")


def _model_table(
    value: str, flags: ProposerFlags, settings: WorkspaceSettings, who: str
) -> dict[str, object]:
    table = dict(settings.model)
    if flags.base_url:
        table["base_url"] = flags.base_url
    if flags.api_key_env:
        table["api_key_env"] = flags.api_key_env
    model = value or flags.model or table.get("model")
    if not model:
        raise LaunchError(
            f"{who}: an openai agent needs a model: --model NAME, --agent NAME=openai:MODEL, "
            "or model in qrsup.toml's [model]"
        )
    table["model"] = model
    try:
        ModelConfig.from_mapping(table)
    except ValueError as exc:
        raise LaunchError(f"{who}: {exc}") from None
    return table


def _command(value: str, flags: ProposerFlags, settings: WorkspaceSettings, who: str) -> str:
    template = value or flags.command or settings.commands.get("default", "")
    if not template:
        raise LaunchError(
            f"{who}: a command agent needs a command template: --command 'codex exec "
            "{prompt_file}', --agent NAME=command:TEMPLATE, or default in qrsup.toml's [commands]"
        )
    template = settings.commands.get(template, template)  # a name from [commands]
    if problem := template_problem(template):
        raise LaunchError(f"{who}: {problem}")
    return template
