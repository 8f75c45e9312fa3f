"""Agent processes against a real loopback OpenAI-compatible server: a cost budget pauses the agent
and asks (a raised budget resumes it), a 429 storm is waited out and the agent resumes by itself,
a fallback model proposes meanwhile, and each status change runs the hook once. The model's
answers propose nothing judgeable and the incumbent is seeded, so nothing is judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.agents.heartbeat import read_beat
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.supervisor import actions
from qrsup.supervisor.fleet import Fleet

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.loop_helpers import make_session, wait_for

pytestmark = pytest.mark.timeout(300)

KEY_ENV = "QRSUP_TEST_BUDGET_KEY"
NO_EDIT = ScriptedReply("I would widen the panels.", prompt_tokens=1000, completion_tokens=0)


def openai_agent(server: FakeOpenAIServer, **settings: object) -> dict[str, object]:
    """A model table whose prices make 1000 prompt tokens cost one dollar."""
    return {
        "model": "primary",
        "base_url": server.base_url,
        "api_key_env": KEY_ENV,
        "usd_per_million_prompt_tokens": 1000.0,
        "retry": {"attempts": 1},
        **settings,
    }


def with_hook(paths: RunPaths, tmp_path: Path) -> Path:
    """A qrsup.toml whose hook appends one line per status change to a file."""
    out = tmp_path / "hook.txt"
    (paths.root.parents[1] / "qrsup.toml").write_text(
        f"[hooks]\ncommand = \"sh -c 'echo {{status}} {{agent}} >> {out}'\"\n"
    )
    return out


def events(paths: RunPaths, name: str, kind: str) -> list[dict]:
    return [e for e in read_events(paths.events(name)) if e.get("event") == kind]


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_the_cost_budget_pauses_the_agent_and_a_raised_budget_resumes_it(
    tmp_path, monkeypatch, seed_incumbent
):
    monkeypatch.setenv(KEY_ENV, "sk-budget-test-0123456789")
    with FakeOpenAIServer(default=NO_EDIT) as server:
        spec = AgentSpec("m1", proposer="openai", model=openai_agent(server), max_usd=2.5)
        paths = make_session(tmp_path, (spec,))
        seed_incumbent(paths)
        hook_file = with_hook(paths, tmp_path)
        fleet = Fleet(paths)
        fleet.start("m1")
        try:
            paused = wait_for(lambda: fleet.status("m1").budget_paused, 200, "the budget pause")
            status = fleet.status("m1")
            assert status.state == "paused" and "$3.00 of its $2.50 budget" in status.detail
            asked = len(server.requests)
            assert asked == 3 and paused
            wait_for(lambda: hook_file.exists(), 30, "the hook's line")
            assert hook_file.read_text() == "budget m1\n"
            refused = actions.resume(fleet, "m1")
            assert not refused.ok and "paused at its cost budget" in refused.message
            assert actions.set_budget(fleet, "m1", "$5").ok
            wait_for(lambda: len(server.requests) >= 5, 60, "proposals under the new budget")
            wait_for(lambda: hook_file.read_text().count("\n") == 2, 60, "the second pause's hook")
        finally:
            fleet.kill("m1")
    (first, second) = events(paths, "m1", "budget_paused")
    assert "$3.00 of its $2.50" in first["detail"] and "$5.00 of its $5.00" in second["detail"]
    assert len(server.requests) == 5
    assert fleet.status("m1").spend.usd == pytest.approx(5.0)
    assert hook_file.read_text() == "budget m1\nbudget m1\n"


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_a_429_storm_is_waited_out_and_the_agent_resumes_by_itself(
    tmp_path, monkeypatch, seed_incumbent
):
    monkeypatch.setenv(KEY_ENV, "sk-quota-test-0123456789")
    storm = [ScriptedReply(status=429, headers=(("retry-after", "1"),))] * 3
    with FakeOpenAIServer(storm, default=NO_EDIT) as server:
        spec = AgentSpec(
            "m1", role="structural", proposer="openai", model=openai_agent(server),
            max_iterations=1,
        )  # fmt: skip
        paths = make_session(tmp_path, (spec,))
        seed_incumbent(paths)
        hook_file = with_hook(paths, tmp_path)
        fleet = Fleet(paths)
        fleet.start("m1")
        seen: set[str] = set()

        def waiting_shown() -> bool:
            beat = read_beat(paths.heartbeat("m1"))
            if beat is not None and beat.state == "waiting":
                seen.add(f"{beat.state} {beat.detail}")
            return bool(seen)

        wait_for(waiting_shown, 200, "the quota wait in the heartbeat")
        assert fleet.wait_stopped(["m1"], 200) == []
    (shown,) = {text[: len("waiting for quota until")] for text in seen}
    assert shown == "waiting for quota until"
    waits = events(paths, "m1", "quota_wait")
    assert len(waits) == 3 and [w.get("again", False) for w in waits] == [False, True, True]
    assert len(events(paths, "m1", "quota_resumed")) == 1
    (only,) = events(paths, "m1", "iteration")  # the waits were no iterations
    assert only["iteration"] == 1 and only["usage"]["prompt_tokens"] == 1000
    assert len(server.requests) == 4
    assert hook_file.read_text() == "quota m1\n"  # once for the wait, however long it lasted


def test_a_fallback_model_proposes_while_the_model_waits_for_quota(
    tmp_path, monkeypatch, seed_incumbent
):
    monkeypatch.setenv(KEY_ENV, "sk-fallback-test-0123456789")
    exhausted = b'{"error": {"message": "quota", "code": "insufficient_quota"}}'
    script = [ScriptedReply(status=429, body=exhausted)]
    with FakeOpenAIServer(script, default=NO_EDIT) as server:
        model = openai_agent(server, fallback_model="spare")
        spec = AgentSpec("m1", role="structural", proposer="openai", model=model, max_iterations=1)
        paths = make_session(tmp_path, (spec,))
        seed_incumbent(paths)
        fleet = Fleet(paths)
        fleet.start("m1")
        assert fleet.wait_stopped(["m1"], 200) == []
    assert [r.body["model"] for r in server.requests] == ["primary", "spare"]
    (only,) = events(paths, "m1", "iteration")
    assert only["iteration"] == 1 and only["usage"]["prompt_tokens"] == 1000
    log = paths.agent_log("m1").read_text()
    assert "primary waits for quota until" in log and "(fallback spare while waiting" in log
