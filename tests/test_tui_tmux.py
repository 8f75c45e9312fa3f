"""End to end in a real terminal: `qrsup` in tmux, keys by send-keys, the screen by capture-pane."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import uuid

import pytest
from qrsup.agents import inbox
from qrsup.agents.session import AgentSpec
from qrsup.supervisor.fleet import Fleet

from tests.loop_helpers import make_session, wait_for

pytestmark = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.timeout(300),
]


class Terminal:
    """One detached tmux session of a fixed size running one command."""

    def __init__(self, command: str, width: int = 100, height: int = 30) -> None:
        self.name = f"qrsup-test-{uuid.uuid4().hex[:8]}"
        self._tmux("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height),
                   command)  # fmt: skip

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.name, *keys)

    def text(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.name, "-l", text)

    def shows(self, text: str, timeout_s: float = 30) -> str:
        return str(wait_for(lambda: text in self.screen() and self.screen(), timeout_s, text))

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def test_qrsup_in_a_terminal_shows_agents_steers_and_quits_leaving_them_running(tmp_path):
    roles = (("a1", "exploit"), ("a2", "near-miss"))
    agents = tuple(AgentSpec(name, role=role, max_seconds=300) for name, role in roles)
    paths = make_session(tmp_path, agents, name="e2e")
    workspace = paths.root.parent.parent
    qrsup = f"{shlex.quote(sys.executable)} -m qrsup.supervisor.cli"
    command = f"{qrsup} --workspace {shlex.quote(str(workspace))} --session e2e; sleep 60"
    terminal = Terminal(f"env TERM=xterm-256color sh -c {shlex.quote(command)}")
    fleet = Fleet(paths)
    try:
        terminal.shows("agents · session e2e")
        terminal.shows("near-miss")
        terminal.keys("2")
        terminal.shows("log · a2")
        terminal.keys("s")
        terminal.shows("Steering for a2")
        terminal.text("steer from tmux")
        terminal.keys("Enter")
        terminal.shows("queued")
        sent = [m.text for _, m in inbox.pending(paths.inbox("a2"))]
        sent += [p.read_text() for p in (paths.inbox("a2") / "consumed").glob("*.json")]
        assert any("steer from tmux" in text for text in sent)
        terminal.keys("?")
        terminal.shows("qrsup keys")
        terminal.keys("Escape")
        wait_for(lambda: "qrsup keys" not in terminal.screen(), 10, "the help to close")
        terminal.keys("q")
        terminal.shows("still running")
        terminal.keys("l")
        terminal.shows("agents left running")
        assert fleet.is_running("a1") and fleet.is_running("a2")
    finally:
        terminal.close()
        for name in fleet.names():
            fleet.kill(name)
