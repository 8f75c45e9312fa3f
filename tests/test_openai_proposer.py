"""The openai proposer against a real OpenAI-compatible server on loopback, via the real client."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from qrsup.agents.proposal import Proposal, ProposalFailure
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.openai_proposer import OpenAIProposer
from qrsup.agents.proposers.prompt_builder import PromptSources
from qrsup.agents.proposers.retry import RetryPolicy
from qrsup.prompts.loader import PROMPTS_DIR

from tests.conftest import judge
from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.proposal_contexts import PARENT_SOURCE, context

KEY_ENV = "QRSUP_TEST_OPENAI_KEY"
KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"

GOOD_EDIT = """HYPOTHESIS: 16-column panels shorten the sequential panel chain
FAMILY: blocked-wy

<<<<<<< SEARCH
PANEL_WIDTH = 32
=======
PANEL_WIDTH = 16
>>>>>>> REPLACE
"""

FAST_RETRY = RetryPolicy(attempts=3, base_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAIServer() as fake:
        yield fake


def make_proposer(server: FakeOpenAIServer, **changes: object) -> OpenAIProposer:
    config = ModelConfig(
        model="test-model",
        base_url=server.base_url,
        api_key_env=KEY_ENV,
        max_tokens=2048,
        timeout_s=5.0,
        retry=FAST_RETRY,
        usd_per_million_prompt_tokens=2.0,
        usd_per_million_completion_tokens=8.0,
    )
    return OpenAIProposer(dataclasses.replace(config, **changes))  # type: ignore[arg-type]


def propose(server: FakeOpenAIServer, tmp_path: Path, *replies: ScriptedReply, **changes: object):
    server.push(*replies)
    return make_proposer(server, **changes).propose(context(tmp_path))


def test_good_edit_gives_the_parent_with_the_change_asked(server, tmp_path):
    result = propose(server, tmp_path, ScriptedReply(GOOD_EDIT))
    assert isinstance(result, Proposal), result
    assert result.source == PARENT_SOURCE.replace("PANEL_WIDTH = 32", "PANEL_WIDTH = 16")
    assert result.hypothesis == "16-column panels shorten the sequential panel chain"
    assert result.family == "blocked-wy"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (1000, 200)
    assert result.usage.cost_usd == pytest.approx((1000 * 2.0 + 200 * 8.0) / 1e6)
    assert "PANEL_WIDTH = 16" in result.transcript


def test_request_carries_problem_rules_role_goal_parent_memory_steering_and_profile(
    server, tmp_path
):
    propose(server, tmp_path, ScriptedReply(GOOD_EDIT))
    (request,) = server.requests
    system, user = (message["content"] for message in request.body["messages"])
    assert "compact-Householder QR" in system and "Beam discipline" in system
    assert "exploit slot" in user and "beat 2.0 ms geomean" in user
    assert PARENT_SOURCE.strip() in user
    assert "idea 6: widen the panel" in user and "try panel width 64" in user
    assert "[playbook:cuda-graphs]" in user and "panel kernel 57%" in user
    assert request.body["model"] == "test-model" and request.body["max_tokens"] == 2048


def test_proposed_candidate_passes_the_judge(server, tmp_path):
    result = propose(server, tmp_path, ScriptedReply(GOOD_EDIT))
    candidate = tmp_path / "candidate.py"
    candidate.write_text(result.source)
    report = judge(candidate)
    assert report.verdict == "pass", report.reason


def test_whole_file_answer_replaces_the_parent(server, tmp_path):
    answer = (
        "HYPOTHESIS: call geqrf directly\nFAMILY: library\n\n```python\nimport torch\n\n\n"
        "def custom_kernel(a):\n    return torch.geqrf(a)\n```\n"
    )
    result = propose(server, tmp_path, ScriptedReply(answer))
    assert isinstance(result, Proposal)
    assert result.source.startswith("import torch") and result.family == "library"


def test_answer_without_hypothesis_is_a_malformed_proposal(server, tmp_path):
    result = propose(server, tmp_path, ScriptedReply("Sure! Here is my idea: go faster."))
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("malformed", False)
    assert "HYPOTHESIS" in result.reason and result.usage.completion_tokens == 200


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"choices": [ {"mess', "JSONDecodeError"),
        (b"[]", "not a JSON object"),
        (b'{"choices": []}', "no choices"),
        (b'{"choices": [{"message": null, "finish_reason": "stop"}]}', "no message"),
        (b'{"choices": [{"message": {"content": 5}}]}', "not text"),
    ],
)
def test_reply_that_is_not_a_chat_completion_is_malformed_and_not_retried(
    server, tmp_path, body, why
):
    result = propose(server, tmp_path, ScriptedReply(body=body))
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("malformed", False)
    assert why in result.reason and len(server.requests) == 1


def test_edit_that_does_not_apply_says_which_block(server, tmp_path):
    answer = GOOD_EDIT.replace("PANEL_WIDTH = 32\n===", "BLOCK_SIZE = 128\n===")
    result = propose(server, tmp_path, ScriptedReply(answer))
    assert isinstance(result, ProposalFailure) and result.kind == "no_apply"
    assert "block 1" in result.reason and "BLOCK_SIZE = 128" in result.reason


def test_reply_cut_at_the_token_limit_is_truncated(server, tmp_path):
    result = propose(
        server,
        tmp_path,
        ScriptedReply(GOOD_EDIT[:90], finish_reason="length", completion_tokens=2048),
    )
    assert isinstance(result, ProposalFailure) and result.kind == "truncated"
    assert "2048" in result.reason and result.usage.completion_tokens == 2048


def test_refusal_is_recorded_as_a_refusal(server, tmp_path):
    result = propose(server, tmp_path, ScriptedReply(refusal="I can't help with that."))
    assert isinstance(result, ProposalFailure) and result.kind == "refusal"
    assert "can't help" in result.reason


def test_rate_limit_then_success_retries_and_proposes(server, tmp_path):
    result = propose(
        server,
        tmp_path,
        ScriptedReply(status=429, headers=(("retry-after", "0.02"),)),
        ScriptedReply(GOOD_EDIT),
    )
    assert isinstance(result, Proposal), result
    assert len(server.requests) == 2
    assert "attempt 1 failed (HTTP 429" in result.transcript


def test_server_error_every_time_pauses_the_agent_after_the_retry_bound(server, tmp_path):
    result = propose(server, tmp_path, *[ScriptedReply(status=500)] * 5)
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("endpoint", True)
    assert "3 times" in result.reason and "HTTP 500" in result.reason
    assert len(server.requests) == FAST_RETRY.attempts


def test_slow_reply_past_the_timeout_is_a_timeout_without_retry(server, tmp_path):
    result = propose(server, tmp_path, ScriptedReply(GOOD_EDIT, delay_s=30.0), timeout_s=0.3)
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("timeout", False)
    assert "0.3 s" in result.reason and len(server.requests) == 1


def test_missing_key_for_openai_itself_pauses_with_the_variable_named(monkeypatch, tmp_path):
    monkeypatch.delenv(KEY_ENV, raising=False)
    config = ModelConfig(model="gpt-test", api_key_env=KEY_ENV)
    result = OpenAIProposer(config).propose(context(tmp_path))
    assert isinstance(result, ProposalFailure) and result.pause
    assert KEY_ENV in result.reason


def test_broken_prompt_template_pauses_with_the_file_named(server, tmp_path):
    prompts = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, prompts)
    (prompts / "iteration.md").write_text("{goal} {no_such_value}")
    proposer = OpenAIProposer(
        ModelConfig(model="m", base_url=server.base_url, api_key_env=KEY_ENV),
        sources=PromptSources(prompts_dir=prompts),
    )
    result = proposer.propose(context(tmp_path))
    assert isinstance(result, ProposalFailure) and (result.kind, result.pause) == ("config", True)
    assert "iteration.md" in result.reason and "{no_such_value}" in result.reason
    assert server.requests == []


def test_api_key_never_appears_in_results_transcripts_or_logs(server, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    echo = f'{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}'.encode()
    replies = [
        ScriptedReply(GOOD_EDIT),
        ScriptedReply(f"HYPOTHESIS: leak\n{KEY}"),
        ScriptedReply(status=401, body=echo),
        ScriptedReply(status=429),
        ScriptedReply(status=500, body=echo),
        ScriptedReply(status=500, body=echo),
        ScriptedReply(GOOD_EDIT, finish_reason="length"),
        ScriptedReply(GOOD_EDIT, delay_s=30.0),
    ]
    proposer = make_proposer(server, timeout_s=0.5)
    server.push(*replies)
    results = [proposer.propose(context(tmp_path)) for _ in range(6)]
    assert {type(r).__name__ for r in results} == {"Proposal", "ProposalFailure"}
    assert any(
        r.kind == "endpoint" and "[redacted]" in r.reason for r in results if hasattr(r, "kind")
    )
    assert all(request.headers["authorization"] == f"Bearer {KEY}" for request in server.requests)
    for text in (repr(results), caplog.text, repr(proposer.config)):
        assert KEY not in text


def test_rate_limits_past_the_retry_bound_are_a_quota_wait_of_the_servers_reset(server, tmp_path):
    reset = (("x-ratelimit-reset-requests", "6m0s"), ("retry-after", "2"))
    result = propose(server, tmp_path, *[ScriptedReply(status=429, headers=reset)] * 3)
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause, result.wait_s) == ("quota", False, 360.0)
    assert len(server.requests) == FAST_RETRY.attempts


def test_an_exhausted_account_waits_at_once_for_the_policys_quota_wait(server, tmp_path):
    body = b'{"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}'
    retry = dataclasses.replace(FAST_RETRY, quota_wait_s=900.0)
    result = propose(server, tmp_path, ScriptedReply(status=429, body=body), retry=retry)
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.wait_s) == ("quota", 900.0)
    assert "exceeded your quota" in result.reason and len(server.requests) == 1
