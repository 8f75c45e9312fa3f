"""Short, fixed-width renderings of figures shared by several panels."""

from __future__ import annotations

from rich.text import Text

STATE_STYLES = {
    "crashed": "bold red",
    "goal met": "bold green",
    "paused": "yellow",
    "evaluating": "cyan",
    "waiting": "yellow",
    "proposing": "blue",
    "stopped": "dim",
}
VERDICT_STYLES = {"pass": "green", "fail": "red", "crash": "bold red", "timeout": "red"}


def ms(ns: float | None) -> str:
    """Milliseconds with four significant figures, or a dash."""
    return "—" if ns is None else f"{ns / 1e6:.4g}"


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


def styled(value: str, styles: dict[str, str]) -> Text:
    """Plain text (never markup: agents write brackets) styled by its value."""
    return Text(value, style=styles.get(value, ""))
