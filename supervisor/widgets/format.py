"""Short, fixed-width renderings of figures shared by several panels."""

from __future__ import annotations

from qrsup.supervisor.fleet import AgentStatus
from rich.text import Text

STATE_STYLES = {
    "crashed": "bold red",
    "goal met": "bold green",
    "paused": "yellow",
    "waiting": "magenta",
    "stalled": "magenta",
    "evaluating": "cyan",
    "proposing": "blue",
    "stopped": "dim",
}
VERDICT_STYLES = {"pass": "green", "fail": "red", "crash": "bold red", "timeout": "red"}
# Verdicts whose stored name reads as blame on the candidate: "tampered" means the judge's own
# files changed under a session (nothing was judged); a cheating candidate fails gate `tamper`.
VERDICT_LABELS = {"tampered": "judge changed"}


def verdict_label(verdict: str | None) -> str:
    """A verdict as people read it, or a dash."""
    return VERDICT_LABELS.get(verdict, verdict) if verdict else "—"


def ms(ns: float | None) -> str:
    """Milliseconds with four significant figures, or a dash."""
    return "—" if ns is None else f"{ns / 1e6:.4g}"


def figure_cell(full_ns: float | None, quick_ns: float | None) -> Text:
    """A full-suite figure; without one, the quick stage's, dimmed and marked `q`, since it was
    timed under another rule and on fewer specs."""
    if full_ns is None and quick_ns is not None:
        return Text(f"{ms(quick_ns)} q", style="dim")
    return Text(ms(full_ns))


def age(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if seconds < 120 else f"{seconds / 60:.0f}m"


def size(num_bytes: float) -> str:
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def verdict_text(verdict: str | None) -> Text:
    """Plain text (never markup: agents write brackets) styled by the verdict."""
    return Text(verdict_label(verdict), style=VERDICT_STYLES.get(verdict or "", ""))


def agent_state(status: AgentStatus) -> Text:
    """`waiting for quota until 14:05`, `paused at its budget: …`, `stalled · proposing`,
    `stopping · quick: waiting for the CPU`."""
    detail = status.detail if status.detail not in ("", status.state) else ""
    # An evaluation's detail names its stage ("quick: waiting for the GPU"); colour says the rest.
    evaluating = status.state == "evaluating" and detail
    state = detail if evaluating else f"{status.state} {detail}".strip()
    style = STATE_STYLES.get(status.state, "")
    if status.stalled and status.alive:
        state = f"stalled · {state}"
        style = style if status.state in ("crashed", "paused") else STATE_STYLES["stalled"]
    if status.stopping:  # a stop waits for the evaluation in flight, which can take minutes
        state, style = f"stopping · {state}", STATE_STYLES["stopped"]
    return Text(state, style=style)


def agent_spend(status: AgentStatus) -> str:
    """Dollars where a price is known, else tokens; `!` once the budget is reached."""
    spend = status.spend
    text = f"${spend.usd:.2f}" if spend.usd else spend.text()
    return f"{text}!" if status.budget.exceeded(spend) else text
