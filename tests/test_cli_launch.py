"""Launching from the command line: every mistake is one line and exit 2 before anything starts;
mixed fleets and qrsup.toml defaults become the session's agents, flags over environment over file.
"""

from __future__ import annotations

import io
import os
import socket
import sys
from pathlib import Path

import pytest
from qrsup.agents.session import RunPaths, load_session
from qrsup.supervisor.cli import main
from qrsup.supervisor.launch import LaunchChoices, prepare_session

from tests.fake_openai_server import FakeOpenAIServer
from tests.tui_sessions import frozen_session

KEY_ENV = "QRSUP_TEST_LAUNCH_KEY"


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-launch-test-0123456789")
    return monkeypatch


def launch(workspace: Path, *options: str) -> list[str]:
    return ["--workspace", str(workspace), "run", "--headless", "--init", *options]


def refused(capsys, argv: list[str], workspace: Path, message: str) -> None:
    """Exit 2, one line naming the mistake, and no repository, session or agent made."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("qrsup: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert not (workspace / ".git").exists() and not (workspace / "runs").exists()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--agents", "1", "--proposer", "openai"], "an openai agent needs a model"),
        (["--proposer", "command"], "a command agent needs a command template"),
        (["--command", "fakeagent {prompt_file}"], "no program 'fakeagent' on PATH"),
        (["--command", "true {prompt_fil}"], "unknown placeholder(s) prompt_fil"),
        (["--command", "true 'unclosed"], "No closing quotation"),
        (["--proposer", "tuner", "--model", "m"], "--model applies to openai agents"),
        (["--agent", "a1=tuner", "--agent", "a2=gemini:pro"], "unknown proposer 'gemini'"),
        (["--agent", "a1"], "--agent takes NAME=PROPOSER"),
        (["--agent", "a1=tuner", "--agent", "a1=tuner"], "a1 given twice"),
        (["--agent", "a 1=tuner"], "agent name 'a 1' must be"),
        (["--agent", "a1=tuner", "--agents", "3"], "--agents 3 disagrees"),
        (["--agent", "a1=tuner:gpt-5"], "the tuner takes no model"),
        (["--goal", "nonsense"], "goal"),
        (["--budget", "xyz"], "budget must be"),
        (["--cost-budget", "5"], "cost budget must be dollars"),
        (["--gpus", "zero"], "--gpus must be"),
        (["--suite", "nosuch"], "nosuch"),
    ],
)
def test_a_bad_launch_choice_exits_2_and_starts_nothing(
    tmp_path, capsys, clean_env, options, message
):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    refused(capsys, launch(workspace, *options), workspace, message)


@pytest.mark.parametrize("stream", ["__stdin__", "__stderr__"])
def test_the_app_without_a_terminal_exits_2_and_starts_nothing(
    tmp_path, capsys, monkeypatch, stream
):
    """`qrsup 2>&1 | tee log` drew the app into the pipe; now it names the way out."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    leader, follower = os.openpty()
    with os.fdopen(leader, "rb"), os.fdopen(follower, "w") as terminal:
        for name in ("__stdin__", "__stderr__"):
            monkeypatch.setattr(sys, name, io.StringIO() if name == stream else terminal)
        name = "standard input" if stream == "__stdin__" else "standard error"
        argv = ["--workspace", str(workspace), "--init"]
        refused(capsys, argv, workspace, f"{name} is not one here")


def test_a_workspace_that_is_not_a_repository_names_both_ways_out_once(tmp_path, capsys):
    assert main(["--workspace", str(tmp_path), "run", "--headless"]) == 2
    err = capsys.readouterr().err
    assert "not a git repository; run `git init` there" in err and err.count("--init") == 1
    assert err.count("\n") == 1 and not (tmp_path / "runs").exists()


def test_an_unreachable_endpoint_exits_2(tmp_path, capsys, clean_env):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    options = ["--model", "m", "--base-url", url, "--api-key-env", KEY_ENV]
    refused(capsys, launch(tmp_path, *options), tmp_path, "does not answer")


def test_an_endpoint_that_refuses_the_key_exits_2_without_showing_it(tmp_path, capsys, clean_env):
    with FakeOpenAIServer(models_status=401) as server:
        argv = launch(tmp_path, "--model", "m", "--base-url", server.base_url)
        assert main([*argv, "--api-key-env", KEY_ENV]) == 2
    err = capsys.readouterr().err
    assert "HTTP 401" in err and "sk-launch-test" not in err


def test_an_endpoint_that_does_not_serve_the_model_names_what_it_serves(
    tmp_path, capsys, clean_env
):
    with FakeOpenAIServer(models=["qwen-coder", "llama"]) as server:
        argv = launch(tmp_path, "--model", "gpt-5", "--base-url", server.base_url)
        refused(capsys, argv, tmp_path, "serves no model 'gpt-5' (it serves: qwen-coder, llama)")
        assert server.model_listings == 1


def test_openai_at_openais_own_endpoint_needs_a_key(tmp_path, capsys, clean_env):
    refused(capsys, launch(tmp_path, "--model", "gpt-5"), tmp_path, "set OPENAI_API_KEY")


@pytest.mark.parametrize(
    "options",
    [["--goal", "nonsense"], ["--budget", "xyz"], ["--agents", "2"], ["--model", "m"]],
)
def test_new_session_options_for_an_existing_session_are_refused_not_ignored(
    tmp_path, capsys, options
):
    paths = frozen_session(tmp_path)
    where = ["--workspace", str(paths.root.parents[1]), "--session", "frozen"]
    assert main([*where, "run", "--headless", *options]) == 2
    err = capsys.readouterr().err
    assert f"{options[0]} only shapes a new session" in err and err.count("\n") == 1
    assert not any(paths.pid_file(a).exists() for a in ("a1", "a2", "a3"))


def test_a_session_verb_refuses_launch_options(tmp_path, capsys):
    paths = frozen_session(tmp_path)
    where = ["--workspace", str(paths.root.parents[1]), "--session", "frozen"]
    assert main([*where, "--goal", "geomean < 1ms", "status"]) == 2
    assert "--goal shape a new session; qrsup status ignores them" in capsys.readouterr().err


def test_a_mixed_fleet_from_agent_options(tmp_path, clean_env):
    fake = tmp_path / "bin" / "fakeagent"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    clean_env.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    with FakeOpenAIServer(models=["gpt-5"]) as server:
        choices = LaunchChoices(
            tmp_path / "ws",
            agent_options=("a1=tuner", "a2=openai:gpt-5", f"a3=command:{fake} {{prompt_file}}"),
            base_url=server.base_url,
            api_key_env=KEY_ENV,
            cost_budget="$2,100k tokens",
            init=True,
        )
        paths, _, created = prepare_session(choices)
    assert created
    a1, a2, a3 = load_session(paths).agents
    assert (a1.proposer, a2.proposer, a3.proposer) == ("tuner", "openai", "command")
    assert (a1.role, a2.role, a3.role) == ("exploit", "near-miss", "structural")
    assert a2.model == {"model": "gpt-5", "base_url": server.base_url, "api_key_env": KEY_ENV}
    assert a3.command == f"{fake} {{prompt_file}}"
    assert (a3.max_usd, a3.max_tokens) == (2.0, 100_000)


def test_qrsup_toml_gives_defaults_and_named_command_templates(tmp_path, clean_env):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "qrsup.toml").write_text(
        '[launch]\nagents = 2\nproposer = "command"\ncost_budget = "$3"\nsuite = "smoke"\n\n'
        '[commands]\ndefault = "cat {prompt_file}"\nechoer = "echo {prompt}"\n'
    )
    _, config, _ = prepare_session(LaunchChoices(workspace, init=True))
    assert [(a.proposer, a.command, a.max_usd) for a in config.agents] == [
        ("command", "cat {prompt_file}", 3.0)
    ] * 2
    choices = LaunchChoices(workspace, session="s2", command="echoer", agents=1)
    _, config, _ = prepare_session(choices)
    assert config.agents[0].command == "echo {prompt}"


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [(True, True, "flag"), (False, True, "env"), (False, False, "file")],
)
def test_the_endpoint_comes_from_the_flag_then_the_environment_then_the_file(
    tmp_path, clean_env, flag, env, expected
):
    servers = {name: FakeOpenAIServer(models=["m"]) for name in ("flag", "env", "file")}
    with servers["flag"], servers["env"], servers["file"]:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "qrsup.toml").write_text(
            f'[model]\nmodel = "m"\nbase_url = "{servers["file"].base_url}"\n'
            f'api_key_env = "{KEY_ENV}"\n'
        )
        if env:
            clean_env.setenv("OPENAI_BASE_URL", servers["env"].base_url)
        choices = LaunchChoices(
            workspace,
            proposer="openai",
            agents=2,
            base_url=servers["flag"].base_url if flag else None,
            init=True,
        )
        paths, config, _ = prepare_session(choices)
        listings = {name: server.model_listings for name, server in servers.items()}
    assert listings == {name: int(name == expected) for name in servers}  # one probe, shared
    assert {a.model["base_url"] for a in config.agents} == {servers[expected].base_url}
    assert RunPaths.of(workspace.resolve(), "default") == paths
