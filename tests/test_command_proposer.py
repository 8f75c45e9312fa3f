"""The command proposer with small local scripts standing in for a coding-agent CLI."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import psutil
import pytest
from qrsup.agents.proposal import Proposal, ProposalFailure
from qrsup.agents.proposers.command_proposer import CommandConfig, CommandProposer

from tests.proposal_contexts import PARENT_SOURCE, context

EDITS_THE_CANDIDATE = """
import sys
from pathlib import Path

prompt, candidate, hypothesis = (Path(p) for p in sys.argv[1:4])
assert "PANEL_WIDTH = 32" in prompt.read_text()
candidate.write_text(candidate.read_text().replace("PANEL_WIDTH = 32", "PANEL_WIDTH = 48"))
hypothesis.write_text("48-column panels balance the chain and the update\\n")
print("edited", candidate.name)
print("FAMILY: blocked-wy-48")
"""

HANGS_WITH_A_CHILD = """
import subprocess, sys, time
from pathlib import Path

child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
Path(sys.argv[1]).write_text(str(child.pid))
print("thinking...", flush=True)
time.sleep(600)
"""

PRINTS_ONLY = """
print("I looked at it and changed nothing.")
print("HYPOTHESIS: nothing to do")
"""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def script_command(tmp_path: Path, body: str, arguments: str) -> str:
    script = tmp_path / "agent_cli.py"
    script.write_text(body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {arguments}"


def propose(tmp_path: Path, template: str, timeout_s: float = 30.0):
    proposer = CommandProposer(CommandConfig(template=template, timeout_s=timeout_s))
    return proposer.propose(context(tmp_path / "work"))


def test_file_the_command_leaves_is_the_candidate_with_its_hypothesis_and_output(tmp_path):
    template = script_command(
        tmp_path, EDITS_THE_CANDIDATE, "{prompt_file} {candidate_file} {hypothesis_file}"
    )
    result = propose(tmp_path, template)
    assert isinstance(result, Proposal), result
    assert result.source == PARENT_SOURCE.replace("PANEL_WIDTH = 32", "PANEL_WIDTH = 48")
    assert result.hypothesis == "48-column panels balance the chain and the update"
    assert result.family == "blocked-wy-48"
    assert "edited candidate.py" in result.transcript and "exit 0" in result.transcript


def test_prompt_file_holds_the_request_and_the_file_task(tmp_path):
    template = script_command(
        tmp_path, EDITS_THE_CANDIDATE, "{prompt_file} {candidate_file} {hypothesis_file}"
    )
    propose(tmp_path, template)
    prompt = (tmp_path / "work" / "prompt.md").read_text()
    assert "Beam discipline" in prompt and PARENT_SOURCE.strip() in prompt
    assert f"Edit `{tmp_path / 'work' / 'candidate.py'}` in place" in prompt


def test_command_that_hangs_is_killed_with_its_children_at_the_timeout(tmp_path):
    pid_file = tmp_path / "child.pid"
    template = script_command(tmp_path, HANGS_WITH_A_CHILD, shlex.quote(str(pid_file)))
    started = time.monotonic()
    result = propose(tmp_path, template, timeout_s=1.5)
    assert time.monotonic() - started < 10
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("timeout", False)
    assert "thinking..." in result.transcript
    assert not alive(int(pid_file.read_text()))
    assert [p for p in psutil.Process().children(recursive=True) if alive(p.pid)] == []


def test_command_that_changes_nothing_is_a_failed_proposal_with_its_last_words(tmp_path):
    result = propose(tmp_path, script_command(tmp_path, PRINTS_ONLY, ""))
    assert isinstance(result, ProposalFailure)
    assert (result.kind, result.pause) == ("no_apply", False)
    assert "status 0" in result.reason and "nothing to do" in result.reason


def test_missing_executable_pauses_the_agent(tmp_path):
    result = propose(tmp_path, "no-such-coding-agent-cli exec {prompt_file}")
    assert isinstance(result, ProposalFailure) and (result.kind, result.pause) == ("endpoint", True)
    assert "no-such-coding-agent-cli" in result.reason


@pytest.mark.parametrize("template", ["codex exec {promt_file}", "codex 'unbalanced", ""])
def test_bad_template_pauses_with_the_reason(tmp_path, template):
    result = propose(tmp_path, template)
    assert isinstance(result, ProposalFailure) and (result.kind, result.pause) == ("config", True)
