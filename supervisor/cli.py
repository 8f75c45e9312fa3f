"""The `qrsup` command line: the TUI (no command), headless runs, judging, and scripting verbs."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path
from typing import NoReturn

from qrsup.agents.session import PROPOSERS
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.executor_option import add_executor_options
from qrsup.supervisor.judge_command import add_judge_commands, cuda_available, judge_command
from qrsup.supervisor.profile_command import add_profile_command, profile_command
from rich.console import Console

AGENT_VERBS = ("pause", "resume", "kill", "restart")
# Piped or redirected, Rich assumes 80 columns and cuts the status and bench tables' cells
# ("prop…", "s…"); a file or a pager gets whole rows instead.
PIPED_WIDTH = 200


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as a single line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _session_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", type=Path, help="default: here")
    parser.add_argument("--session", help="session name (default: default)")


def _launch_options(parser: argparse.ArgumentParser) -> None:
    _session_options(parser)
    new = parser.add_argument_group("a new session's agents (refused for an existing session)")
    new.add_argument("--agents", type=int, help="how many agents (3)")
    new.add_argument("--proposer", choices=PROPOSERS, help="every agent's proposer (tuner)")
    new.add_argument("--model", help="the openai agents' model (implies --proposer openai)")
    new.add_argument("--base-url", help="an OpenAI-compatible endpoint (or OPENAI_BASE_URL)")
    new.add_argument("--api-key-env", help="the variable holding its key (OPENAI_API_KEY)")
    new.add_argument(
        "--command",
        dest="command_template",
        help="the command agents' template, e.g. 'codex exec {prompt_file}'",
    )
    new.add_argument(
        "--agent",
        action="append",
        dest="agent_options",
        metavar="NAME=PROPOSER[:MODEL_OR_COMMAND]",
        help="one agent of a mixed fleet; repeat it (a1=tuner a2=openai:gpt-5 a3=command:TEMPLATE)",
    )
    new.add_argument("--suite", help="qr_v2 on CUDA, smoke on the CPU by default")
    new.add_argument("--goal", help="e.g. 'geomean < 2ms' or 'beat incumbent by 5%%'")
    new.add_argument("--budget", help="per agent: iterations (20) or time (30m, 2h)")
    new.add_argument(
        "--cost-budget", help="per agent: $5 or 200k tokens; reaching it pauses the agent and asks"
    )
    new.add_argument("--gpus", help="GPUs agents may lease, e.g. 0,1,2 (default: all visible)")
    new.add_argument("--agents-per-gpu", type=int, help="agents sharing one GPU (default: 1)")
    parser.add_argument("--init", action="store_true", help="git init the workspace if needed")
    add_executor_options(new)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="qrsup", description="Auto-research supervisor for GPU kernels.")
    _launch_options(parser)
    parser.set_defaults(workspace=Path.cwd(), session="default")
    commands = parser.add_subparsers(dest="command", parser_class=OneLineParser)
    add_judge_commands(commands)
    add_profile_command(commands)
    # A session verb's options are set only when given, so `qrsup --workspace W status` and
    # `qrsup status --workspace W` both work: an unset option keeps the top level's value.
    session_verb = partial(commands.add_parser, argument_default=argparse.SUPPRESS)
    run = session_verb("run", help="start or reattach a session's agents")
    _launch_options(run)
    run.add_argument(
        "--headless", action="store_true", default=False, help="no TUI: one line per event"
    )
    status = session_verb("status", help="the agents, beam and incumbent of a session")
    _session_options(status)
    stop = session_verb("stop", help="stop every agent of a session (until resumed)")
    _session_options(stop)
    for name, help_text, extra in (
        ("steer", "send steering text to an agent", "text"),
        ("goal", "give an agent a new goal", "goal_text"),
        ("ask", "ask an agent a side question", "question"),
    ):
        sub = session_verb(name, help=help_text)
        _session_options(sub)
        sub.add_argument("agent")
        sub.add_argument(extra, nargs="+", metavar=extra.removesuffix("_text"))
    broadcast = session_verb("broadcast", help="send steering text to every agent")
    _session_options(broadcast)
    broadcast.add_argument("text", nargs="+")
    budget = session_verb("budget", help="set an agent's cost budget ($10, 500k tokens)")
    _session_options(budget)
    budget.add_argument("agent")
    budget.add_argument("limit", help="dollars, tokens or both: '$10', '500k tokens', '$10,2M tok'")
    for verb in AGENT_VERBS:
        sub = session_verb(verb, help=f"{verb} an agent")
        _session_options(sub)
        sub.add_argument("agent")
    promote = session_verb("promote", help="promote a candidate to incumbent (git commit)")
    _session_options(promote)
    promote.add_argument("candidate")
    promote.add_argument(
        "--force",
        action="store_true",
        default=False,
        help="commit even when the revalidation measures it slower than the incumbent",
    )
    export = session_verb("export", help="a candidate as one self-contained contest file")
    _session_options(export)
    export.add_argument("candidate", help="a candidate file, or a candidate id of the session")
    export.add_argument("-o", "--output", type=Path, default=Path("submission.py"))
    export.add_argument("--force", action="store_true", default=False, help="overwrite -o")
    return parser


def output_console() -> Console:
    """The terminal's width on a terminal; PIPED_WIDTH elsewhere, unless COLUMNS says."""
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return Console()
    return Console(width=PIPED_WIDTH)


def main(argv: list[str] | None = None) -> int:
    console = output_console()
    try:
        args = build_parser().parse_args(argv)
        if args.command in ("test", "bench"):
            return judge_command(args, console)
        if args.command == "profile":
            return profile_command(args, console)
        if args.command == "export":
            from qrsup.supervisor.export import export_command

            return export_command(args, console)
        from qrsup.supervisor import commands

        if args.command is None or args.command == "run":
            choices = commands.launch_choices(args, "cuda" if cuda_available() else "cpu")
            if args.command == "run" and args.headless:
                return commands.headless(choices, console)
            return commands.tui(choices)
        return commands.dispatch(args, console)
    except UsageError as exc:
        print(f"qrsup: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("qrsup: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
