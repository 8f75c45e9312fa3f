"""Side questions: answered on their own thread while the agent's work goes on untouched."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time

import pytest
from qrsup.agents.heartbeat import Beat, write_beat
from qrsup.agents.proposal import Usage
from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.retry import RetryPolicy
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec
from qrsup.agents.side_questions import AgentRecords, SideAnswer, SideQuestions
from qrsup.agents.store import Store
from qrsup.supervisor import actions
from qrsup.supervisor.fleet import Fleet

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.loop_helpers import make_session
from tests.proposal_contexts import PARENT_SOURCE, history, parent
from tests.tui_sessions import frozen_session

QUESTION = "what does your current candidate change?"


def records() -> AgentRecords:
    candidate = dataclasses.replace(
        parent(PARENT_SOURCE.replace("PANEL_WIDTH = 32", "PANEL_WIDTH = 64")),
        candidate_id="c64",
        hypothesis="64-column panels halve the panel count",
    )
    return AgentRecords(
        agent="ada",
        role="exploit",
        goal="beat 2.0 ms",
        state="judging c64 (iteration 7)",
        candidate=candidate,
        parent_source=PARENT_SOURCE,
        recent=history(6),
        spec_labels=("20x32 dense c1", "40x176 dense c1", "640x512 dense c2", "2x4096 dense c1"),
    )


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("QRSUP_TEST_SIDE_KEY", "sk-side-0123456789abcdef")
    with FakeOpenAIServer() as fake:
        yield fake


def with_model(server: FakeOpenAIServer, timeout_s: float = 10.0) -> SideQuestions:
    config = ModelConfig(
        model="side-model",
        base_url=server.base_url,
        api_key_env="QRSUP_TEST_SIDE_KEY",
        timeout_s=timeout_s,
        retry=RetryPolicy(attempts=2, base_delay_s=0.01),
    )
    return SideQuestions(config)


def test_question_is_answered_while_a_long_evaluation_keeps_running(server):
    server.push(ScriptedReply("It widens the panels from 32 to 64 columns."))
    evaluating, finish = threading.Event(), threading.Event()

    def long_evaluation() -> None:
        evaluating.set()
        finish.wait(timeout=60)

    evaluation = threading.Thread(target=long_evaluation)
    evaluation.start()
    assert evaluating.wait(timeout=5)
    try:
        answer = with_model(server).ask(QUESTION, records()).result(timeout=10)
        assert evaluation.is_alive() and not finish.is_set()
    finally:
        finish.set()
        evaluation.join(timeout=5)
    assert answer.answer == "It widens the panels from 32 to 64 columns."
    assert answer.source == "model:side-model" and answer.usage.prompt_tokens == 1000
    (prompt,) = (m["content"] for m in server.requests[0].body["messages"])
    assert QUESTION in prompt and "+PANEL_WIDTH = 64" in prompt and "judging c64" in prompt


def test_ask_returns_at_once_while_the_model_takes_its_time(server):
    server.push(ScriptedReply("slow but sure", delay_s=1.0))
    started = time.monotonic()
    future = with_model(server).ask(QUESTION, records())
    assert time.monotonic() - started < 0.2 and not future.done()
    assert future.result(timeout=10).answer == "slow but sure"


def test_without_a_model_the_answer_is_the_agents_records_labelled_as_such():
    answer = SideQuestions().ask(QUESTION, records()).result(timeout=10)
    assert answer.source == "records" and answer.note == "no model configured"
    text = answer.answer
    assert text.startswith(
        "No model answered this question: no model endpoint is configured for side questions "
        "(an openai agent's own model, else `model` and `base_url` in the [model] table of the "
        "workspace's qrsup.toml). This is what the agent's records say."
    )
    assert "Now: judging c64 (iteration 7)" in text
    assert "64-column panels halve the panel count" in text
    assert "-PANEL_WIDTH = 32" in text and "+PANEL_WIDTH = 64" in text
    assert "- #6 " in text and "- #1 " not in text


def test_a_failing_model_falls_back_to_the_records_and_says_why(server):
    server.push(*[ScriptedReply(status=502)] * 2)
    answer = with_model(server).ask(QUESTION, records()).result(timeout=10)
    assert answer.source == "records" and "model failed (endpoint" in answer.note
    assert answer.answer.startswith(f"No model answered this question: {answer.note}.")
    assert "HTTP 502" in answer.note and "no model endpoint is configured" not in answer.answer


def test_answer_record_is_plain_json():
    answer = SideQuestions().ask(QUESTION, records()).result(timeout=10)
    record = json.loads(json.dumps(answer.to_record()))
    assert record["question"] == QUESTION and record["source"] == "records"


def test_a_recorded_answer_keeps_its_cost_in_the_store_and_the_agents_events(tmp_path):
    paths = make_session(tmp_path, (AgentSpec("a1"),))
    answer = SideAnswer(
        "a1", "why 48?", "the panel chain is shorter", "model:m", 1.0, 0.2,
        usage=Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.004),
    )  # fmt: skip
    actions.record_answer(Fleet(paths), "a1", answer)
    with Store.reader(paths.store) as store:
        (row,) = store.side_questions("a1")
    assert row.answer == "the panel chain is shorter" and row.usage["cost_usd"] == 0.004
    (event,) = [e for e in read_events(paths.events("a1")) if e["event"] == "side_question"]
    assert event["question"] == "why 48?" and event["cost_usd"] == 0.004


def _judging(tmp_path, monkeypatch) -> Fleet:
    """The frozen session's a1 alive and judging a candidate it has not recorded yet."""
    paths = frozen_session(tmp_path)
    with Store(paths.store) as store:
        row = store.candidate("c-1a2b3c4d5e")
        in_flight = dataclasses.replace(
            row, id="c-inflight", hash="h-inflight", parent_id=row.id, hypothesis="T by recurrence"
        )
        store.add_candidate(dataclasses.replace(in_flight, source=row.source + "# recurrence\n"))
    monkeypatch.setattr(Fleet, "pid", lambda self, name: os.getpid() if name == "a1" else None)
    beat = Beat(os.getpid(), "evaluating", 4, time.time(), "c-inflight", detail="quick 1/2")
    write_beat(paths.heartbeat("a1"), beat)
    return Fleet(paths)


def test_a_side_question_is_about_the_candidate_in_flight_not_the_last_recorded(
    tmp_path, monkeypatch
):
    fleet = _judging(tmp_path, monkeypatch)
    answer = actions.ask(fleet, "a1", QUESTION).result(timeout=10)
    text = answer.answer
    assert "Now: evaluating (iteration 4, judging c-inflight): quick 1/2" in text
    current = text.split("Current candidate:", 1)[1].split("Its change against its parent:")[0]
    assert "c-inflight" in current and "T by recurrence" in current
    assert "c-3c4d5e6f7a" not in current  # a1's last recorded iteration, judged before
    assert "+# recurrence" in text  # its change against its parent, c-1a2b3c4d5e


def test_an_agent_without_a_model_is_answered_by_the_workspaces_model_table(
    server, tmp_path, monkeypatch
):
    fleet = _judging(tmp_path, monkeypatch)
    (fleet.session.workspace / "qrsup.toml").write_text(
        f'[model]\nmodel = "side-model"\nbase_url = "{server.base_url}"\n'
        'api_key_env = "QRSUP_TEST_SIDE_KEY"\n'
    )
    server.push(ScriptedReply("It builds T by the recurrence."))
    answer = actions.ask(fleet, "a1", QUESTION).result(timeout=10)  # a1 is a tuner agent
    assert (answer.source, answer.answer) == ("model:side-model", "It builds T by the recurrence.")
    assert "c-inflight" in server.requests[-1].body["messages"][0]["content"]
