"""The status-change hook: a person's command, filled per argument, run off the loop's thread and
recorded with its exit status; a bad template is refused when qrsup.toml is read."""

from __future__ import annotations

import pytest
from qrsup.agents.hooks import HookSettings, StatusHook
from qrsup.agents.settings import SettingsError, load_settings


def test_the_hook_runs_once_per_fire_with_its_fields_and_is_recorded(tmp_path):
    out = tmp_path / "out.txt"
    command = f'sh -c \'printf "%s|" "$0" "$QRSUP_STATUS" >> {out}\' \'{{agent}} {{detail}}\''
    recorded: list[dict] = []
    hook = StatusHook(HookSettings(command), "a2", "s", str(tmp_path), recorded.append)
    hook.fire("stall", "8 evaluations without a gain", wait=True)
    assert out.read_text() == "a2 8 evaluations without a gain|stall|"
    (event,) = recorded
    assert (event["event"], event["status"], event["exit_status"]) == ("hook", "stall", 0)


def test_statuses_the_hook_is_not_for_run_nothing(tmp_path):
    recorded: list[dict] = []
    settings = HookSettings(f"touch {tmp_path / 'x'}", on=("crash",))
    hook = StatusHook(settings, "a1", "s", str(tmp_path), recorded.append)
    assert hook.fire("new_best", "c-1 faster") is None
    assert StatusHook(HookSettings(), "a1", "s", "", recorded.append).fire("crash", "") is None
    assert recorded == [] and not (tmp_path / "x").exists()


def test_a_hook_past_its_timeout_is_killed_and_recorded_so(tmp_path):
    recorded: list[dict] = []
    hook = StatusHook(HookSettings("sleep 30", timeout_s=0.3), "a1", "s", "", recorded.append)
    hook.fire("crash", "boom", wait=True)
    assert recorded[0]["timed_out"] is True and recorded[0]["seconds"] < 10


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('command = "notify {agnet}"', "unknown placeholder(s) agnet"),
        ('command = "notify \'x"', "[hooks] command: No closing quotation"),
        ('command = "true"\non = ["crash", "lunch"]', "unknown status(es) lunch"),
    ],
)
def test_a_bad_hook_is_refused_when_qrsup_toml_is_read(tmp_path, table, message):
    (tmp_path / "qrsup.toml").write_text(f"[hooks]\n{table}\n")
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    assert message in str(caught.value)
