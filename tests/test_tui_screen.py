"""The screen over a frozen session (records, no processes): selection, panels, dialogs, layout."""

from __future__ import annotations

from dataclasses import replace

import pytest
from qrsup.agents import inbox
from qrsup.agents.session import load_session
from qrsup.agents.store import Store
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict
from qrsup.supervisor import actions
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.widgets.add_agent_dialog import AddAgentDialog
from qrsup.supervisor.widgets.choice_dialog import ChoiceDialog
from qrsup.supervisor.widgets.help_screen import HelpScreen
from qrsup.supervisor.widgets.leaderboard import Leaderboard
from qrsup.supervisor.widgets.log_tail import LogTail
from qrsup.supervisor.widgets.profile_panel import ProfilePanel
from qrsup.supervisor.widgets.text_prompt import TextPrompt
from qrsup.supervisor.widgets.text_screen import TextScreen
from textual.command import CommandList
from textual.geometry import Region
from textual.widgets import Input, Select

from tests.tui_pilot import notices, type_text, until
from tests.tui_sessions import T0, FrozenSampler, frozen_sample, frozen_session

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def frozen_app(tmp_path):
    paths = frozen_session(tmp_path)
    app = SupervisorApp(Fleet(paths))
    app.main.sampler = FrozenSampler(app.main.post_fact)
    return app


async def loaded(pilot) -> None:
    app = pilot.app
    await until(pilot, lambda: app.main.query_one(Leaderboard).row_count == 5, 10, "the board")
    await until(pilot, lambda: app.main.query_one(LogTail).line_count, 10, "the log")


async def test_number_keys_select_an_agent_and_its_log_and_profile_follow(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        log = frozen_app.main.query_one(LogTail)
        assert frozen_app.selected_agent == "a1" and log.agent == "a1"
        await pilot.press("3")
        await until(pilot, lambda: log.agent == "a3" and log.line_count == 30, 10, "a3's log")
        assert frozen_app.selected_agent == "a3"
        assert "geomean < 0.05ms" in str(log.border_subtitle)
        profile = frozen_app.main.query_one(ProfilePanel)
        await until(pilot, lambda: "no profile yet" in str(profile.render()), 10, "a3's profile")
        await pilot.press("9")  # no ninth agent: nothing changes
        assert frozen_app.selected_agent == "a3"


async def test_leaderboard_sorts_by_key_and_by_column_header(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        board = frozen_app.main.query_one(Leaderboard)
        order = lambda: [board.coordinate_to_cell_key((r, 0)).row_key.value for r in range(5)]  # noqa: E731
        assert order()[:3] == ["c-1a2b3c4d5e", "c-2b3c4d5e6f", "c-incumbent"]
        assert order()[-1] == "c-3c4d5e6f7a"  # failed: no geomean, last
        board.focus()
        await pilot.press("t")
        assert board.sort_column == "age"
        assert order()[0] == "c-4d5e6f7a8b"  # newest first
        await pilot.click(Leaderboard, offset=(31, 1))  # the header of the verdict column
        await until(pilot, lambda: board.sort_column == "verdict", 5, "a sort by verdict")
        assert order()[0] == "c-3c4d5e6f7a"  # "fail" < "pass"
        board.sort_by("spec1")
        assert order()[:2] == ["c-1a2b3c4d5e", "c-incumbent"]


async def test_a_quick_only_row_sorts_by_its_quick_figure_and_the_seed_shows_no_role(tmp_path):
    paths = frozen_session(tmp_path)
    row = Candidate("c-quick", "hash-quick", "x = 3\n", "c-1a2b3c4d5e", "a1", "exploit",
                    "blocked_wy", "panel 20", None, T0 + 900)  # fmt: skip
    with Store(paths.store) as store:
        store.add_candidate(row)
        report = {"verdict": "pass", "geomean_ns": 50_000.0, "reason": ""}
        store.add_evaluation(row.id, "a1", 9, "quick", report, {0: 50_000.0})
        store.record_iteration(Iteration("a1", 9, Verdict.PASS, Decision.NOT_PROMISING, row.id))
    app = SupervisorApp(Fleet(paths))
    app.main.sampler = FrozenSampler(app.main.post_fact)
    async with app.run_test(size=(100, 30)) as pilot:
        board = app.main.query_one(Leaderboard)
        await until(pilot, lambda: board.row_count == 6, 10, "the board")
        order = [board.coordinate_to_cell_key((r, 0)).row_key.value for r in range(6)]
        # its quick 0.05 ms beats the full 0.05864 ms of c-1a2b3c4d5e: first, marked `q`
        assert order[:3] == ["c-quick", "c-1a2b3c4d5e", "c-2b3c4d5e6f"]
        assert board.get_cell("c-quick", "geomean").plain == "0.05 q"
        assert str(board.get_cell("c-incumbent", "role")) == "—"  # the seed: no beam role
        assert str(board.get_cell("c-1a2b3c4d5e", "role")) == "exploit"


async def test_enter_on_a_leaderboard_row_shows_its_diff_against_its_parent(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        frozen_app.main.query_one(Leaderboard).focus()
        await pilot.press("enter")
        screen = await until(
            pilot, lambda: isinstance(frozen_app.screen, TextScreen) and frozen_app.screen, 10,
            "the diff screen",
        )  # fmt: skip
        assert screen.title_text == "diff · c-1a2b3c4d5e vs c-incumbent"
        assert "+PANEL = 24" in screen.text.plain
        await pilot.press("escape")
        assert frozen_app.screen is frozen_app.main


async def test_help_lists_every_key_and_closes(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(frozen_app.screen, HelpScreen)
        listed = {key for key, _ in frozen_app.screen.keys}
        assert {"s", "g", "a", "b", "p", "k", "r", "n", "P", "e", "q", "?", "1-9", "t"} <= listed
        await pilot.press("escape")
        assert frozen_app.screen is frozen_app.main


async def test_command_palette_runs_the_same_actions_as_the_keys(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        titles = {c.title for c in frozen_app.get_system_commands(frozen_app.main)}
        assert {"Steer", "Goal", "Advise", "Ask", "Pause", "Kill", "Restart", "Add"} <= titles
        assert {"Promote", "Export", "Quit", "Help"} <= titles
        await pilot.press("ctrl+p")
        await type_text(pilot, "Steer")
        matches = lambda: frozen_app.screen.query_one(CommandList).option_count  # noqa: E731
        await until(pilot, matches, 5, "a match")
        await pilot.press("down", "enter")
        await until(pilot, lambda: isinstance(frozen_app.screen, TextPrompt), 5, "the prompt")


async def test_steer_cancelled_sends_nothing_and_sent_queues_one_message(frozen_app):
    paths = frozen_app.fleet.paths
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("2", "s")
        await type_text(pilot, "never sent")
        await pilot.press("escape")
        assert frozen_app.screen is frozen_app.main
        await pilot.press("s")
        assert isinstance(frozen_app.screen, TextPrompt)
        assert "The tuner reads knob=value pins" in frozen_app.screen.prompt  # a2's proposer
        await type_text(pilot, "try wider panels")
        await pilot.press("enter")
        await until(pilot, lambda: inbox.pending(paths.inbox("a2")), 10, "the inbox file")
        await until(pilot, lambda: any("queued" in n for n in notices(frozen_app)), 5, "a notice")
    pending = [m for _, m in inbox.pending(paths.inbox("a2"))]
    assert [(m.kind, m.text, m.sender) for m in pending] == [("steer", "try wider panels", "human")]


async def test_a_goal_that_does_not_parse_is_refused_and_sends_nothing(frozen_app):
    paths = frozen_app.fleet.paths
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("g")
        assert frozen_app.screen.query_one(Input).value == "beat incumbent by 5%"
        frozen_app.screen.query_one(Input).value = "go faster please"
        await pilot.press("enter")
        await until(pilot, lambda: any("goal" in n.lower() for n in notices(frozen_app)), 10,
                    "the refusal")  # fmt: skip
    assert inbox.pending(paths.inbox("a1")) == []


async def test_kill_cancelled_asks_and_does_nothing(frozen_app, monkeypatch):
    killed = []
    monkeypatch.setattr(actions, "kill", lambda fleet, agent: killed.append(agent))
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("k")
        assert isinstance(frozen_app.screen, ChoiceDialog)
        assert frozen_app.screen.focused.id == "choice-1"  # Cancel has the focus: enter is safe
        await pilot.press("enter")
        await pilot.press("k", "n")
        await pilot.press("k", "escape")
        assert frozen_app.screen is frozen_app.main
    assert killed == []


async def test_promote_is_offered_only_on_a_passing_row(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        board = frozen_app.main.query_one(Leaderboard)
        board.focus()
        assert frozen_app.check_action("promote", ()) is True
        board.move_cursor(row=board.get_row_index("c-3c4d5e6f7a"))
        await pilot.pause()
        assert frozen_app.check_action("promote", ()) is None
        await pilot.press("P")
        assert frozen_app.screen is frozen_app.main
        board.move_cursor(row=0)
        await pilot.press("P")  # the evidence is read off the screen's thread, then it asks
        await until(pilot, lambda: isinstance(frozen_app.screen, ChoiceDialog), 10, "the question")
        assert "c-1a2b3c4d5e" in frozen_app.screen.question
        assert "against the incumbent c-incumbent" in frozen_app.screen.details.plain
        await pilot.press("n")
        assert frozen_app.screen is frozen_app.main


async def test_export_writes_the_selected_row_into_the_workspace_and_says_where(frozen_app):
    workspace = frozen_app.fleet.session.workspace
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        board = frozen_app.main.query_one(Leaderboard)
        board.move_cursor(row=board.get_row_index("c-3c4d5e6f7a"))  # failed: nothing to export
        await pilot.pause()
        assert frozen_app.check_action("export", ()) is None
        board.move_cursor(row=board.get_row_index("c-2b3c4d5e6f"))
        await pilot.press("e")
        written = workspace / "submission-c-2b3c4d5e6f.py"
        await until(pilot, lambda: any(str(written) in n for n in notices(frozen_app)), 10,
                    "the export's notice")  # fmt: skip
    assert "def custom_kernel" in written.read_text()
    assert "PANEL = 32" in written.read_text()  # c-2b3c4d5e6f's own source (tui_sessions)


async def test_add_agent_refuses_a_taken_name_and_cancel_adds_nothing(frozen_app):
    paths = frozen_app.fleet.paths
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("n")
        dialog = frozen_app.screen
        assert isinstance(dialog, AddAgentDialog)
        assert dialog.query_one("#agent-name", Input).value == "a4"
        dialog.query_one("#agent-name", Input).value = "a2"
        await pilot.click("#add")
        await until(pilot, lambda: "already has" in str(dialog.query_one(".dialog-error").render()),
                    5, "the refusal")  # fmt: skip
        await pilot.press("escape")
        assert frozen_app.screen is frozen_app.main
    assert [a.name for a in load_session(paths).agents] == ["a1", "a2", "a3"]


async def test_a_failing_action_becomes_a_notification_and_the_screen_stays(
    frozen_app, monkeypatch
):
    def broken(fleet, agent):
        raise OSError("disk full")

    monkeypatch.setattr(actions, "restart", broken)
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("r")
        await until(pilot, lambda: any("disk full" in n for n in notices(frozen_app)), 10,
                    "the failure")  # fmt: skip
        assert frozen_app.is_running


async def test_quit_asks_about_the_running_agents_and_cancel_stays(frozen_app):
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("q")
        assert isinstance(frozen_app.screen, ChoiceDialog)
        assert frozen_app.screen.question.startswith("a1, a2 still running")
        await pilot.press("c")
        assert frozen_app.screen is frozen_app.main and frozen_app.is_running
        await pilot.press("q", "l")
        await until(pilot, lambda: not frozen_app.is_running, 5, "the exit")
    assert frozen_app.return_value == "left running"


async def test_log_lines_written_behind_a_dialog_are_there_when_it_closes(frozen_app):
    log_file = frozen_app.fleet.paths.agent_log("a1")
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        with log_file.open("a") as handle:
            handle.write("".join(f"burst {i}\n" for i in range(500)))
        log = frozen_app.main.query_one(LogTail)
        await until(pilot, lambda: log.lines[-1] == "burst 499", 10, "the burst")
        assert isinstance(frozen_app.screen, HelpScreen)


async def test_a_long_log_line_shows_whole_and_w_gives_one_row_per_line_to_scroll_across(
    frozen_app,
):
    long_line = "reason: the quick stage passed but was not close enough " + "x" * 90 + " END"
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        log = frozen_app.main.query_one(LogTail)
        with frozen_app.fleet.paths.agent_log("a1").open("a") as handle:
            handle.write(long_line + "\n")
        await until(pilot, lambda: log.lines[-1] == long_line, 10, "the long line")
        await pilot.pause()
        height = lambda: log.scrollable_content_region.height  # noqa: E731
        rows = lambda: [log.render_line(y).text for y in range(height())]  # noqa: E731
        width = log.scrollable_content_region.width
        words = "reason: the quick stage passed but was not close"
        assert len(words) <= width < len(words + " enough")
        # Wrapped between words, and a word longer than a row cut at the row's width.
        shown = [row.rstrip() for row in rows() if row.strip()][-4:]
        assert shown == [words, "enough", "x" * width, "x" * (90 - width) + " END"]
        log.focus()
        await pilot.press("w")
        await until(pilot, lambda: log.virtual_size.width == len(long_line), 5, "no wrapping")
        assert rows()[-1].rstrip() == long_line[: log.scrollable_content_region.width]
        await pilot.press("end", "right", "right")
        await until(pilot, lambda: log.scroll_x > 0, 5, "a scroll across")
        assert rows()[-1].startswith(long_line[int(log.scroll_x) :][:10])


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_panels_fit_small_terminals_without_overlapping(frozen_app, size):
    async with frozen_app.run_test(size=size) as pilot:
        await loaded(pilot)
        panels = ["#agents", "#log", "#profile", "#beam", "#leaderboard", "#stats"]
        shown = [frozen_app.main.query_one(p) for p in panels]
        shown = [w for w in shown if w.display and w.region.area]
        for i, first in enumerate(shown):
            for second in shown[i + 1 :]:
                assert not first.region.overlaps(second.region), (first.id, second.id)
        assert {w.id for w in shown} >= {"agents", "log", "beam", "leaderboard", "stats"}
        assert all(w.region.height >= 3 for w in shown if w.id != "stats")
        assert (frozen_app.main.query_one("#profile").display) == (size[1] >= 28)


async def test_p_resumes_an_agent_that_is_stopped_and_pauses_one_that_runs(frozen_app, monkeypatch):
    called = []
    for name in ("pause", "resume"):
        done = lambda fleet, agent, name=name: (  # noqa: E731
            called.append((name, agent)) or actions.ActionResult(True, f"{name} {agent}")
        )
        monkeypatch.setattr(actions, name, done)
    sample = frozen_sample()
    stopped = replace(sample.statuses[0], state="stopped", alive=False, pid=None)
    async with frozen_app.run_test(size=(100, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("p")  # a1 evaluating: paused
        await until(pilot, lambda: called == [("pause", "a1")], 5, "the pause")
        frozen_app.main.post_fact(replace(sample, statuses=(stopped, *sample.statuses[1:])))
        await until(pilot, lambda: frozen_app.main.statuses["a1"].state == "stopped", 5, "a1")
        await pilot.press("p")  # stopped by qrsup stop: nothing to pause, so it resumes
        await pilot.press("2", "p")  # a2 paused: resumed
        await until(pilot, lambda: len(called) == 3, 5, "the resumes")
    assert called[1:] == [("resume", "a1"), ("resume", "a2")]


async def open_dialog(pilot, keys: list[str]) -> None:
    app = pilot.app
    if keys == ["P"]:
        app.main.query_one(Leaderboard).focus()
    await pilot.press(*keys)
    await until(pilot, lambda: app.screen.query(".dialog"), 10, f"the dialog of {keys}")
    if keys == ["n"]:  # the add dialog at its tallest: an openai agent's fields
        app.screen.query_one("#proposer", Select).value = "openai"
    await pilot.pause()


@pytest.mark.parametrize("keys", [["question_mark"], ["P"], ["n"], ["k"], ["q"], ["s"]])
async def test_at_80x24_a_dialog_fits_and_its_end_scrolls_into_view_under_its_title(
    frozen_app, keys
):
    async with frozen_app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        await open_dialog(pilot, keys)
        screen = frozen_app.screen
        dialog = screen.query_one(".dialog")
        fixed = dialog.query(".dialog-title, .dialog-buttons")
        content = [w for w in dialog.children if w not in fixed and w.display]
        if keys == ["n"]:  # tab down to the last field
            last = screen.query_one("#agent-goal", Input)
            while screen.focused is not last:
                await pilot.press("tab")
        else:  # keys scroll the dialog, whatever has the focus (the help itself, a button)
            last = content[-1]
            await pilot.press("end")
        view = dialog.scrollable_content_region
        # the help's last key, the goal field…: scrolled into view, under the title
        await until(pilot, lambda: last.region.bottom <= view.bottom, 5, "the end in view")
        assert last.region.y >= view.y or last.region.height > view.height
        assert Region(0, 0, 80, 24).contains_region(dialog.region)
        assert fixed and all(dialog.region.contains_region(w.region) for w in fixed)
