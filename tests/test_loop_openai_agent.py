"""An agent process driven by the openai proposer against a real loopback server: its edit is
judged and recorded, and the API key appears in none of the records."""

from __future__ import annotations

import pytest
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec
from qrsup.supervisor.fleet import Fleet

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.loop_helpers import PANEL_EDIT, make_session

KEY_ENV = "QRSUP_TEST_AGENT_KEY"
KEY = "sk-agent-test-3c9e1a7b5d"


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_openai_agent_edit_is_judged_and_the_key_is_in_no_record(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    with FakeOpenAIServer(default=ScriptedReply(PANEL_EDIT)) as server:
        model = {"model": "test-model", "base_url": server.base_url, "api_key_env": KEY_ENV}
        # A structural agent of the incumbent's family always proposes from the incumbent (its
        # slot only holds other families), so the second, identical edit is a duplicate.
        spec = AgentSpec(
            "m1",
            role="structural",
            proposer="openai",
            model=model,
            max_iterations=2,
            goal="geomean < 1ns",
        )
        paths = make_session(tmp_path, (spec,))
        fleet = Fleet(paths)
        fleet.start("m1")
        assert fleet.wait_stopped(["m1"], 360) == []
        assert server.requests, "the agent never called the model"
        headers = {k.lower(): v for k, v in server.requests[0].headers.items()}
        assert headers["authorization"] == f"Bearer {KEY}"  # the key did reach the model
    events = [e for e in read_events(paths.events("m1")) if e.get("event") == "iteration"]
    first, second = sorted(events, key=lambda e: e["iteration"])
    assert first["hypothesis"] == "16-column panels shorten the sequential panel chain"
    assert first["evaluated"] and first["verdict"] == "pass"
    assert first["usage"]["prompt_tokens"] == 1000
    assert second["verdict"] == "duplicate"  # the same edit again is never re-evaluated
    workspace = paths.root.parent.parent
    for path in [workspace / "log.md", *paths.root.rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the key leaked into {path}"
