"""Checks made on a candidate file before any process is started for it."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CONTEST_FORBIDDEN_WORDS = ("stream",)
"""The contest rejects a file holding any of these, in any case, comments included."""


@dataclass(frozen=True)
class StaticCheck:
    """`ok`, or the one-line reason the file cannot be judged."""

    ok: bool
    reason: str = ""
    source: str = ""


def check_candidate_file(path: Path, forbidden_words: tuple[str, ...]) -> StaticCheck:
    """The file exists, is Python that parses, defines `custom_kernel`, and avoids banned words."""
    if not path.exists():
        return StaticCheck(False, f"candidate file not found: {path}")
    if not path.is_file():
        return StaticCheck(False, f"candidate is not a regular file: {path}")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return StaticCheck(False, f"{path} is not Python: not UTF-8 text")
    except OSError as exc:
        return StaticCheck(False, f"cannot read {path}: {exc.strerror}")
    return check_candidate_source(source, str(path), forbidden_words)


def check_candidate_source(
    source: str, where: str, forbidden_words: tuple[str, ...]
) -> StaticCheck:
    """The source parses, defines `custom_kernel` and avoids banned words (`where` names it)."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as exc:
        return StaticCheck(False, f"{where} is not Python: {exc.msg} (line {exc.lineno})")
    except (RecursionError, MemoryError, ValueError) as exc:
        # Nesting deeper than the parser's stack, or too large for its memory: refused here,
        # where it would otherwise take down the process that checks it.
        what = type(exc).__name__
        return StaticCheck(False, f"{where} is not Python this judge can parse ({what})")
    if not _defines_custom_kernel(tree):
        return StaticCheck(False, f"{where} does not define custom_kernel(A) at module level")
    word, line = find_forbidden_word(source, forbidden_words)
    if word:
        return StaticCheck(
            False,
            f"{where} contains the forbidden word '{word}' (line {line}); "
            "the contest rejects such files",
        )
    return StaticCheck(True, "", source)


def find_forbidden_word(text: str, forbidden_words: tuple[str, ...]) -> tuple[str, int]:
    """The first banned word `text` holds, in any case, and its line; ("", 0) when none."""
    lowered = text.lower()
    for word in forbidden_words:
        if word.lower() in lowered:
            return word, 1 + lowered[: lowered.index(word.lower())].count("\n")
    return "", 0


def _defines_custom_kernel(tree: ast.Module) -> bool:
    for node in tree.body:
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == "custom_kernel"
        ):
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "custom_kernel" for t in targets):
                return True
        if isinstance(node, ast.ImportFrom | ast.Import) and any(
            (alias.asname or alias.name) == "custom_kernel" for alias in node.names
        ):
            return True
        if isinstance(node, ast.ClassDef) and node.name == "custom_kernel":
            return True
    return False
