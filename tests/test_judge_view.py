"""The per-spec table `qrsup test` and `qrsup bench` print."""

from __future__ import annotations

import io

from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.schema import ProgressUpdate
from qrsup.supervisor.judge_view import JudgeProgress, report_table, spec_note, summary_lines
from rich.console import Console

RETRIED = {
    "index": 0,
    "kind": "benchmark",
    "label": "2x4096 dense c1",
    "status": "pass",
    "stats": {"mean_ns": 25.4e6, "err_ns": 0.02e6},
    "checks": 3,
    "integrity": {
        "ok": True,
        "first_attempt": {
            "ok": False,
            "clock": "timed-window",
            "unaccounted_ns": 3343407.0,
            "allowed_ns": 2778121.0,
        },
    },
}


def _printed(specs: list[dict]) -> str:
    report = JudgeReport("pass", "", "c.py", "", "qr_v2", "bench", None, specs=specs)
    console = Console(record=True, width=300)
    console.print(report_table(report))
    return console.export_text()


def test_a_pass_that_needed_a_second_attempt_says_so_with_the_first_attempts_figures():
    assert spec_note(RETRIED) == (
        "timed again in a fresh contestant: the first attempt's timed-window accounting found "
        "3.343 ms unaccounted, 2.778 ms allowed"
    )
    assert "timed again in a fresh contestant" in _printed([RETRIED])


def test_a_pass_judged_beside_do_nothing_cycles_says_how_much_longer_they_ran():
    beside = {"do_nothing_beside": 12, "baseline": {"fresh_ns": 2.5e6}}
    retried = {**RETRIED["integrity"], **beside}
    assert spec_note({**RETRIED, "integrity": retried}).endswith(
        "; judged beside 12 do-nothing cycles, +2.500 ms"
    )
    first_time = {"ok": True, "first_attempt": None, **beside}
    assert spec_note({**RETRIED, "integrity": first_time}) == (
        "judged beside 12 do-nothing cycles, +2.500 ms"
    )


def test_a_clean_pass_has_no_note_and_a_failure_shows_its_reason():
    clean = {**RETRIED, "integrity": {"ok": True}}
    failed = {**RETRIED, "index": 1, "status": "fail", "reason": "timing integrity: …\nmore"}
    printed = _printed([clean, failed])
    assert "timed again" not in printed
    assert "timing integrity: …" in printed and "more" not in printed


def test_the_summary_says_where_calibration_went_when_the_report_has_it():
    report = JudgeReport("pass", "", "c.py", "", "qr_v2", "bench", None, specs=[])
    assert not any(line.startswith("calibration") for line in summary_lines(report))
    report.calibration["split_s"] = {
        "hello": 0.0003,
        "prepare": 0.356,
        "inspect": 0.205,
        "cycles": 90.0,
    }
    assert summary_lines(report)[-1] == (
        "calibration: hello 0.00s, prepare 0.36s, inspect 0.20s over 90 cycles"
    )


def _progress_lines(terminal: bool, updates: list[ProgressUpdate]) -> str:
    """What JudgeProgress writes beside a report console that is (or is not) a terminal."""
    report_console = Console(file=io.StringIO(), force_terminal=terminal)
    lines = Console(file=io.StringIO(), width=300)
    with JudgeProgress(report_console, "bench c.py", lines) as progress:
        for update in updates:
            progress.update(update)
    return lines.file.getvalue()


RUN = [
    ProgressUpdate("calibrate"),
    ProgressUpdate("calibrate"),
    ProgressUpdate("load"),
    ProgressUpdate("benchmark", index=0, total=2, label="20x32 dense c1"),
    ProgressUpdate(
        "benchmark", index=0, total=2, label="20x32 dense c1", status="pass", mean_ns=2.5e4
    ),
    ProgressUpdate("benchmark", index=1, total=2, label="\x1b[2J640x512 dense c2"),
    ProgressUpdate("benchmark", index=1, total=2, label="\x1b[2J640x512 dense c2", status="fail"),
]


def test_progress_off_a_terminal_is_a_line_per_phase_and_per_finished_spec():
    """A bar draws nothing into a pipe, so a long run there says where it is in plain lines."""
    assert _progress_lines(False, RUN).splitlines() == [
        "bench c.py: calibrate",
        "bench c.py: load",
        "bench c.py: benchmark 1/2 20x32 dense c1 → pass 0.0250 ms",
        "bench c.py: benchmark 2/2 640x512 dense c2 → fail",
    ]


def test_progress_on_a_terminal_is_the_bar_alone():
    assert _progress_lines(True, RUN) == ""
