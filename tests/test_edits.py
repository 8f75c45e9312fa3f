"""Parsing and applying a model's answer: each unusable answer names what is wrong."""

from __future__ import annotations

from qrsup.agents.proposal import ProposalFailure
from qrsup.agents.proposers.edits import EditedCandidate, apply_answer

PARENT = "import torch\n\nWIDTH = 32  \nDEPTH = 2\n\n\ndef custom_kernel(a):\n    return a\n"


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def answer(*blocks: str, header: str = "HYPOTHESIS: wider\nFAMILY: tiles\n") -> str:
    return header + "\n".join(blocks)


def test_blocks_apply_in_order_and_family_is_read():
    result = apply_answer(
        answer(block("DEPTH = 2", "DEPTH = 4"), block("DEPTH = 4", "DEPTH = 8")), PARENT, "x"
    )
    assert isinstance(result, EditedCandidate)
    assert "DEPTH = 8" in result.source and result.family == "tiles"


def test_markdown_decorated_header_lines_are_understood():
    header = "**HYPOTHESIS:** deeper pipeline\n**FAMILY:** `pipelining`\n"
    result = apply_answer(answer(block("DEPTH = 2", "DEPTH = 3"), header=header), PARENT, "x")
    assert isinstance(result, EditedCandidate)
    assert (result.hypothesis, result.family) == ("deeper pipeline", "pipelining")


def test_family_defaults_to_the_parents():
    result = apply_answer(
        answer(block("DEPTH = 2", "DEPTH = 3"), header="HYPOTHESIS: h\n"), PARENT, "blocked-wy"
    )
    assert isinstance(result, EditedCandidate) and result.family == "blocked-wy"


def test_search_without_the_parents_trailing_spaces_still_applies_once():
    result = apply_answer(
        answer(block("WIDTH = 32\nDEPTH = 2", "WIDTH = 64\nDEPTH = 2")), PARENT, "x"
    )
    assert isinstance(result, EditedCandidate)
    assert "WIDTH = 64\nDEPTH = 2\n" in result.source and "32" not in result.source


def test_search_matching_several_places_does_not_apply():
    result = apply_answer(answer(block("    return a", "    return a.clone()")), PARENT * 2, "x")
    assert isinstance(result, ProposalFailure) and result.kind == "no_apply"
    assert "matches" in result.reason and "places" in result.reason


def test_unclosed_block_is_malformed():
    text = answer(block("DEPTH = 2", "DEPTH = 3")) + "<<<<<<< SEARCH\nWIDTH = 32\n=======\n"
    result = apply_answer(text, PARENT, "x")
    assert isinstance(result, ProposalFailure) and result.kind == "malformed"
    assert "2 SEARCH markers but 1 complete" in result.reason


def test_empty_search_is_malformed():
    result = apply_answer(answer("<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n"), PARENT, "x")
    assert isinstance(result, ProposalFailure) and result.kind == "malformed"
    assert "empty SEARCH" in result.reason


def test_edit_that_changes_nothing_does_not_apply():
    result = apply_answer(answer(block("DEPTH = 2", "DEPTH = 2")), PARENT, "x")
    assert isinstance(result, ProposalFailure) and result.kind == "no_apply"
    assert "unchanged" in result.reason


def test_whole_file_takes_the_last_fenced_block_defining_custom_kernel():
    text = (
        "HYPOTHESIS: rewrite\n```python\ndef helper():\n    pass\n```\n"
        "```python\nimport torch\n\n\ndef custom_kernel(a):\n    return torch.geqrf(a)\n```\n"
    )
    result = apply_answer(text, PARENT, "x")
    assert isinstance(result, EditedCandidate)
    assert result.source.startswith("import torch") and "helper" not in result.source


def test_answer_with_neither_blocks_nor_a_file_is_malformed():
    result = apply_answer("HYPOTHESIS: vibes\nJust make it faster.", PARENT, "x")
    assert isinstance(result, ProposalFailure) and result.kind == "malformed"
    assert "SEARCH/REPLACE" in result.reason
