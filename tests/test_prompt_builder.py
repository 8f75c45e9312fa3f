"""Prompts: placeholders filled from templates on disk, memory bounded however long the run."""

from __future__ import annotations

import dataclasses

import pytest
from qrsup.agents.proposers.prompt_builder import (
    MemoryLimits,
    build_request,
    compact_memory,
    estimate_tokens,
)
from qrsup.prompts.loader import PromptError, fill, load_template, placeholders, render

from tests.proposal_contexts import context, history


def test_fill_replaces_names_and_leaves_code_braces_alone():
    text = 'x = {"a": {1, 2}} {goal} {{goal}} f"{ x }"'
    assert fill(text, {"goal": "fast"}, "t.md") == 'x = {"a": {1, 2}} fast {goal} f"{ x }"'


def test_braces_inside_values_are_not_read_as_placeholders():
    assert fill("{a}|{b}", {"a": "{b}", "b": "B"}, "t.md") == "{b}|B"


def test_missing_placeholder_names_the_template_and_what_it_may_use():
    with pytest.raises(
        PromptError, match=r"t\.md: no value for placeholder\(s\) \{goal\}.*\{agent\}"
    ):
        fill("{goal}", {"agent": "ada"}, "t.md")


def test_missing_template_is_a_clear_error(tmp_path):
    with pytest.raises(PromptError, match="prompt template not found"):
        render("nope.md", {}, tmp_path)


def test_every_shipped_role_has_a_template_and_the_request_uses_it(tmp_path):
    for role in ("exploit", "near-miss", "structural", "cleanup"):
        request = build_request(context(tmp_path, role=role), "TASK")
        assert f"role: {role}" in request.messages[1]["content"]
        assert request.messages[1]["content"].rstrip().endswith("TASK")


def test_shipped_templates_use_only_values_the_code_fills():
    assert placeholders(load_template("iteration.md")) >= {"parent_source"}
    assert placeholders(load_template("system.md")) == {"problem", "rules"}


def test_memory_lists_newest_first_with_the_best_pass_on_top():
    text = compact_memory(history(9), MemoryLimits())
    lines = text.splitlines()
    assert lines[0].startswith("9 outcomes") and "best 2.991 ms at #9" in lines[0]
    assert lines[1].startswith("- #9 ") and lines[2].startswith("- #8 ")


def test_older_outcomes_collapse_to_distinct_hypotheses():
    repeated = history(40) + tuple(
        dataclasses.replace(o, iteration=o.iteration + 40) for o in history(20)
    )
    text = compact_memory(repeated, MemoryLimits(recent_entries=5, older_hypotheses=100))
    assert "Earlier (55 outcomes)" in text
    assert text.count("idea 3: widen") == 1


def test_memory_stays_under_its_cap_after_200_iterations():
    limits = MemoryLimits()
    assert len(compact_memory(history(200), limits)) <= limits.max_chars
    tight = MemoryLimits(max_chars=1500)
    text = compact_memory(history(200), tight)
    assert len(text) <= 1500 and text.splitlines()[-1].endswith("more lines omitted")


def test_prompt_after_200_iterations_is_about_as_big_as_after_20(tmp_path):
    after_20 = build_request(context(tmp_path, memory=history(20)), "TASK").estimated_tokens
    after_200 = build_request(context(tmp_path, memory=history(200)), "TASK").estimated_tokens
    assert after_200 < after_20 * 1.5


def test_token_estimate_is_proportional_to_length():
    assert estimate_tokens("") == 0
    assert estimate_tokens("x" * 700) == 200
