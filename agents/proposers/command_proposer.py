"""The `command` proposer: an external coding-agent CLI edits the candidate in the work dir.

Each iteration the parent is written to `candidate.py` and the request to `prompt.md`; the
command from the session's template (e.g. `codex exec {prompt_file}`) runs there in its own
process group under a timeout, and the candidate is whatever file it leaves. Its output goes
back in the transcript for the agent log.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.proposal import Proposal, ProposalContext, ProposalFailure
from qrsup.agents.proposers.chat import scrub_key_like
from qrsup.agents.proposers.edits import read_header
from qrsup.agents.proposers.printed_usage import printed_usage
from qrsup.agents.proposers.prompt_builder import (
    DEFAULT_LIMITS,
    DEFAULT_SOURCES,
    PromptLimits,
    PromptSources,
    build_request,
    clip,
)
from qrsup.kernels.judge.processes import kill_tree
from qrsup.kernels.judge.read_only_view import read_only_view_command
from qrsup.prompts.loader import PromptError, fill, placeholders, render

# Shell conventions for "command not found" and "not executable": a human must fix the template.
_BROKEN_COMMAND_STATUSES = (126, 127)
PLACEHOLDERS = ("prompt_file", "prompt", "candidate_file", "hypothesis_file", "work_dir")


def template_problem(template: str) -> str:
    """ "" for a template that can run here, else one line saying what is wrong with it."""
    try:
        argv = shlex.split(template)
    except ValueError as exc:
        return f"command template {template!r}: {exc}"
    if not argv:
        return "the command template is empty"
    named = set().union(*(placeholders(token) for token in argv))
    if unknown := sorted(named - set(PLACEHOLDERS)):
        known = " ".join(f"{{{name}}}" for name in PLACEHOLDERS)
        return f"command template {template!r}: unknown placeholder(s) {', '.join(unknown)}; " + (
            f"known: {known}"
        )
    if placeholders(argv[0]):
        return f"command template {template!r}: the program itself cannot be a placeholder"
    if shutil.which(argv[0]) is None:
        return f"command template {template!r}: no program {argv[0]!r} on PATH"
    return ""


@dataclass(frozen=True)
class CommandConfig:
    """An external CLI run once per iteration; placeholders name the files it works with."""

    template: str
    """Command line, split like a shell would; `{prompt_file}`, `{prompt}`, `{candidate_file}`,
    `{hypothesis_file}` and `{work_dir}` are filled per argument, so no quoting is needed."""
    timeout_s: float = 1800.0
    """The whole process group is killed past this."""
    transcript_chars: int = 20_000
    """Tail of the command's output kept in the transcript."""
    read_only: tuple[Path, ...] = ()
    """Trees the command may read but not write (the workspace, the judge's own files) where the
    platform allows; its work dir inside them stays writable."""


@dataclass(frozen=True)
class CommandRun:
    """How the command ended and what it printed."""

    exit_status: int | None
    timed_out: bool
    elapsed_s: float
    output: str


@dataclass(frozen=True)
class WorkFiles:
    """The files one iteration uses in the agent's work dir."""

    work_dir: Path

    @property
    def candidate(self) -> Path:
        """The parent's copy the command edits; the candidate is what it leaves."""
        return self.work_dir / "candidate.py"

    @property
    def prompt(self) -> Path:
        """The full request, for CLIs that take a prompt file."""
        return self.work_dir / "prompt.md"

    @property
    def hypothesis(self) -> Path:
        """Where the command writes its one-line hypothesis."""
        return self.work_dir / "hypothesis.txt"

    @property
    def output(self) -> Path:
        """The command's stdout and stderr."""
        return self.work_dir / "command_output.txt"


class CommandProposer:
    """Runs a coding-agent CLI on the parent candidate each iteration."""

    name = "command"
    free = False

    def __init__(
        self,
        config: CommandConfig,
        sources: PromptSources = DEFAULT_SOURCES,
        limits: PromptLimits = DEFAULT_LIMITS,
    ) -> None:
        self.config = config
        self._sources = sources
        self._limits = limits

    def propose(self, context: ProposalContext) -> Proposal | ProposalFailure:
        """The file the command leaves, or why there is none."""
        files = WorkFiles(context.work_dir)
        files.work_dir.mkdir(parents=True, exist_ok=True)
        values = {
            "prompt_file": str(files.prompt),
            "candidate_file": str(files.candidate),
            "hypothesis_file": str(files.hypothesis),
            "work_dir": str(files.work_dir),
        }
        try:
            task = render("command_task.md", values, self._sources.prompts_dir)
            prompt = build_request(context, task, self._sources, self._limits).as_text()
            argv = [
                fill(token, {**values, "prompt": prompt}, "the command template")
                for token in shlex.split(self.config.template)
            ]
        except (PromptError, ValueError) as exc:
            return ProposalFailure("config", str(exc), pause=True)
        if not argv:
            return ProposalFailure("config", "the command template is empty", pause=True)
        files.candidate.write_text(context.parent.source, encoding="utf-8")
        files.hypothesis.unlink(missing_ok=True)
        files.prompt.write_text(prompt, encoding="utf-8")
        if self.config.read_only:
            argv = read_only_view_command(argv, list(self.config.read_only), [files.work_dir])
        run = run_command(argv, files, self.config.timeout_s)
        if isinstance(run, ProposalFailure):
            return run
        return self._outcome(run, files, context)

    def _outcome(
        self, run: CommandRun, files: WorkFiles, context: ProposalContext
    ) -> Proposal | ProposalFailure:
        transcript = self._transcript(run)
        usage = printed_usage(run.output)
        if run.timed_out:
            return ProposalFailure(
                "timeout",
                f"the command ran past {self.config.timeout_s:g} s; its processes were killed",
                usage=usage,
                transcript=transcript,
            )
        if not files.candidate.is_file():
            return ProposalFailure(
                "no_apply",
                "the command removed the candidate file",
                usage=usage,
                transcript=transcript,
            )
        source = files.candidate.read_text(encoding="utf-8", errors="replace")
        if source == context.parent.source:
            last = clip(_last_line(run.output), 200)
            broken = run.exit_status in _BROKEN_COMMAND_STATUSES
            return ProposalFailure(
                "endpoint" if broken else "no_apply",
                f"the command exited with status {run.exit_status} and left the candidate "
                f"unchanged; its last output: {last or '(none)'}",
                usage=usage,
                pause=broken,
                transcript=transcript,
            )
        hypothesis, family = self._header(files, run)
        return Proposal(
            source=source,
            hypothesis=hypothesis,
            family=family or context.parent.family,
            usage=usage,
            transcript=transcript,
        )

    def _header(self, files: WorkFiles, run: CommandRun) -> tuple[str, str | None]:
        written = ""
        if files.hypothesis.is_file():
            written = files.hypothesis.read_text(encoding="utf-8", errors="replace")
        hypothesis, family = read_header(f"{run.output}\n{written}")
        lines = [line.strip() for line in written.splitlines() if line.strip()]
        if lines and not lines[0].upper().startswith("HYPOTHESIS"):
            hypothesis = lines[0]
        if not hypothesis:
            hypothesis = "(the command gave no hypothesis; see its output in the agent log)"
        return clip(hypothesis, 300), family

    def _transcript(self, run: CommandRun) -> str:
        ended = "timed out" if run.timed_out else f"exit {run.exit_status}"
        header = (
            f"command · {shlex.split(self.config.template)[0]} · {ended} · {run.elapsed_s:.1f} s"
        )
        output = run.output[-self.config.transcript_chars :]
        return f"{header}\n--- output ---\n{output}"


def run_command(
    argv: list[str], files: WorkFiles, timeout_s: float
) -> CommandRun | ProposalFailure:
    """Run `argv` in the work dir in a new session; kill all its processes when it ends."""
    started = time.monotonic()
    with files.output.open("wb") as output:
        try:
            process = subprocess.Popen(
                argv,
                cwd=files.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return ProposalFailure(
                "endpoint", f"cannot start {argv[0]!r}: {exc.strerror or exc}", pause=True
            )
        try:
            status: int | None = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_tree(process.pid)
            status, timed_out = process.wait(), True
        # Whatever it left running in its group (a server, a watcher) goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    text = files.output.read_text(encoding="utf-8", errors="replace")
    return CommandRun(status, timed_out, time.monotonic() - started, scrub_key_like(text))


def _last_line(text: str) -> str:
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
