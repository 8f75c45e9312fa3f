"""A person's decisions about agents hold across relaunches, deaths are recorded with what they
cut off, and an agent that keeps dying is left stopped. Real agent processes on a tiny suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from qrsup.agents.heartbeat import Beat, read_beat, write_beat
from qrsup.agents.lifecycle import Desired, read_control, record_death
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.agents.store import Store
from qrsup.kernels.schema import Actor, Candidate, Verdict
from qrsup.supervisor import actions
from qrsup.supervisor.fleet import Fleet

from tests.loop_helpers import make_session, wait_for

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def _session(tmp_path: Path) -> tuple[RunPaths, Fleet]:
    paths = make_session(tmp_path, (AgentSpec("a1"), AgentSpec("a2", role="structural")))
    return paths, Fleet(paths)


def _evaluating(paths: RunPaths, name: str) -> bool:
    """Judging a candidate; an agent that crashed fails the wait at once, with its log, instead
    of at the deadline minutes later."""
    beat = read_beat(paths.heartbeat(name))
    if beat is not None and beat.state == "crashed":
        raise AssertionError(f"{name} crashed:\n{paths.agent_log(name).read_text()[-4000:]}")
    # A beat without a candidate is the incumbent's evaluation at a start, not a candidate's.
    return beat is not None and beat.state == "evaluating" and beat.candidate is not None


def _lifecycle(paths: RunPaths, name: str) -> list[tuple[str, str]]:
    return [
        (e["action"], e["by"]) for e in read_events(paths.events(name)) if e["event"] == "lifecycle"
    ]


def test_a_killed_agent_stays_killed_when_the_session_is_relaunched(tmp_path):
    paths, fleet = _session(tmp_path)
    try:
        fleet.start_all()
        assert actions.kill(fleet, "a1").ok
        relaunched = Fleet(paths)  # a new TUI or `qrsup run` on the same session
        assert list(relaunched.start_all()) == ["a2"]  # a2 still runs; a1 stays killed
        assert not relaunched.is_running("a1") and relaunched.is_running("a2")
        status = relaunched.status("a1")
        assert status.state == "killed" and "by human" in status.detail
        assert ("kill", "human") in _lifecycle(paths, "a1")
        assert actions.resume(relaunched, "a1").ok
        assert relaunched.is_running("a1")
        assert read_control(paths, "a1").desired == Desired.RUN
    finally:
        for name in ("a1", "a2"):
            fleet.kill(name)
            Fleet(paths).kill(name)


def test_agents_stopped_by_quitting_resume_on_relaunch_but_a_pause_holds(tmp_path):
    paths, fleet = _session(tmp_path)
    try:
        fleet.start_all()
        fleet.stop("a1", Actor.HUMAN, "quit the TUI", Desired.QUIT)
        fleet.pause("a2", Actor.HUMAN, "looking at something")
        assert fleet.wait_stopped(["a1"], 120) == []
        os.kill(fleet.pid("a2"), signal.SIGKILL)  # the machine went down
        wait_for(lambda: not fleet.is_running("a2"), 10, "a2 gone")
        relaunched = Fleet(paths)
        started = relaunched.start_all()
        assert list(started) == ["a1"]  # a2 is paused (and down)
        assert relaunched.status("a2").state == "paused"
        died = [e for e in read_events(paths.events("a2")) if e.get("action") == "died"]
        assert len(died) == 1 and died[0]["by"] == "supervisor"
    finally:
        for name in ("a1", "a2"):
            Fleet(paths).kill(name)


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_a_start_records_no_death_and_a_restart_records_the_last_processs_once(
    tmp_path, seed_incumbent
):
    """Every start used to record a death: the agent took the supervisor's mark of its own start
    for the beat of a process that had died, and three starts in ten minutes made a crash loop."""
    paths, fleet = _session(tmp_path)
    seed_incumbent(paths)
    try:
        fleet.start("a1")
        wait_for(lambda: _evaluating(paths, "a1"), 180, "a1 judging a candidate")
        assert [action for action, _ in _lifecycle(paths, "a1")] == ["start"]
        os.kill(fleet.pid("a1"), signal.SIGKILL)
        wait_for(lambda: not fleet.is_running("a1"), 10, "a1 gone")
        fleet.start("a1")  # nobody noticed the death: the start records it, as the supervisor's
        wait_for(lambda: read_beat(paths.heartbeat("a1")).pid == fleet.pid("a1"), 60, "a1 up")
        wait_for(lambda: _evaluating(paths, "a1"), 180, "a1 judging again")
        assert _lifecycle(paths, "a1") == [
            ("start", "human"),
            ("died", "supervisor"),
            ("start", "human"),
        ]
        (died,) = [e for e in read_events(paths.events("a1")) if e.get("action") == "died"]
        assert died["reason"].startswith("killed by SIGKILL while evaluating")
    finally:
        fleet.kill("a1")


@pytest.mark.e2e
def test_a_death_mid_evaluation_is_recorded_and_shown_by_status(tmp_path):
    paths, fleet = _session(tmp_path)
    try:
        fleet.start("a1")
        wait_for(lambda: _evaluating(paths, "a1"), 180, "a1 judging a candidate")
        beat = read_beat(paths.heartbeat("a1"))
        os.kill(fleet.pid("a1"), signal.SIGKILL)
        wait_for(lambda: not fleet.is_running("a1"), 10, "a1 gone")
        assert fleet.notice_deaths() == ["a1"]
        assert fleet.notice_deaths() == []  # once
        with Store.reader(paths.store) as store:
            (cut,) = [r for r in store.iterations("a1") if r.verdict == Verdict.INTERRUPTED]
        assert cut.candidate_id == beat.candidate and cut.iteration == beat.iteration
        assert "killed by SIGKILL" in cut.reason
        workspace = str(paths.root.parent.parent)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "qrsup.supervisor.cli",
                "status",
                "--workspace",
                workspace,
                "--session",
                "t",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "250"},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "interrupted" in done.stdout and cut.candidate_id in done.stdout
        assert "killed by SIGKILL" in done.stdout
        log = paths.agent_log("a1").read_text()
        assert "died by supervisor: killed by SIGKILL while evaluating" in log
        # The cut-off submission is in log.md with the rest, once.
        entries = (Path(workspace) / "log.md").read_text()
        assert entries.count(f"· {cut.candidate_id} · interrupted ·") == 1
        fleet.start("a1")
        wait_for(lambda: _evaluating(paths, "a1"), 180, "a1 judging again")
        with Store.reader(paths.store) as store:
            assert store.last_iteration("a1") == cut.iteration  # it goes on after the cut
        restarted = read_beat(paths.heartbeat("a1"))
        assert restarted.iteration == cut.iteration + 1
    finally:
        fleet.kill("a1")


def test_an_agent_that_dies_three_times_in_ten_minutes_is_left_stopped(tmp_path):
    paths, fleet = _session(tmp_path)
    try:
        for _ in range(3):
            fleet.start("a1")
            wait_for(lambda: read_beat(paths.heartbeat("a1")) is not None, 60, "a1's heartbeat")
            os.kill(fleet.pid("a1"), signal.SIGKILL)
            wait_for(lambda: not fleet.is_running("a1"), 10, "a1 gone")
            fleet.notice_deaths()
        relaunched = Fleet(paths)
        started = relaunched.start_all()
        assert "a1" not in started
        status = relaunched.status("a1")
        assert status.state == "crash loop"
        assert "died 3 times within 10 minutes" in status.detail
        events = list(read_events(paths.events("a1")))
        assert [e["action"] for e in events if e.get("action") == "died"] == ["died"] * 3
        assert (
            json.loads((paths.agent_dir("a1") / "control.json").read_text())["by"] == "supervisor"
        )
    finally:
        for name in ("a1", "a2"):
            Fleet(paths).kill(name)
            fleet.kill(name)


def test_a_live_agent_is_not_taken_for_dead_when_proc_cannot_be_read(tmp_path, monkeypatch):
    """A loaded host can fail a /proc read for a moment; a live agent recorded as dead would cut
    off its candidate in flight with a false `interrupted` record."""
    paths, fleet = _session(tmp_path)
    try:
        fleet.start("a1")
        wait_for(lambda: read_beat(paths.heartbeat("a1")) is not None, 60, "a1's heartbeat")
        reads = {"failed": 0}
        real_cmdline = psutil.Process.cmdline

        def unreadable_once(process: psutil.Process) -> list[str]:
            if reads["failed"] == 0:
                reads["failed"] += 1
                return []  # what an interrupted read of /proc/<pid>/cmdline gives
            return real_cmdline(process)

        monkeypatch.setattr(psutil.Process, "cmdline", unreadable_once)
        assert Fleet(paths).is_running("a1")  # not its parent: read again
        assert reads["failed"] == 1

        def denied(process: psutil.Process) -> list[str]:
            raise psutil.AccessDenied(process.pid)

        monkeypatch.setattr(psutil.Process, "cmdline", denied)
        assert fleet.is_running("a1")  # its parent asks the child itself
        assert fleet.notice_deaths() == []
        monkeypatch.undo()
        assert not [e for e in read_events(paths.events("a1")) if e.get("action") == "died"]
    finally:
        fleet.kill("a1")


def test_a_submission_cut_off_by_a_death_lands_in_log_md_once(tmp_path):
    """Every submission is in log.md: one whose agent died mid-judge too, beside its
    `interrupted` record (and nothing for an iteration cut off before it had a candidate)."""
    paths = make_session(tmp_path, (AgentSpec("a1"),))
    candidate = Candidate(
        "c-0123456789", "0123456789", "src", None, "a1", "exploit", "blocked_wy", "wider", None, 1.0
    )
    with Store(paths.store) as store:
        store.add_candidate(candidate)
        beat = Beat(
            pid=2**22 + 1, state="evaluating", iteration=1, updated_at=1.0, candidate=candidate.id
        )
        write_beat(paths.heartbeat("a1"), beat)
        death = record_death(paths, store, "a1", "exploit", "killed by SIGKILL", Actor.SUPERVISOR)
        assert death is not None and [r.candidate_id for r in death.interrupted] == [candidate.id]
        assert record_death(paths, store, "a1", "exploit", "again", Actor.SUPERVISOR) is None
    entries = (paths.root.parent.parent / "log.md").read_text()
    assert entries.count(f"· a1 · {candidate.id} · interrupted ·") == 1
    assert "- hypothesis: wider" in entries and "killed by SIGKILL" in entries
