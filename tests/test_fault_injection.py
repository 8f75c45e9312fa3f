"""kill -9 at random points — agents while they propose, judge, record or promote, and their
judge processes — and after each kill the records still hold:

- every candidate has a terminal iteration record, or is the one its running agent is working on;
- every events.jsonl line parses;
- every candidate is on its agent's git branch (once its agent restarted and recovered);
- the store's incumbent is the one the workspace's HEAD commits;
- no judge process outlives its agent.

CI runs FAULT_KILLS kills; `pytest -m slow` runs SLOW_FAULT_KILLS.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from qrsup.agents.git_workspace import open_repo, read_incumbent
from qrsup.agents.heartbeat import read_beat
from qrsup.agents.recovery import agent_branch, branch_candidates
from qrsup.agents.session import AgentSpec, RunPaths, load_session
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash
from qrsup.supervisor.fleet import Fleet

from tests.loop_helpers import make_session, wait_for

FAULT_KILLS = int(os.environ.get("QRSUP_FAULT_KILLS", "50"))
SLOW_FAULT_KILLS = 200
AGENTS = (AgentSpec("a1", role="exploit"), AgentSpec("a2", role="structural"))
SEED_AGENT = "workspace"  # the seeded incumbent belongs to no agent


def _judges_of(pid: int) -> list[psutil.Process]:
    """Referees started by the agent with this pid (their command line names it) and the
    contestant launchers those referees started."""
    referees, launchers = [], []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE or len(cmdline) < 3:
            continue
        if cmdline[2] == "qrsup.kernels.judge.referee_main" and cmdline[-1] == str(pid):
            referees.append(proc)
        elif cmdline[2] == "qrsup.kernels.judge.sandbox_main":
            launchers.append((proc, json.loads(cmdline[3]).get("parent")))
    referee_pids = {r.pid for r in referees}
    return referees + [p for p, parent in launchers if parent in referee_pids]


def _check_records(paths: RunPaths, fleet: Fleet, started_at: dict[str, float]) -> None:
    session = load_session(paths)
    with Store.reader(paths.store) as store:
        recorded = {r.candidate_id for r in store.iterations() if r.candidate_id}
        for candidate in store.candidates():
            if candidate.agent == SEED_AGENT or candidate.id in recorded:
                continue
            agent = candidate.agent
            assert fleet.is_running(agent), f"{candidate.id} of stopped {agent} has no record"
            assert candidate.created_at >= started_at[agent], f"{candidate.id} is stale"
        for spec in AGENTS:
            with open_repo(session.workspace) as repo:
                on_branch = branch_candidates(repo, agent_branch(session, spec.name))
            earlier = [
                c.id
                for c in store.candidates(spec.name)
                if c.created_at < started_at[spec.name] - 1.0
            ]
            assert set(earlier) <= on_branch, f"{spec.name}: {set(earlier) - on_branch}"
            for line in paths.events(spec.name).read_text().splitlines():
                json.loads(line)
        incumbent = store.candidate(store.incumbent_id() or "")
    with open_repo(session.workspace) as repo:
        head_source = read_incumbent(repo)
    if incumbent is not None and head_source is not None:
        assert source_hash(head_source) == incumbent.hash, "HEAD and the store disagree"


def _until_working(paths: RunPaths, fleet: Fleet, name: str, timeout_s: float) -> None:
    """The agent's new process started over: recovered, and its heartbeat is past 'starting'."""

    def working() -> bool:
        beat = read_beat(paths.heartbeat(name))
        fresh = beat is not None and beat.pid == fleet.pid(name)
        return fresh and beat.state not in ("starting", "died", "crashed")

    wait_for(working, timeout_s, f"{name} working again")


def _inject(kills: int, tmp_path: Path, seed: int) -> int:
    paths = make_session(tmp_path, AGENTS, auto_promote=True)
    fleet = Fleet(paths)
    rng = random.Random(seed)
    started_at = {}
    for spec in AGENTS:
        started_at[spec.name] = time.time()
        fleet.start(spec.name)
    for spec in AGENTS:
        _until_working(paths, fleet, spec.name, 180)
    survived = 0
    points: Counter[str] = Counter()
    try:
        for _ in range(kills):
            name = rng.choice([s.name for s in AGENTS])
            time.sleep(rng.uniform(0.1, 1.2))
            pid = fleet.pid(name)
            assert pid is not None, f"{name} is not running"
            judges = _judges_of(pid)
            beat = read_beat(paths.heartbeat(name))
            point = f"{beat.state} {beat.detail}".strip() if beat else "?"
            if judges and rng.random() < 0.6:
                points[f"judge of an agent {point}"] += 1
                os.kill(rng.choice(judges).pid, signal.SIGKILL)  # the agent lives on
            else:
                points[f"agent {point}"] += 1
                os.kill(pid, signal.SIGKILL)
                wait_for(
                    lambda pid=pid: (
                        not psutil.pid_exists(pid)
                        or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
                    ),
                    10,
                    "the kill",
                )
                wait_for(lambda pid=pid: not _judges_of(pid), 10, f"{name}'s judges to die with it")
                if rng.random() < 0.5:
                    fleet.notice_deaths()  # the supervisor notices; else the agent, at its start
                started_at[name] = time.time()
                fleet.start(name)
                _until_working(paths, fleet, name, 120)
            _check_records(paths, fleet, started_at)
            survived += 1
    finally:
        for spec in AGENTS:
            fleet.kill(spec.name)
        print(f"survived {survived} kills; where they struck: {dict(sorted(points.items()))}")
    return survived


@pytest.mark.timeout(900)  # about 150 s on a quiet 2-core machine; far more on a busy one
@pytest.mark.usefixtures("no_leftover_processes")
def test_records_survive_kill_minus_nine_at_random_points(tmp_path: Path) -> None:
    assert _inject(FAULT_KILLS, tmp_path, seed=17) == FAULT_KILLS


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_records_survive_many_more_kills(tmp_path: Path) -> None:
    assert _inject(SLOW_FAULT_KILLS, tmp_path, seed=23) == SLOW_FAULT_KILLS
