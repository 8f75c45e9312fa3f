"""The add-agent dialog: the proposer's fields, filled from qrsup.toml, checked as the command line
checks them, and an openai agent's endpoint asked for its models before the agent is added."""

from __future__ import annotations

import pytest
from qrsup.agents.session import AgentSpec
from qrsup.supervisor import actions
from qrsup.supervisor.actions import ActionResult
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.widgets.add_agent_dialog import AddAgentDialog
from textual.widgets import Input, Select

from tests.fake_openai_server import FakeOpenAIServer
from tests.tui_pilot import until
from tests.tui_sessions import FrozenSampler, frozen_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def added(monkeypatch) -> list[AgentSpec]:
    """The specs the dialog hands to the fleet (no agent process is started)."""
    specs: list[AgentSpec] = []

    def add(fleet, spec: AgentSpec) -> ActionResult:
        specs.append(spec)
        return ActionResult(True, f"added {spec.name}")

    monkeypatch.setattr(actions, "add_agent", add)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return specs


def frozen_app(tmp_path, toml: str = "") -> SupervisorApp:
    paths = frozen_session(tmp_path)
    if toml:
        (paths.root.parents[1] / "qrsup.toml").write_text(toml)
    app = SupervisorApp(Fleet(paths))
    app.main.sampler = FrozenSampler(app.main.post_fact)
    return app


async def open_dialog(pilot, proposer: str) -> AddAgentDialog:
    await pilot.press("n")
    dialog = await until(
        pilot, lambda: isinstance(pilot.app.screen, AddAgentDialog) and pilot.app.screen, 5,
        "the dialog",
    )  # fmt: skip
    dialog.query_one("#proposer", Select).value = proposer
    await pilot.pause()
    return dialog


def error_text(dialog: AddAgentDialog) -> str:
    return str(dialog.query_one(".dialog-error").render())


async def test_the_proposer_shows_its_own_fields(tmp_path, added):
    app = frozen_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        dialog = await open_dialog(pilot, "tuner")
        shown = lambda: {i.id for i in dialog.query(Input) if i.display}  # noqa: E731
        assert {"model", "base-url", "command"}.isdisjoint(shown())
        dialog.query_one("#proposer", Select).value = "openai"
        await until(pilot, lambda: {"model", "base-url", "api-key-env"} <= shown(), 5, "fields")
        assert "command" not in shown()
        dialog.query_one("#proposer", Select).value = "command"
        await until(pilot, lambda: "command" in shown() and "model" not in shown(), 5, "command")


async def test_an_openai_agent_whose_endpoint_serves_its_model_is_added(tmp_path, added):
    with FakeOpenAIServer(models=["coder"]) as server:
        app = frozen_app(tmp_path, f'[model]\nmodel = "coder"\nbase_url = "{server.base_url}"\n')
        async with app.run_test(size=(100, 30)) as pilot:
            dialog = await open_dialog(pilot, "openai")
            assert dialog.query_one("#model", Input).value == "coder"  # from qrsup.toml
            dialog.query_one("#model", Input).focus()
            await pilot.press("enter")
            await until(pilot, lambda: added, 10, "the agent added")
        assert server.model_listings == 1
    (spec,) = added
    assert (spec.name, spec.proposer) == ("a4", "openai")
    assert spec.model == {"model": "coder", "base_url": server.base_url}


async def test_a_model_the_endpoint_does_not_serve_keeps_the_form_open(tmp_path, added):
    with FakeOpenAIServer(models=["coder"]) as server:
        app = frozen_app(tmp_path)
        async with app.run_test(size=(100, 40)) as pilot:
            dialog = await open_dialog(pilot, "openai")
            dialog.query_one("#model", Input).value = "gpt-5"
            dialog.query_one("#base-url", Input).value = server.base_url
            await pilot.click("#add")
            await until(pilot, lambda: "serves no model 'gpt-5'" in error_text(dialog), 10,
                        "the refusal")  # fmt: skip
            assert app.screen is dialog
    assert added == []


@pytest.mark.parametrize(
    ("proposer", "field", "value", "message"),
    [
        ("openai", "#model", "", "an openai agent needs a model"),
        ("command", "#command", "nosuchagent {prompt_file}", "no program 'nosuchagent'"),
        ("command", "#command", "true {prompt_fil}", "unknown placeholder"),
    ],
)
async def test_a_proposer_field_the_command_line_would_refuse_is_refused(
    tmp_path, added, proposer, field, value, message
):
    app = frozen_app(tmp_path)
    async with app.run_test(size=(100, 40)) as pilot:
        dialog = await open_dialog(pilot, proposer)
        dialog.query_one(field, Input).value = value
        await pilot.click("#add")
        await until(pilot, lambda: message in error_text(dialog), 5, "the refusal")
    assert added == []


async def test_a_command_agent_with_a_template_from_qrsup_toml_is_added(tmp_path, added):
    app = frozen_app(tmp_path, '[commands]\ndefault = "cat {prompt_file}"\n')
    async with app.run_test(size=(100, 40)) as pilot:
        await open_dialog(pilot, "command")
        await pilot.click("#add")
        await until(pilot, lambda: added, 5, "the agent added")
    assert (added[0].proposer, added[0].command) == ("command", "cat {prompt_file}")
