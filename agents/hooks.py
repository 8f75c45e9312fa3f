"""Status-change hooks: a person's command run once per change of an agent's status.

The agent that sees the change runs the hook (`[hooks]` in qrsup.toml): a new session best, its
own crash, the start of a stall, a budget pause, a wait for quota. The template is split like a
shell would and each argument filled, so `notify-send qrsup "{agent}: {status} {detail}"` needs
no quoting. It runs off the loop's thread, in its own process group, under a timeout; each run is
recorded as a `hook` event with its exit status.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from qrsup.agents.proposers.chat import scrub_key_like
from qrsup.kernels.judge.processes import communicate_or_kill
from qrsup.prompts.loader import PromptError, fill, placeholders

HOOK_STATUSES = ("new_best", "crash", "stall", "budget", "quota")
HOOK_FIELDS = ("status", "agent", "session", "detail", "candidate_id", "geomean_ms", "workspace")
OUTPUT_CHARS = 500


@dataclass(frozen=True)
class HookSettings:
    """The `[hooks]` table: the command, which statuses run it, and how long it may take."""

    command: str = ""
    """Template; placeholders: {status} {agent} {session} {detail} {candidate_id} {geomean_ms}
    {workspace}. Empty: no hook."""
    on: tuple[str, ...] = HOOK_STATUSES
    """The statuses that run it."""
    timeout_s: float = 60.0
    """Its process group is killed past this."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.on) - set(HOOK_STATUSES))
        if unknown:
            raise ValueError(
                f"[hooks] on: unknown status(es) {', '.join(unknown)}; "
                f"known: {', '.join(HOOK_STATUSES)}"
            )
        if self.timeout_s <= 0:
            raise ValueError("[hooks] timeout_s must be positive")
        try:
            argv = shlex.split(self.command)
        except ValueError as exc:
            raise ValueError(f"[hooks] command: {exc}") from None
        names = set().union(*(placeholders(token) for token in argv)) if argv else set()
        if unknown := sorted(names - set(HOOK_FIELDS)):
            raise ValueError(
                f"[hooks] command: unknown placeholder(s) {', '.join(unknown)}; "
                f"known: {', '.join('{' + f + '}' for f in HOOK_FIELDS)}"
            )


class StatusHook:
    """Runs one agent's hook; `record` receives one `hook` event per run."""

    def __init__(
        self,
        settings: HookSettings,
        agent: str,
        session: str,
        workspace: str,
        record: Callable[[dict[str, object]], None],
    ) -> None:
        self.settings = settings
        self._base = {"agent": agent, "session": session, "workspace": workspace}
        self._record = record

    def fire(
        self,
        status: str,
        detail: str,
        candidate_id: str | None = None,
        geomean_ns: float | None = None,
        wait: bool = False,
    ) -> threading.Thread | None:
        """Run the hook for `status` if configured for it; `wait` blocks until it ends."""
        if not self.settings.command or status not in self.settings.on:
            return None
        values = {
            **self._base,
            "status": status,
            "detail": detail,
            "candidate_id": candidate_id or "",
            "geomean_ms": f"{geomean_ns / 1e6:.4g}" if geomean_ns else "",
        }
        thread = threading.Thread(target=self._run, args=(values,), name="hook", daemon=True)
        thread.start()
        if wait:
            thread.join(self.settings.timeout_s + 5)
        return thread

    def _run(self, values: Mapping[str, str]) -> None:
        started = time.monotonic()
        event: dict[str, object] = {"event": "hook", "status": values["status"]}
        try:
            argv = [fill(t, values, "the hook command") for t in shlex.split(self.settings.command)]
            event.update(_execute(argv, values, self.settings.timeout_s))
        except (PromptError, ValueError, OSError) as exc:
            event.update(exit_status=None, output=f"cannot run the hook: {exc}")
        event["seconds"] = round(time.monotonic() - started, 2)
        self._record(event)


def _execute(argv: list[str], values: Mapping[str, str], timeout_s: float) -> dict[str, object]:
    environ = {**os.environ, **{f"QRSUP_{k.upper()}": v for k, v in values.items()}}
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=environ,
    )
    output, timed_out = communicate_or_kill(process, timeout_s)
    text = scrub_key_like(output.decode(errors="replace"))[-OUTPUT_CHARS:]
    return {"exit_status": process.returncode, "timed_out": timed_out, "output": text}
