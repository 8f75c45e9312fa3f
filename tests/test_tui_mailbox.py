"""What the watchers hand the screen: facts merged before a frame, log lines made ready off the
screen's thread, and modules that import without Textual."""

from __future__ import annotations

import subprocess
import sys

from qrsup.supervisor.board import Board
from qrsup.supervisor.gpu_stats import GpuReport
from qrsup.supervisor.log_lines import LogLine, prepare
from qrsup.supervisor.mailbox import Mailbox, coalesce
from qrsup.supervisor.messages import AgentCrashed, AgentsSampled, BoardRead, LogRead, ProfileRead


def _log(agent: str, *texts: str, fresh: bool = False) -> LogRead:
    return LogRead(agent, prepare(texts), fresh)


def _texts(fact: LogRead) -> list[str]:
    return [line.text for line in fact.lines]


def test_a_later_snapshot_supersedes_an_earlier_one_and_every_event_stays_in_order():
    first, second = BoardRead(Board(incumbent_id="c-1")), BoardRead(Board(incumbent_id="c-2"))
    sample = AgentsSampled((), {}, GpuReport())
    crash_a, crash_b = AgentCrashed("a1", "boom"), AgentCrashed("a2", "bang")
    merged = coalesce([first, crash_a, sample, second, crash_b, sample])
    assert merged == [crash_a, second, crash_b, sample]


def test_log_batches_of_one_agent_join_and_a_fresh_tail_replaces_what_came_before():
    merged = coalesce([_log("a1", "1"), _log("a2", "x"), _log("a1", "2", "3")])
    assert [(f.agent, _texts(f)) for f in merged] == [("a2", ["x"]), ("a1", ["1", "2", "3"])]
    merged = coalesce([_log("a1", "old"), _log("a1", "tail", fresh=True), _log("a1", "new")])
    assert [(_texts(f), f.fresh) for f in merged] == [(["tail", "new"], True)]


def test_profiles_are_superseded_per_agent():
    facts = [ProfileRead("a1", "p1"), ProfileRead("a2", "q"), ProfileRead("a1", "p2")]
    assert coalesce(facts) == [ProfileRead("a2", "q"), ProfileRead("a1", "p2")]


def test_the_mailbox_wakes_the_screen_once_until_the_screen_drains_it():
    wakes: list[None] = []
    mailbox = Mailbox(lambda: wakes.append(None))
    for number in range(50):
        mailbox.put(BoardRead(Board(incumbent_id=f"c-{number}")))
    assert len(wakes) == 1
    assert mailbox.drain() == [BoardRead(Board(incumbent_id="c-49"))]
    assert mailbox.drain() == []
    mailbox.put(AgentCrashed("a1", ""))
    assert len(wakes) == 2


def test_log_lines_are_cleaned_and_measured_before_they_reach_the_screen():
    assert prepare(["a\tb", "bell\x07 esc\x1b[2J", "宽字"]) == (
        LogLine("a       b", 9),
        LogLine("bell\ufffd esc\ufffd[2J", 13),
        LogLine("宽字", 4),
    )


def test_the_watchers_and_their_facts_import_without_textual():
    """Facts are plain dataclasses: nothing the watcher threads use needs the UI toolkit."""
    blocker = (
        "import sys\n"
        "class Blocked:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.partition('.')[0] == 'textual':\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Blocked())\n"
        "import qrsup.supervisor.watchers, qrsup.supervisor.mailbox, qrsup.supervisor.board\n"
    )
    result = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
