"""Turn a model's answer into a candidate file: a hypothesis plus search/replace blocks or a file.

The answer format is in `prompts/reply_format.md`. Every way an answer can be unusable is a
`ProposalFailure` whose reason says what to fix, so the loop can record it and go on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qrsup.agents.proposal import ProposalFailure

_HYPOTHESIS = re.compile(r"^[\s*#>_-]*HYPOTHESIS[\s*_]*:[\s*_]*(.+?)[\s*_]*$", re.I | re.M)
_FAMILY = re.compile(r"^[\s*#>_-]*FAMILY[\s*_]*:[\s*_`]*([^\s*`]+)", re.I | re.M)
_SEARCH_MARK = re.compile(r"^<{5,9} ?SEARCH\b", re.M)
_BLOCK = re.compile(
    r"^<{5,9} ?SEARCH\b[^\n]*\n(.*?)^={5,9}[ \t]*\n(.*?)^>{5,9} ?REPLACE\b[^\n]*$",
    re.M | re.S,
)
_FENCE = re.compile(r"^```[ \t]*(?:python|py)?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_DEFINES_KERNEL = re.compile(r"^(def custom_kernel\b|custom_kernel\s*=)", re.M)


@dataclass(frozen=True)
class Edit:
    """Replace the one place `search` occurs with `replace`."""

    search: str
    replace: str


@dataclass(frozen=True)
class EditedCandidate:
    """The candidate an answer produced, and what the answer says it tests."""

    source: str
    hypothesis: str
    family: str


def apply_answer(
    answer: str, parent_source: str, parent_family: str
) -> EditedCandidate | ProposalFailure:
    """Parse `answer` and apply it to the parent; the family defaults to the parent's."""
    hypothesis, family = read_header(answer)
    if hypothesis is None:
        return ProposalFailure("malformed", "the answer has no 'HYPOTHESIS:' line")
    edits = parse_edits(answer)
    if isinstance(edits, ProposalFailure):
        return edits
    source = apply_edits(parent_source, edits) if edits else whole_file(answer)
    if isinstance(source, ProposalFailure):
        return source
    if source == parent_source:
        return ProposalFailure("no_apply", "the edit leaves the parent unchanged")
    return EditedCandidate(source, hypothesis, family or parent_family)


def read_header(text: str) -> tuple[str | None, str | None]:
    """The last 'HYPOTHESIS:' and 'FAMILY:' values of `text`, None where absent."""
    hypotheses = _HYPOTHESIS.findall(text)
    families = _FAMILY.findall(text)
    return (
        hypotheses[-1].strip() if hypotheses else None,
        families[-1].strip().lower() if families else None,
    )


def parse_edits(answer: str) -> list[Edit] | ProposalFailure:
    """The SEARCH/REPLACE blocks of an answer, in order; none when it has no block."""
    blocks = list(_BLOCK.finditer(answer))
    opened = len(_SEARCH_MARK.findall(answer))
    if opened > len(blocks):
        return ProposalFailure(
            "malformed",
            f"{opened} SEARCH markers but {len(blocks)} complete blocks: a block lacks its "
            "'=======' or '>>>>>>> REPLACE' line",
        )
    edits = [Edit(_chomp(m.group(1)), _chomp(m.group(2))) for m in blocks]
    for number, edit in enumerate(edits, start=1):
        if not edit.search.strip():
            return ProposalFailure(
                "malformed", f"block {number} has an empty SEARCH part; quote the lines to change"
            )
    return edits


def apply_edits(source: str, edits: list[Edit]) -> str | ProposalFailure:
    """`source` with every edit applied in order, each matching exactly one place."""
    for number, edit in enumerate(edits, start=1):
        count = source.count(edit.search)
        if count == 1:
            source = source.replace(edit.search, edit.replace, 1)
            continue
        if count > 1:
            return _no_apply(number, edit, f"matches {count} places; quote more lines")
        loose = _replace_ignoring_trailing_space(source, edit)
        if loose is None:
            return _no_apply(number, edit, "matches nothing in the parent")
        source = loose
    return source


def whole_file(answer: str) -> str | ProposalFailure:
    """The last fenced Python block that defines `custom_kernel`."""
    files = [m.group(1) for m in _FENCE.finditer(answer) if _DEFINES_KERNEL.search(m.group(1))]
    if not files:
        return ProposalFailure(
            "malformed",
            "the answer has neither SEARCH/REPLACE blocks nor a ```python file defining "
            "custom_kernel",
        )
    return files[-1]


def _replace_ignoring_trailing_space(source: str, edit: Edit) -> str | None:
    """Models often drop trailing spaces; match line by line without them, once only."""
    lines = source.splitlines(keepends=True)
    wanted = [line.rstrip() for line in edit.search.splitlines()]
    stripped = [line.rstrip() for line in lines]
    starts = [
        i for i in range(len(lines) - len(wanted) + 1) if stripped[i : i + len(wanted)] == wanted
    ]
    if len(starts) != 1:
        return None
    start, end = starts[0], starts[0] + len(wanted)
    ending = "\n" if lines[end - 1].endswith("\n") else ""
    replaced = edit.replace + ending if edit.replace else ""
    return "".join([*lines[:start], replaced, *lines[end:]])


def _no_apply(number: int, edit: Edit, why: str) -> ProposalFailure:
    first_line = next((line.strip() for line in edit.search.splitlines() if line.strip()), "")
    return ProposalFailure(
        "no_apply", f"SEARCH block {number} (starting {first_line[:80]!r}) {why}"
    )


def _chomp(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text
