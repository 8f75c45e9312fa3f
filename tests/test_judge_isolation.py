"""The judge's boundary: a candidate reaches nothing of the judge, as root and as an ordinary user.

CI runs as root; the ordinary-user case runs under a throwaway user the test creates.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from qrsup import kernels
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.sandbox import IsolationSettings

from tests.conftest import CHEATERS, ROOT, judge, processes_whose_command_has
from tests.unprivileged import can_run_as_throwaway_user, run_as_throwaway_user, throwaway_user

pytestmark = pytest.mark.usefixtures("no_leftover_processes")
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the root case needs root")
JUDGE_CODE = [Path(kernels.__file__).parent / "checker.py", ROOT / "kernels/judge/runner.py"]


def _workspace(base: Path) -> list[Path]:
    """Files of a pretend workspace that a candidate must not write: store, git, incumbent, and
    another agent's work."""
    files = [
        base / "runs/s1/store.sqlite",
        base / ".git/HEAD",
        base / "kernels/incumbent.py",
        base / "runs/s1/agents/a2/work/candidate.py",
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("original\n")
    return files


def _with_targets(cheater: str, targets: dict, directory: Path) -> Path:
    source = (CHEATERS / cheater).read_text()
    filled = source.replace("TARGETS: dict = {}", f"TARGETS: dict = {targets!r}", 1)
    assert filled != source
    path = directory / cheater
    path.write_text(filled)
    return path


def _probes(report: JudgeReport) -> dict[str, object]:
    found = re.search(r"PROBES=(\{.*\})", report.candidate_output)
    assert found, report.candidate_output
    return json.loads(found.group(1))


def _assert_nothing_worked(report: JudgeReport, files: list[Path]) -> None:
    probes = _probes(report)
    worked = [name for name, result in probes.items() if result == "WORKED"]
    assert worked == [], probes
    assert probes["ancestors"] == 0  # neither referee nor runner is in its /proc
    assert len(probes) > 10
    assert all(path.read_text() == "original\n" for path in files)
    assert report.verdict == "fail", report.reason  # its zeros, honestly judged
    assert report.specs[0]["gate"] == "factor"


@as_root
def test_candidate_running_as_root_reaches_nothing_of_the_judge(tmp_path):
    files = _workspace(tmp_path / "workspace")
    targets = {"runner": os.getpid(), "append": [str(p) for p in files]}
    targets["open"] = [str(p) for p in JUDGE_CODE]
    report = judge(_with_targets("probes_the_judge.py", targets, tmp_path))
    _assert_nothing_worked(report, files)
    isolation = report.isolation
    assert isolation["complete"], isolation
    assert isolation["user"] not in ("root", "0", "")
    assert {"pid", "mount", "network", "ipc"} <= set(isolation["namespaces"])


@as_root
def test_without_the_boundary_the_same_probes_reach_the_judge(tmp_path):
    """The probes are real: with isolation off, a root candidate reads the runner's memory."""
    scratch = tmp_path / "scratch.txt"
    scratch.write_text("original\n")
    targets = {"runner": os.getpid(), "append": [str(scratch)], "open": []}
    cheater = _with_targets("probes_the_judge.py", targets, tmp_path)
    report = judge(cheater, isolation=IsolationSettings(mode="off"))
    probes = _probes(report)
    assert probes["runner memory"] == "WORKED"
    assert probes["referee memory"] == "WORKED"
    assert probes[f"append {scratch}"] == "WORKED"
    assert report.isolation["complete"] is False


@pytest.mark.skipif(bool(can_run_as_throwaway_user()), reason=can_run_as_throwaway_user())
def test_candidate_of_an_ordinary_user_reaches_nothing_of_the_judge(tmp_path):
    uid, gid = throwaway_user()
    home = tmp_path / "user"
    files = _workspace(home / "workspace")
    targets = {"append": [str(p) for p in files], "open": [str(p) for p in JUDGE_CODE]}
    cheater = _with_targets("probes_the_judge.py", {**targets, "runner": 0}, home)
    for path in [home, *home.rglob("*")]:
        os.chown(path, uid, gid)
    tmp_path.chmod(0o755)
    script = (
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "from tests.conftest import judge\n"
        "path = Path(sys.argv[1])\n"
        "runner = f\"'runner': {os.getpid()}\"\n"
        "path.write_text(path.read_text().replace(\"'runner': 0\", runner))\n"
        "print('REPORT=' + json.dumps(judge(Path(sys.argv[1])).to_dict()))\n"
    )
    # qrsup as this process imports it: the checkout itself (editable), or a copy installed
    # elsewhere, whose folder must be on the path too.
    package = Path(kernels.__file__).resolve().parent.parent
    paths = [ROOT] if package == ROOT else [ROOT, package.parent]
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": ":".join(map(str, paths)), "HOME": str(home)}
    done = run_as_throwaway_user(
        [sys.executable, "-c", script, str(cheater)], [*paths, home], env, timeout_s=240
    )
    found = re.search(r"REPORT=(\{.*\})", done.stdout)
    assert found, done.stdout[-3000:] + done.stderr[-3000:]
    report = JudgeReport.from_dict(json.loads(found.group(1)))
    _assert_nothing_worked(report, files)
    assert report.isolation["complete"], report.isolation
    assert "user" in report.isolation["namespaces"]


def test_fork_bomb_stops_at_the_process_limit_and_leaves_nothing():
    """Forked children share their parent's pages, so the resident-memory watch (which counts
    them once per process) is set out of the way here: the process limit alone stops it."""
    # Threads count too, and torch's pools grow with the cores: 24 stopped a 32-core host's
    # contestant before the candidate loaded.
    most = 32 + 2 * (os.cpu_count() or 1)
    limits = IsolationSettings(max_processes=most)
    report = judge(CHEATERS / "fork_bomb.py", isolation=limits, memory_limit_bytes=64 * 2**30)
    found = re.search(r"FORKED=(\d+)", report.candidate_output)
    assert found, f"{report.verdict}: {report.reason}\n{report.candidate_output}"
    assert int(found.group(1)) < most
    assert "FORK_REFUSED=BlockingIOError" in report.candidate_output
    assert report.verdict == "pass", report.reason
    assert processes_whose_command_has("fork_bomb") == []


def test_disk_filling_writes_stop_at_the_size_limits(tmp_path):
    outside = tmp_path / "beside-the-workspace.bin"
    cheater = _with_targets("fills_the_disk.py", {"outside": str(outside)}, tmp_path)
    limits = IsolationSettings(private_dir_bytes=64 * 2**20, tmp_bytes=32 * 2**20)
    report = judge(cheater, isolation=limits)
    wrote = dict(re.findall(r"WROTE (\w+)=(\d+)", report.candidate_output))
    assert int(wrote["home"]) <= 64 * 2**20
    assert int(wrote["tmp"]) <= 32 * 2**20 and int(wrote["shm"]) <= 32 * 2**20
    assert int(wrote["outside"]) == 0 and not outside.exists()
    assert report.verdict == "pass", report.reason


@as_root
def test_required_isolation_refuses_to_run_without_it():
    """Where the boundary cannot be had (here: no such user to switch to), `required` runs no
    candidate code and says why."""
    report = judge(
        CHEATERS / "fork_bomb.py",
        isolation=IsolationSettings(mode="required", user="no-such-user-here"),
    )
    assert report.verdict == "error"
    assert "isolation is required but incomplete" in report.reason
    assert "no-such-user-here" in report.reason
    assert "FORKED" not in report.candidate_output
