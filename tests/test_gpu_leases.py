"""GPU leases on simulated device lists: exclusive by default, shared on request, freed on death."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest
from qrsup.agents.session import AgentSpec
from qrsup.supervisor.fleet import REVALIDATION_HOLDER, Fleet
from qrsup.supervisor.leases import GpuLeases, LeaseError, parse_gpus

from tests.loop_helpers import make_session, wait_for


def sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_parse_gpus():
    assert parse_gpus("0,1,3", lambda: 8) == [0, 1, 3]
    assert parse_gpus(None, lambda: 4) == [0, 1, 2, 3]
    for bad in ("a,b", "1,1", "-1", ""):
        with pytest.raises(ValueError, match="--gpus"):
            parse_gpus(bad, lambda: 4)


def test_one_agent_per_gpu_until_they_run_out(tmp_path):
    leases = GpuLeases(tmp_path, [0, 1, 2, 3])
    holders = [sleeper() for _ in range(4)]
    try:
        got = []
        for i, proc in enumerate(holders):
            got.append(leases.acquire(f"a{i}"))
            leases.bind(f"a{i}", proc.pid)
        assert sorted(got) == [0, 1, 2, 3]
        with pytest.raises(LeaseError, match="already holds 1 agent"):
            leases.acquire("a4")
        assert leases.holders() == {0: ["a0"], 1: ["a1"], 2: ["a2"], 3: ["a3"]}
    finally:
        for proc in holders:
            proc.kill()
            proc.wait()


def test_sharing_when_asked_fills_the_least_loaded_gpu_first(tmp_path):
    leases = GpuLeases(tmp_path, [0, 1], per_gpu=2)
    got = [leases.acquire(f"a{i}") for i in range(4)]
    assert got == [0, 1, 0, 1]
    with pytest.raises(LeaseError):
        leases.acquire("a4")


def test_a_dead_holders_gpu_is_free_at_once(tmp_path):
    leases = GpuLeases(tmp_path, [0])
    proc = sleeper()
    leases.acquire("a1")
    leases.bind("a1", proc.pid)
    with pytest.raises(LeaseError):
        leases.acquire("a2")
    proc.kill()
    proc.wait()
    assert leases.acquire("a2") == 0


def test_same_agent_keeps_its_lease(tmp_path):
    leases = GpuLeases(tmp_path, [0, 1])
    assert leases.acquire("a1") == leases.acquire("a1")


@pytest.mark.timeout(120)
def test_fleet_leases_a_gpu_per_agent_and_a_kill_frees_it(tmp_path):
    agents = tuple(AgentSpec(f"g{i}", device="cuda", goal="geomean < 1ns") for i in range(2))
    paths = make_session(tmp_path, agents)
    fleet = Fleet(paths, visible_gpus=lambda: 2)
    try:
        fleet.start("g0")
        fleet.start("g1")
        holders = fleet.leases().holders()
        assert sorted(holders.values()) == [["g0"], ["g1"]]
        argv = {n: " ".join(psutil.Process(fleet.pid(n)).cmdline()) for n in ("g0", "g1")}
        assert {argv["g0"].split()[-1], argv["g1"].split()[-1]} == {"cuda:0", "cuda:1"}
        fleet.kill("g0")

        def holders() -> set[str]:
            return {agent for agents in fleet.leases().holders().values() for agent in agents}

        wait_for(lambda: "g0" not in holders(), 10, "the lease freed")
    finally:
        for name in ("g0", "g1"):
            fleet.kill(name)


def test_a_persons_revalidation_takes_a_free_gpu_or_shares_the_candidates_agents(tmp_path):
    agents = tuple(AgentSpec(f"g{i}", device="cuda", goal="geomean < 1ns") for i in range(2))
    fleet = Fleet(make_session(tmp_path, agents), visible_gpus=lambda: 3)
    leases = fleet.leases()
    holders = [sleeper() for _ in range(3)]
    try:
        for name, proc in zip(("g0", "g1"), holders, strict=False):
            leases.acquire(name, proc.pid)
        with fleet.revalidation_device("g1") as device:
            assert device == "cuda:2"  # the free one, leased while the revalidation runs
            assert leases.holders()[2] == [REVALIDATION_HOLDER]
        assert leases.holders()[2] == []
        leases.acquire("g2", holders[2].pid)  # no GPU free now: share the candidate's agent's
        with fleet.revalidation_device("g1") as device:
            assert device == "cuda:1"
        assert leases.holders() == {0: ["g0"], 1: ["g1"], 2: ["g2"]}
    finally:
        for proc in holders:
            proc.kill()
            proc.wait()


def test_a_cpu_session_revalidates_on_the_cpu(tmp_path):
    fleet = Fleet(make_session(tmp_path, (AgentSpec("a1", goal="geomean < 1ns"),)))
    with fleet.revalidation_device("a1") as device:
        assert device == "cpu"
