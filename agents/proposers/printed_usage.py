"""The usage a coding-agent CLI prints, read from its output where it prints any.

Recognised, newest form first:
- JSON lines with `total_cost_usd` and `usage` (Claude Code's `--output-format json`), or with
  `usage` alone per turn (Codex's `exec --json`: summed);
- Aider's `Tokens: 12k sent, 1.2k received. Cost: $0.02 message, $0.15 session.`;
- Codex's `tokens used: 12,345` (a total, counted as prompt tokens);
- any `total cost: $0.12` or `cost: $0.12` line for dollars.

A CLI that prints none of these costs nothing in the records; its spend is unknown, not zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from qrsup.agents.proposal import Usage

_AIDER = re.compile(
    r"Tokens:\s*(?P<sent>[\d.,]+)(?P<su>[kKmM]?)\s*sent,\s*(?P<recv>[\d.,]+)(?P<ru>[kKmM]?)\s*"
    r"received\.(?:\s*Cost:\s*\$(?P<msg>[\d.]+)\s*message,\s*\$(?P<session>[\d.]+)\s*session)?"
)
_CODEX_TOKENS = re.compile(r"tokens used:?\s*\n?\s*(?P<n>[\d,]+)", re.I)
_COST = re.compile(r"\b(?:total\s+)?cost:?\s*\$\s*(?P<usd>\d+(?:\.\d+)?)", re.I)
_SCALE = {"": 1, "k": 1_000, "m": 1_000_000}


def printed_usage(output: str) -> Usage:
    """Tokens and dollars the command's output reports; zero for what it does not."""
    return _from_json_lines(output) or _from_aider(output) or _from_text(output) or Usage()


def _from_json_lines(output: str) -> Usage | None:
    totals: Usage | None = None
    turns: list[Usage] = []
    for line in output.splitlines():
        line = line.strip()
        if not (line.startswith("{") and "usage" in line):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("usage"), dict):
            continue
        tokens = _tokens(data["usage"])
        cost = data.get("total_cost_usd", data.get("cost_usd"))
        if isinstance(cost, int | float):
            totals = Usage(*tokens, float(cost))
        else:
            turns.append(Usage(*tokens))
    if totals is not None:
        return totals
    if turns:
        return Usage(sum(u.prompt_tokens for u in turns), sum(u.completion_tokens for u in turns))
    return None


def _tokens(usage: Mapping[str, object]) -> tuple[int, int]:
    def count(*keys: str) -> int:
        return sum(int(v) for k in keys if isinstance(v := usage.get(k), int | float))

    prompt = count(
        "input_tokens", "prompt_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
    )
    return prompt, count("output_tokens", "completion_tokens")


def _from_aider(output: str) -> Usage | None:
    matches = list(_AIDER.finditer(output))
    if not matches:
        return None
    sent = sum(_scaled(m["sent"], m["su"]) for m in matches)
    received = sum(_scaled(m["recv"], m["ru"]) for m in matches)
    sessions = [float(m["session"]) for m in matches if m["session"]]
    return Usage(sent, received, sessions[-1] if sessions else 0.0)


def _from_text(output: str) -> Usage | None:
    tokens = [int(m["n"].replace(",", "")) for m in _CODEX_TOKENS.finditer(output)]
    costs = [float(m["usd"]) for m in _COST.finditer(output)]
    if not tokens and not costs:
        return None
    return Usage(tokens[-1] if tokens else 0, 0, costs[-1] if costs else 0.0)


def _scaled(number: str, unit: str) -> int:
    return int(float(number.replace(",", "")) * _SCALE[unit.lower()])
