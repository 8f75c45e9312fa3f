"""`qrsup run --headless`: start or reattach the session's agents and print one line per event."""

from __future__ import annotations

import signal
import time
from types import FrameType

from qrsup.agents.lifecycle import Desired
from qrsup.agents.records import format_ms, shorten, timestamp
from qrsup.kernels.schema import Actor
from qrsup.supervisor.event_tail import EventTail
from qrsup.supervisor.fleet import Fleet
from rich.console import Console

POLL_SECONDS = 0.5
STATUS_CHANGES = {
    "budget_paused": "paused at its cost budget (qrsup budget to go on)",
    "quota_wait": "waiting for quota",
    "quota_resumed": "quota back",
    "stalled": "stalled",
    "new_best": "new best",
}
STOP_GRACE_SECONDS = 600.0


def event_line(event: dict) -> str | None:
    """One line for the events a person follows; None for the rest."""
    kind, agent = event.get("event"), event.get("agent", "?")
    stamp = str(event.get("time", ""))[11:]
    if kind == "iteration":
        hypothesis = event.get("hypothesis") or "—"
        # A pass's reason too: "not promising" beside a geomean below the incumbent's reads as
        # a wrong call unless the quick-rule figures it was weighed by are on the same line.
        reason = shorten(str(event.get("reason") or ""), 160)
        tail = f" ({reason})" if reason else ""
        return (
            f"{stamp} {agent} it {event.get('iteration')} {event.get('candidate_id') or '—'} "
            f"{event.get('verdict')} {format_ms(event.get('geomean_ns'))} → {event.get('decision')}"
            f" · {shorten(hypothesis, 100)}{tail}"
        )
    if kind == "goal_met":
        return f"{stamp} {agent} goal met: {event.get('goal')} by {event.get('candidate_id')}"
    if kind == "steering":
        sender, text = event.get("sender"), event.get("text")
        return f"{stamp} {agent} took {event.get('kind')} from {sender}: {text}"
    if kind in ("crashed", "stopped"):
        detail = event.get("reason") or str(event.get("error", "")).strip().splitlines()[-1:]
        return f"{stamp} {agent} {kind}: {detail}"
    if kind == "advisor":
        return f"{stamp} {agent} advisor: {event.get('ideas')}"
    if kind in STATUS_CHANGES and not event.get("again"):
        detail = event.get("detail") or event.get("model")
        return f"{stamp} {agent} {STATUS_CHANGES[kind]}: {detail}"
    return None


def run_headless(fleet: Fleet, console: Console) -> int:
    """Follow the agents until all have stopped or met their goals; Ctrl-C stops, twice kills.

    Exits 1 when an agent crashed during the run (its `crashed` event, or a death without one).
    """
    names = fleet.names()
    started_at = timestamp()
    running_before = {n for n in names if fleet.is_running(n)}
    tails = {n: EventTail(fleet.paths.events(n), from_end=n in running_before) for n in names}
    for name, pid in fleet.start_all().items():
        verb = "reattached to" if name in running_before else "started"
        console.print(f"{verb} {name} (pid {pid})", highlight=False)
    interrupts = 0
    crashed: set[str] = set()

    def follow() -> None:
        for name, tail in tails.items():
            for event in tail.read_new():
                if event.get("event") == "crashed" and str(event.get("time", "")) >= started_at:
                    crashed.add(name)
                if line := event_line(event):
                    console.print(line, highlight=False, markup=False)

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            console.print("stopping agents: evaluations in flight finish; Ctrl-C again to kill")
            for name in names:
                if fleet.is_running(name):
                    fleet.stop(name, Actor.HUMAN, "Ctrl-C in run --headless", Desired.QUIT)
        else:
            console.print("killing agents")
            for name in names:
                fleet.kill(name, Actor.HUMAN, "Ctrl-C twice in run --headless", Desired.QUIT)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        while True:
            follow()
            fleet.notice_deaths()
            statuses = fleet.statuses()
            live = [s for s in statuses if s.alive]
            if not live:
                break
            if all(s.state == "goal met" for s in live):
                console.print("every running agent has met its goal; stopping them")
                for status in live:
                    fleet.stop(
                        status.name, Actor.SUPERVISOR, "every agent met its goal", Desired.QUIT
                    )
                fleet.wait_stopped([s.name for s in live], STOP_GRACE_SECONDS)
            time.sleep(POLL_SECONDS)
        follow()
    finally:
        signal.signal(signal.SIGINT, previous)
    crashed |= {s.name for s in fleet.statuses() if s.state in ("crashed", "died")}
    if crashed:
        every = "every agent" if crashed >= set(names) else ", ".join(sorted(crashed))
        console.print(f"crashed: {every} (see agent.log)", highlight=False)
        return 1
    return 0
