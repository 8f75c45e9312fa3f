"""`qrsup run --headless` end to end with model and coding-agent fleets: a real loopback
OpenAI-compatible server, a fake coding-agent CLI on PATH, and the exit status of a run whose
agents all crashed."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.supervisor.cli import main
from qrsup.supervisor.headless import event_line

from tests.fake_openai_server import FakeOpenAIServer, ScriptedReply
from tests.loop_helpers import PANEL_EDIT, TINY_SUITE, make_session

KEY = "sk-headless-test-7f3a9c1e5b"
FAKE_AGENT = """#!/bin/sh
# A coding-agent CLI as qrsup runs one: it reads the prompt file, edits the candidate in its
# work dir, writes a hypothesis, and prints its usage the way Claude Code's JSON output does.
prompt="$1"
grep -q "custom_kernel" "$prompt" || exit 3
sed -i 's/panel_width=32/panel_width=8/' candidate.py
echo "8-column panels: a shorter panel chain" > hypothesis.txt
echo '{"type": "result", "total_cost_usd": 0.0125,' \
  '"usage": {"input_tokens": 1500, "output_tokens": 300}}'
"""


def workspace_with_suite(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    suite = tmp_path / "tiny.toml"
    suite.write_text(TINY_SUITE)
    return workspace, suite


def iterations(paths: RunPaths, agent: str) -> list[dict]:
    return [e for e in read_events(paths.events(agent)) if e.get("event") == "iteration"]


def agent_story(workspace: Path, agent: str) -> str:
    """The agent's log, for a failure message: what it did instead of what the test expected."""
    log = RunPaths.of(workspace.resolve(), "default").agent_log(agent)
    return log.read_text()[-4000:] if log.exists() else f"(no log at {log.name})"


def files_under(*roots: Path) -> list[Path]:
    found = []
    for root in roots:
        found += [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]
    return found


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_headless_openai_agent_records_its_proposals_and_the_key_is_nowhere_on_disk(
    tmp_path, monkeypatch, capsys
):
    workspace, suite = workspace_with_suite(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with FakeOpenAIServer(default=ScriptedReply(PANEL_EDIT), models=["test-model"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        argv = ["--workspace", str(workspace), "run", "--headless", "--init", "--agents", "1"]
        argv += ["--suite", str(suite), "--budget", "1"]
        code = main([*argv, "--proposer", "openai", "--model", "test-model"])
        assert server.requests, f"the agent never asked the model:\n{agent_story(workspace, 'a1')}"
        auth = {k.lower(): v for k, v in server.requests[0].headers.items()}["authorization"]
    assert code == 0, capsys.readouterr()
    assert auth == f"Bearer {KEY}"
    (first,) = iterations(RunPaths.of(workspace.resolve(), "default"), "a1")
    assert first["hypothesis"] == "16-column panels shorten the sequential panel chain"
    assert first["evaluated"] and first["usage"]["prompt_tokens"] == 1000
    assert "a1 it 1" in capsys.readouterr().out
    for path in files_under(workspace):
        assert KEY.encode() not in path.read_bytes(), f"the key leaked into {path}"


@pytest.mark.e2e
@pytest.mark.timeout(300)
def test_a_fake_coding_agent_cli_on_path_works_end_to_end(tmp_path, monkeypatch, capsys):
    workspace, suite = workspace_with_suite(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fakeagent").write_text(FAKE_AGENT)
    (bin_dir / "fakeagent").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    argv = ["--workspace", str(workspace), "run", "--headless", "--init", "--suite", str(suite)]
    code = main([*argv, "--budget", "1", "--agent", "a3=command:fakeagent {prompt_file}"])
    assert code == 0, capsys.readouterr()
    paths = RunPaths.of(workspace.resolve(), "default")
    (first,) = iterations(paths, "a3")
    assert first["hypothesis"] == "8-column panels: a shorter panel chain"
    assert first["evaluated"] and first["verdict"] in ("pass", "fail")
    assert first["usage"] == {"prompt_tokens": 1500, "completion_tokens": 300, "cost_usd": 0.0125}
    source = (paths.work("a3") / f"{first['candidate_id']}.py").read_text()
    assert "panel_width=8" in source


@pytest.mark.timeout(120)
def test_headless_exits_1_when_every_agent_crashed(tmp_path, capsys):
    # A hand-edited session.toml slips past the launch's checks: the agent crashes at once.
    spec = AgentSpec("m1", proposer="openai", model={"base_url": "http://127.0.0.1:9/v1"})
    paths = make_session(tmp_path, (spec,))
    argv = ["--workspace", str(paths.root.parents[1]), "--session", "t", "run", "--headless"]
    assert main(argv) == 1
    assert "crashed: every agent" in capsys.readouterr().out


def test_status_changes_get_one_line_each_and_repeated_waits_none():
    wait = {"event": "quota_wait", "agent": "m1", "time": "2026-01-02 14:00:00",
            "detail": "gpt-5 waiting for quota until 14:05: HTTP 429"}  # fmt: skip
    assert (
        event_line(wait)
        == "14:00:00 m1 waiting for quota: gpt-5 waiting for quota until 14:05: HTTP 429"
    )
    assert event_line({**wait, "again": True}) is None
    paused = {"event": "budget_paused", "agent": "m1", "detail": "$5.00 of its $5.00 budget spent"}
    assert "paused at its cost budget (qrsup budget to go on): $5.00 of" in event_line(paused)


def test_a_passing_candidates_line_says_what_it_was_weighed_against():
    iteration = {"event": "iteration", "agent": "a1", "time": "2026-12-05 00:43:14",
                 "iteration": 5, "candidate_id": "c-df0513fa1c", "verdict": "pass",
                 "decision": "not promising", "geomean_ns": 20.09e6,
                 "hypothesis": "all.update_chunk: 0 → 32",
                 "reason": "quick stage more than 2% slower: 20.09 ms against the incumbent's "
                           "19.38 ms (quick rule, 4 evaluations old)"}  # fmt: skip
    line = event_line(iteration)
    assert line.startswith("00:43:14 a1 it 5 c-df0513fa1c pass 20.09 ms → not promising")
    assert line.endswith("against the incumbent's 19.38 ms (quick rule, 4 evaluations old))")


def test_a_long_reason_and_hypothesis_are_cut_between_words():
    reason = "the quick stage failed its re-check on spec 3: " + "output column mismatch " * 12
    hypothesis = "widen the panels and split the trailing update " * 4
    iteration = {"event": "iteration", "agent": "a1", "time": "2026-12-05 00:43:14",
                 "iteration": 6, "candidate_id": "c-1", "verdict": "fail",
                 "decision": "rejected", "hypothesis": hypothesis, "reason": reason}  # fmt: skip
    line = event_line(iteration)
    shown_hypothesis = line.split(" · ", 1)[1].split(" (", 1)[0]
    shown_reason = line.rsplit(" (", 1)[1].removesuffix(")")
    for shown, whole in ((shown_hypothesis, hypothesis), (shown_reason, reason)):
        assert shown.endswith("…") and whole.startswith(shown.removesuffix("…"))
        assert whole[len(shown) - 1] == " "  # cut before a word, never inside one
