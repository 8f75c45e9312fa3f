"""Real agent processes on a tiny suite: records, steering, kill -9 and restart, dedupe, goals."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import git
import psutil
import pytest
from qrsup.agents import inbox
from qrsup.agents.best_figures import BestFigures
from qrsup.agents.evaluation import Evaluator
from qrsup.agents.promotion import promote
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, RunPaths, load_session
from qrsup.agents.spaces import BlockedWySpace
from qrsup.agents.store import Store
from qrsup.kernels.suites import get_suite
from qrsup.supervisor.fleet import Fleet

from tests.loop_helpers import make_session, wait_for

pytestmark = pytest.mark.timeout(600)


def iteration_events(paths, name):
    return [e for e in read_events(paths.events(name)) if e.get("event") == "iteration"]


@pytest.mark.e2e
def test_two_tuner_agents_record_every_evaluation_once_and_promotion_commits_once(tmp_path):
    agents = (
        AgentSpec("a1", role="exploit", max_iterations=2, goal="geomean < 1ns"),
        AgentSpec(
            "a2", role="structural", family="recursive_wy", max_iterations=2, goal="geomean < 1ns"
        ),
    )
    paths = make_session(tmp_path, agents)
    fleet = Fleet(paths)
    fleet.start_all()
    assert fleet.wait_stopped(["a1", "a2"], 480) == []
    store = Store(paths.store)
    log_md = (paths.root.parent.parent / "log.md").read_text()
    for name in ("a1", "a2"):
        assert fleet.status(name).state == "stopped"
        rows = store.iterations(name)
        assert sorted(r.iteration for r in rows) == [1, 2]
        best, shown = BestFigures.of(rows), fleet.status(name)  # the list's figures: the records'
        assert (shown.best_geomean_ns, shown.best_quick_geomean_ns) == (best.full_ns, best.quick_ns)
        events = iteration_events(paths, name)
        assert sorted(e["iteration"] for e in events) == [1, 2]
        evaluated = [e for e in events if e["evaluated"]]
        for event in evaluated:
            assert log_md.count(f"· {name} · {event['candidate_id']} ·") == 1
    beam_entries = [
        e
        for n in ("a1", "a2")
        for e in iteration_events(paths, n)
        if e["decision"].startswith("beam") or e["decision"] == "promoted"
    ]
    assert beam_entries, "the structural agent's first passing candidate takes the empty slot"
    for event in beam_entries:  # every beam entry is profiled once, its summary stored
        (profile,) = store.profiles(event["candidate_id"])
        assert profile.summary
    evaluated_ids = {
        e["candidate_id"]
        for n in ("a1", "a2")
        for e in iteration_events(paths, n)
        if e["evaluated"]
    }
    own = {c.id for c in store.candidates() if c.agent in ("a1", "a2")}
    stored = {row.candidate_id for row in store.evaluations() if row.agent in ("a1", "a2")}
    assert evaluated_ids == stored & own
    seeded = {c.id for c in store.candidates() if c.agent == "workspace"}
    assert stored - own <= seeded  # the seeded incumbent, re-timed for a fair quick stage
    # The incumbent is profiled once, though both agents began at once, and each shows it.
    (seen,) = [p for c in seeded for p in store.profiles(c)]
    assert seen.ok and all(paths.profile(name).exists() for name in ("a1", "a2"))
    first = next(e for e in iteration_events(paths, "a1") if e["iteration"] == 1)
    assert "(the parent's profile: " in first["hypothesis"]  # the tuner saw where time goes
    # A human promotion of the best candidate: revalidated, then exactly one commit with figures.
    repo = git.Repo(paths.root.parent.parent)
    before = repo.head.commit.hexsha
    best = min(
        (c for c in store.candidates() if c.agent in ("a1", "a2") and c.geomean_ns),
        key=lambda c: c.geomean_ns,
    )
    session = load_session(paths)
    evaluator = Evaluator(get_suite(session.suite), "cpu", "quick")
    # Forced: CPU times on a tiny suite say nothing about speed, so the figure may read slower.
    result = promote(session.workspace, paths, store, evaluator, best.id, by="test", force=True)
    assert result.ok, result.message
    commits = list(repo.iter_commits(f"{before}..HEAD"))
    assert len(commits) == 1
    assert commits[0].message.startswith(f"Promote {best.id}: geomean")
    assert "per-spec (ms):" in commits[0].message
    assert (paths.root.parent.parent / "kernels/incumbent.py").read_text() == best.source
    assert store.incumbent_id() == best.id
    store.close()


@pytest.mark.e2e
def test_steering_sent_during_an_evaluation_is_taken_once_at_the_next_boundary(tmp_path):
    paths = make_session(tmp_path, (AgentSpec("a1", max_iterations=2, goal="geomean < 1ns"),))
    fleet = Fleet(paths)
    fleet.start("a1")
    wait_for(
        lambda: fleet.status("a1").state == "evaluating" and fleet.status("a1").iteration >= 1,
        240,
        "an evaluation",
    )
    message = fleet.send("a1", "steer", "try panel_width=16")
    assert fleet.wait_stopped(["a1"], 300) == []
    taken = [e for e in read_events(paths.events("a1")) if e.get("event") == "steering"]
    assert [e["message_id"] for e in taken] == [message.id]
    assert taken[0]["iteration"] == 1  # taken at the boundary after iteration 1, not during it
    store = Store(paths.store)
    assert [r.id for r in store.steering("a1")] == [message.id]
    assert inbox.pending(paths.inbox("a1")) == []
    second = next(e for e in iteration_events(paths, "a1") if e["iteration"] == 2)
    assert "panel_width" in second["hypothesis"] and "(steered" in second["hypothesis"]
    steered = store.candidate(second["candidate_id"])
    assert BlockedWySpace().read(steered.source)["all.panel_width"] == 16
    store.close()


@pytest.mark.slow
def test_kill_9_mid_evaluation_then_restart_continues_from_the_last_record(tmp_path):
    paths = make_session(tmp_path, (AgentSpec("a1", max_iterations=3, goal="geomean < 1ns"),))
    fleet = Fleet(paths)
    pid = fleet.start("a1")
    wait_for(lambda: [e for e in iteration_events(paths, "a1")], 300, "a first record")
    wait_for(lambda: fleet.status("a1").state == "evaluating", 120, "the next evaluation")
    tree = [pid] + [p.pid for p in psutil.Process(pid).children(recursive=True)]
    os.kill(pid, signal.SIGKILL)
    fleet.kill("a1")  # the fleet takes the orphaned judge processes down too
    wait_for(
        lambda: (
            not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in tree)
        ),
        30,
        "no process left",
    )
    store = Store(paths.store)
    done = store.last_iteration("a1")
    assert done >= 1
    for line in paths.events("a1").read_text().splitlines():
        json.loads(line)  # every record is whole
    store.close()
    fleet.start("a1")
    assert fleet.wait_stopped(["a1"], 400) == []
    store = Store(paths.store)
    iterations = sorted(r.iteration for r in store.iterations("a1"))
    assert iterations == [1, 2, 3]
    assert sorted(e["iteration"] for e in iteration_events(paths, "a1")) == [1, 2, 3]
    store.close()


# A coding-agent CLI whose edit is far faster on the tiny suite (LAPACK's geqrf in place of the
# Python blocked WY), so the exploit slot keeps its first candidate and the goal is met in one
# iteration rather than after a random search (which took 18 s to over 280 s).
SWAP_IN_LAPACK = """#!/bin/sh
sed -i 's/return geqrf_blocked(a, CONFIG)/return torch.geqrf(a)/' candidate.py
echo "LAPACK's geqrf: no Python loop over panels" > hypothesis.txt
"""


def _start_lapack_swapping_agent(tmp_path: Path, goal: str) -> tuple[RunPaths, Fleet]:
    """Agent a1 driving SWAP_IN_LAPACK as its coding-agent CLI, started."""
    swap = tmp_path / "swap-in-lapack"
    swap.write_text(SWAP_IN_LAPACK)
    swap.chmod(0o755)
    spec = AgentSpec("a1", proposer="command", command=f"{swap} {{prompt_file}}", goal=goal)
    paths = make_session(tmp_path, (spec,))
    fleet = Fleet(paths)
    fleet.start("a1")
    return paths, fleet


@pytest.mark.e2e
def test_goal_met_agent_idles_and_under_a_goal_out_of_reach_pauses_when_nothing_is_new(tmp_path):
    """One agent, two goals (its start, bootstrap and first judge run serve both).

    Met in one iteration, the goal is reported once and the agent idles until stopped. Started
    again with a goal out of reach, it makes the same edit every time: from the kept candidate on
    the edit changes nothing, and the fifth such proposal in a row pauses the agent instead of
    letting it spin (a model's every try costs a call)."""
    paths, fleet = _start_lapack_swapping_agent(tmp_path, "geomean < 100s")
    try:
        wait_for(lambda: fleet.status("a1").state == "goal met", 120, "the goal to be met")
        met = [e for e in read_events(paths.events("a1")) if e.get("event") == "goal_met"]
        assert len(met) == 1 and met[0]["goal"] == "geomean < 100s"
        fleet.stop("a1")
        assert fleet.wait_stopped(["a1"], 60) == []
        fleet.send("a1", "goal", "geomean < 1ns")
        fleet.start("a1")
        wait_for(lambda: fleet.status("a1").state == "paused", 120, "the agent to pause")
        records = iteration_events(paths, "a1")
        assert records[0]["evaluated"] and records[-1]["decision"] == "paused"
        assert len(records) == 6 and not any(r["evaluated"] for r in records[1:])
        assert "5 proposals in a row gave nothing new to judge" in records[-1]["reason"]
        fleet.resume("a1")
        # Resumed, it proposes again. Five quick proposals that give nothing new can pause it
        # anew between two looks at its state, so its records tell that it resumed.
        wait_for(lambda: len(iteration_events(paths, "a1")) > 6, 30, "the agent to go on")
    finally:
        fleet.kill("a1")  # a failed wait leaves no agent behind to slow every later test
