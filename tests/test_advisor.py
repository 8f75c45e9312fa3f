"""The advisor: once per plateau, ideas from a model or else untried ones from the playbook."""

from __future__ import annotations

import re

import pytest
from qrsup.agents.advisor import Advisor, load_playbook
from qrsup.agents.proposal import OutcomeSummary
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.retry import RetryPolicy
from qrsup.agents.stall import stall_start

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.proposal_contexts import context, outcome

PATIENCE = 8


def run_of(verdicts: str, start: int = 1) -> list[OutcomeSummary]:
    """'P' a pass faster than all before it, 'f' a failure, 's' a slower pass."""
    outcomes = []
    best = 10e6
    for iteration, mark in enumerate(verdicts, start=start):
        if mark == "P":
            best *= 0.9
            outcomes.append(outcome(iteration, "pass", best))
        elif mark == "s":
            outcomes.append(outcome(iteration, "pass", 20e6))
        else:
            outcomes.append(outcome(iteration))
    return outcomes


def firings(advisor: Advisor, outcomes: list[OutcomeSummary]) -> list[int]:
    """Iterations after which the loop's call to maybe_advise returned ideas."""
    fired = []
    for count in range(1, len(outcomes) + 1):
        if advisor.maybe_advise(outcomes[:count]).ideas:
            fired.append(outcomes[count - 1].iteration)
    return fired


def test_advisor_fires_exactly_once_per_plateau():
    outcomes = run_of("P" + "fsfffsff" + "fffff" + "P" + "ffsfffff" + "fff")
    assert firings(Advisor("ada", patience=PATIENCE), outcomes) == [9, 23]


def test_an_agent_that_never_passed_is_on_a_plateau_from_the_start():
    assert stall_start(run_of("f" * 7), PATIENCE) is None
    assert stall_start(run_of("f" * 8), PATIENCE) == 0


def test_on_demand_advice_does_not_use_up_the_plateaus_advice():
    advisor = Advisor("ada", patience=PATIENCE)
    assert advisor.advise(run_of("Pff")).ideas
    assert advisor.maybe_advise(run_of("P" + "f" * 8)).ideas


def test_without_a_model_ideas_come_from_the_playbook_labelled_as_such(tmp_path):
    advice = Advisor("ada").advise(run_of("P"), context(tmp_path))
    assert advice.source == "playbook" and "no advisor model" in advice.note
    assert 1 <= len(advice.ideas) <= 3
    ids = {idea.idea_id for idea in load_playbook()}
    assert all(re.match(r"\[playbook:([a-z0-9-]+)\] ", idea)[1] in ids for idea in advice.ideas)
    assert advice.usage.prompt_tokens == 0


def test_playbook_ideas_skip_what_the_agent_tried_or_was_given(tmp_path):
    tried = [
        OutcomeSummary(1, "c1", "cuda-graphs replay of the launches", "pass", 2e6),
        OutcomeSummary(2, "c2", "fixed-shape kernels for n=512", "fail", None),
    ]
    advisor = Advisor("ada", already_given=["[playbook:custom-trinv] earlier advice"])
    given: list[str] = []
    ids = {idea.idea_id for idea in load_playbook()}
    for _ in range(3):
        given += advisor.advise(tried, context(tmp_path)).ideas
    drawn = [re.match(r"\[playbook:([a-z0-9-]+)\]", idea)[1] for idea in given]
    assert len(drawn) == len(set(drawn)) == len(ids) - 4
    assert not {"cuda-graphs", "fixed-shape", "custom-trinv", "blocked-wy"} & set(drawn)


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("QRSUP_TEST_ADVISOR_KEY", "sk-advisor-0123456789abcdef")
    with FakeOpenAIServer() as fake:
        yield fake


def model_config(server: FakeOpenAIServer) -> ModelConfig:
    return ModelConfig(
        model="strong-advisor",
        base_url=server.base_url,
        api_key_env="QRSUP_TEST_ADVISOR_KEY",
        retry=RetryPolicy(attempts=2, base_delay_s=0.01),
    )


def test_with_a_model_ideas_are_its_idea_paragraphs(server, tmp_path):
    server.push(
        ScriptedReply(
            "IDEA: Split each 512-wide panel recursively into 48-column leaves.\n\n"
            "2. **IDEA:** Route rankdef matrices per matrix and skip zero columns.\n"
        )
    )
    advisor = Advisor("ada", patience=PATIENCE, model=model_config(server))
    advice = advisor.maybe_advise(run_of("P" + "f" * 8), context(tmp_path), beam="exploit: c0ffee")
    assert advice.source == "model:strong-advisor"
    assert advice.ideas == (
        "[advisor strong-advisor] Split each 512-wide panel recursively into 48-column leaves.",
        "[advisor strong-advisor] Route rankdef matrices per matrix and skip zero columns.",
    )
    assert advice.usage.prompt_tokens == 1000
    (prompt,) = (m["content"] for m in server.requests[0].body["messages"])
    assert "exploit: c0ffee" in prompt and "- multi-block-panel:" in prompt
    assert "beat 2.0 ms geomean" in prompt


def test_a_failing_advisor_model_falls_back_to_the_playbook_and_says_why(server, tmp_path):
    server.push(*[ScriptedReply(status=503)] * 2)
    advice = Advisor("ada", model=model_config(server)).advise(run_of("P"), context(tmp_path))
    assert advice.source == "playbook" and advice.ideas
    assert "advisor model failed (endpoint" in advice.note and "HTTP 503" in advice.note
