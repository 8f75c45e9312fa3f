"""Prompt templates, read from disk at each use so a user can edit them while agents run.

A placeholder is a name in single braces, `{goal}`. Any other brace (code, JSON, LaTeX) is left
alone, and `{{goal}}` renders as a literal `{goal}`. Values are inserted in one pass, so braces
inside a value (a candidate's source) are never read as placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent

_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]\w*)\}\}|\{([A-Za-z_]\w*)\}")


class PromptError(Exception):
    """A template is missing, unreadable, or names a placeholder nobody fills."""


def placeholders(text: str) -> set[str]:
    """The names a template expects."""
    return {m.group(2) for m in _PLACEHOLDER.finditer(text) if m.group(2)}


def fill(text: str, values: Mapping[str, str], where: str) -> str:
    """`text` with every placeholder replaced; `where` names the template in errors."""
    missing = sorted(placeholders(text) - values.keys())
    if missing:
        known = ", ".join(f"{{{name}}}" for name in sorted(values))
        raise PromptError(
            f"{where}: no value for placeholder(s) {', '.join(f'{{{m}}}' for m in missing)}; "
            f"this template may use: {known}"
        )

    def substitute(match: re.Match[str]) -> str:
        if match.group(1):
            return "{" + match.group(1) + "}"
        return values[match.group(2)]

    return _PLACEHOLDER.sub(substitute, text)


def load_template(name: str, directory: Path = PROMPTS_DIR) -> str:
    """The text of `directory/name`."""
    path = directory / name
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt template not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptError(f"cannot read prompt template {path}: {exc}") from None


def render(name: str, values: Mapping[str, str], directory: Path = PROMPTS_DIR) -> str:
    """Load the template `name` and fill it."""
    return fill(load_template(name, directory), values, str(directory / name))
