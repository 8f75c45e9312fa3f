"""What an agent has spent on models, and the cost budget at which it pauses and asks.

Spend is summed from the agent's own records (each iteration's usage, each advisor call's), so a
restarted agent continues from what it had spent. A budget is dollars, tokens or both; dollars
count only where a price is known (the model table's prices, or the cost a coding-agent CLI
prints).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.proposal import Usage
from qrsup.agents.records import read_events
from qrsup.agents.store import Store

_DOLLARS = re.compile(r"^(?:\$\s*(?P<a>\d+(?:\.\d+)?)|(?P<b>\d+(?:\.\d+)?)\s*(?:usd|\$))$", re.I)
_TOKENS = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[km]?)\s*(?:tok|toks|tokens)$", re.I)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


@dataclass(frozen=True)
class Spend:
    """Dollars and tokens spent so far."""

    usd: float = 0.0
    tokens: int = 0

    def plus(self, usage: Usage) -> Spend:
        """This spend and one more request's usage."""
        return Spend(
            self.usd + usage.cost_usd, self.tokens + usage.prompt_tokens + usage.completion_tokens
        )

    def to_dict(self) -> dict[str, float]:
        return {"usd": round(self.usd, 6), "tokens": self.tokens}

    @classmethod
    def from_dict(cls, data: object) -> Spend:
        """A spend from a heartbeat's `extra`; anything unreadable is no spend."""
        if not isinstance(data, Mapping):
            return cls()
        usd, tokens = data.get("usd", 0.0), data.get("tokens", 0)
        ok = isinstance(usd, int | float) and isinstance(tokens, int | float)
        return cls(float(usd), int(tokens)) if ok else cls()

    def text(self) -> str:
        """`$0.42 · 12.3k tok`, or `—` when nothing was spent."""
        parts = [f"${self.usd:.2f}"] if self.usd else []
        if self.tokens:
            parts.append(f"{tokens_text(self.tokens)} tok")
        return " · ".join(parts) or "—"


def total(spends: Iterable[Spend]) -> Spend:
    """The sum of several agents' spend: a session's."""
    usd, tokens = 0.0, 0
    for spend in spends:
        usd, tokens = usd + spend.usd, tokens + spend.tokens
    return Spend(usd, tokens)


@dataclass(frozen=True)
class CostBudget:
    """A per-agent limit; zero means no limit of that kind."""

    usd: float = 0.0
    tokens: int = 0

    @property
    def is_set(self) -> bool:
        return bool(self.usd or self.tokens)

    def exceeded(self, spend: Spend) -> str:
        """Why `spend` has reached this budget, or "" while it has not."""
        if self.usd and spend.usd >= self.usd:
            return f"${spend.usd:.2f} of its ${self.usd:.2f} budget spent"
        if self.tokens and spend.tokens >= self.tokens:
            return f"{tokens_text(spend.tokens)} of its {tokens_text(self.tokens)} tokens spent"
        return ""

    def text(self) -> str:
        """The budget as `parse_cost_budget` reads it back."""
        parts = [f"${self.usd:g}"] if self.usd else []
        if self.tokens:
            parts.append(f"{self.tokens} tokens")
        return ",".join(parts) or "none"

    def to_dict(self) -> dict[str, float]:
        return {"usd": self.usd, "tokens": self.tokens}


def parse_cost_budget(text: str) -> CostBudget:
    """`$5`, `5usd`, `200k tokens`, `2M tok`, two of them comma-separated, or "" or `none` (no
    budget)."""
    if text.strip().lower() == "none":
        return CostBudget()
    usd, tokens = 0.0, 0
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if dollars := _DOLLARS.match(part):
            usd = float(dollars["a"] or dollars["b"])
        elif counted := _TOKENS.match(part):
            tokens = int(float(counted["n"]) * _SCALE[counted["unit"].lower()])
        else:
            raise ValueError(
                f"cost budget must be dollars ($5, 5usd) or tokens (200k tokens), got {part!r}"
            )
    return CostBudget(usd, tokens)


def recorded_spend(store: Store, events: Path, agent: str) -> Spend:
    """What the agent's records say it spent: its iterations' usage and its advisor's."""
    spend = Spend()
    for record in store.iterations(agent):
        spend = spend.plus(_usage(record.usage))
    for event in read_events(events):
        if event.get("event") == "advisor":
            spend = spend.plus(_usage(event))
    return spend


def tokens_text(tokens: int) -> str:
    """`950`, `12.3k`, `4.1M`."""
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}k"
    return f"{tokens / 1_000_000:.1f}M"


def _usage(data: Mapping[str, object]) -> Usage:
    def number(key: str) -> float:
        value = data.get(key, 0)
        return float(value) if isinstance(value, int | float) else 0.0

    return Usage(int(number("prompt_tokens")), int(number("completion_tokens")), number("cost_usd"))
