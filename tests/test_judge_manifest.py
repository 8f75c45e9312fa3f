"""The judge's own files: hashed when a session starts, checked before each run, and read-only
to coding-agent commands."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pytest
from qrsup.agents.proposal import Proposal
from qrsup.agents.proposers.command_proposer import CommandConfig, CommandProposer
from qrsup.kernels.judge.manifest import changed_files, load_manifest, save_manifest, take_manifest
from qrsup.supervisor.fleet import Fleet, FleetError

from tests.conftest import ROOT
from tests.proposal_contexts import context
from tests.tui_sessions import frozen_session

# A coding agent that, besides its candidate, edits the judge's checker and the workspace.
OVERREACHING_AGENT = """
import sys
from pathlib import Path

candidate, checker, workspace_file = (Path(p) for p in sys.argv[1:4])
candidate.write_text(candidate.read_text() + "# tuned\\n")
for target in (checker, workspace_file):
    try:
        with target.open("a") as sink:
            sink.write("# the checker now passes everything\\n")
        print("EDITED", target.name)
    except OSError as exc:
        print("REFUSED", target.name, type(exc).__name__)
print("HYPOTHESIS: tuned")
"""

JUDGE_AFTER_THE_EDIT = """
import json, subprocess, sys
from pathlib import Path
from qrsup.kernels.judge.manifest import take_manifest
from qrsup.kernels.judge.runner import JudgeConfig, evaluate
from qrsup.kernels.suites import get_suite

manifest = take_manifest()
subprocess.run(sys.argv[1:], check=True)
config = JudgeConfig(suite=get_suite("smoke"), manifest=manifest)
report = evaluate(Path("kernels/candidates/torch_geqrf.py"), config)
print("REPORT=" + json.dumps({"verdict": report.verdict, "reason": report.reason}))
"""


def test_manifest_names_each_changed_file(tmp_path):
    package = tmp_path / "kernels"
    shutil.copytree(ROOT / "kernels", package, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = take_manifest(package)
    assert "checker.py" in manifest and "judge/runner.py" in manifest
    assert changed_files(manifest, package) == []
    (package / "checker.py").write_text("# replaced\n")
    (package / "judge" / "extra.py").write_text("")
    (package / "generators.py").unlink()
    assert changed_files(manifest, package) == ["checker.py", "generators.py", "judge/extra.py"]


def test_judge_run_after_a_coding_agent_edits_the_checker_is_tampered(tmp_path):
    """In a copy of the package (the real one is never touched), a fake coding-agent command
    edits the checker between the session's start and the next judge run."""
    copy = tmp_path / "qrsup"
    no_cache = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "kernels", copy / "kernels", ignore=no_cache)
    edit = [sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('# pass all\\n')"]
    edit.append(str(copy / "kernels" / "checker.py"))
    done = subprocess.run(
        [sys.executable, "-c", JUDGE_AFTER_THE_EDIT, *edit],
        cwd=copy,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("REPORT=")), None)
    assert line, done.stdout + done.stderr
    report = json.loads(line.removeprefix("REPORT="))
    assert report["verdict"] == "tampered"
    assert "the judge's own files changed since the session started: checker.py" in report["reason"]


def test_coding_agent_command_cannot_write_the_workspace_or_the_judge(tmp_path):
    workspace = tmp_path / "workspace"
    work = workspace / "runs" / "s" / "agents" / "a3" / "work"
    work.mkdir(parents=True)
    store = workspace / "runs" / "s" / "store.sqlite"
    store.write_text("original\n")
    judge_copy = tmp_path / "judge" / "checker.py"
    judge_copy.parent.mkdir()
    judge_copy.write_text("original\n")
    script = tmp_path / "agent_cli.py"
    script.write_text(OVERREACHING_AGENT)
    template = (
        " ".join(shlex.quote(s) for s in (sys.executable, str(script), "{candidate_file}"))
        + f" {shlex.quote(str(judge_copy))} {shlex.quote(str(store))}"
    )
    config = CommandConfig(template=template, read_only=(workspace, judge_copy.parent))
    result = CommandProposer(config).propose(context(work))
    assert isinstance(result, Proposal), result
    assert result.source.endswith("# tuned\n")  # its own work dir stays writable
    assert judge_copy.read_text() == "original\n"
    assert store.read_text() == "original\n"
    assert "REFUSED checker.py OSError" in result.transcript
    assert "REFUSED store.sqlite OSError" in result.transcript


def test_starting_a_stopped_session_again_accepts_a_changed_judge_and_says_so(
    tmp_path, monkeypatch
):
    """After an upgrade or an edit, every judge run of the session would be refused; a person
    starting it again (no agent running) takes the judge's files as they are now."""
    paths = frozen_session(tmp_path)
    fleet = Fleet(paths)
    assert fleet.accept_changed_judge() == []  # none taken yet: its first agent takes it
    assert not paths.judge_manifest.exists()
    save_manifest(paths.judge_manifest, {**take_manifest(), "checker.py": "0" * 64})
    monkeypatch.setattr(Fleet, "is_running", lambda self, name: name == "a2")
    assert fleet.accept_changed_judge() == []  # a run under way pauses instead
    assert changed_files(load_manifest(paths.judge_manifest)) == ["checker.py"]
    monkeypatch.undo()
    assert fleet.accept_changed_judge() == ["checker.py"]
    assert changed_files(load_manifest(paths.judge_manifest)) == []
    for name in fleet.names():
        log = paths.agent_log(name).read_text()
        assert "the judge's files changed since the session started (checker.py)" in log
    assert fleet.accept_changed_judge() == []


def test_an_unreadable_manifest_stops_the_launch_with_a_clear_error(tmp_path):
    paths = frozen_session(tmp_path)
    paths.judge_manifest.write_text("{not json")
    with pytest.raises(FleetError, match="cannot read the session's judge manifest"):
        Fleet(paths).accept_changed_judge()
    assert paths.judge_manifest.read_text() == "{not json"  # left for a person to look at
