"""Timing integrity charges a candidate for its own time alone: not for the referee reading the
contestant's threads, and not for a host that was busy while the do-nothing cycle was
calibrated. A spec that fails against its baseline is timed once more in a new contestant,
calibrated afresh; work hidden in every process still fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from qrsup.kernels.judge.sandbox import IsolationSettings

from tests.conftest import CHEATERS, judge

HONEST = Path(__file__).resolve().parent / "candidates"


def test_an_honest_candidate_with_many_idle_threads_passes_timing_integrity():
    """Reading 200 threads' times between the exchanges cost the referee 13 ms a cycle here,
    and was charged to the candidate: it failed twice, 14.7 ms against 7.5 allowed."""
    report = judge(HONEST / "keeps_many_idle_threads.py", "bench")
    assert report.verdict == "pass", report.reason
    integrity = report.specs[-1]["integrity"]
    assert integrity["first_attempt"] is None, integrity["first_attempt"]
    assert integrity["bookkeeping_ns"] > 0


@pytest.mark.e2e  # a spec timed twice, in two contestants: over 8 s here
def test_a_spec_that_fails_only_in_its_first_contestant_passes_when_timed_afresh():
    report = judge(
        HONEST / "stalls_its_first_process.py", "bench", isolation=IsolationSettings(mode="off")
    )
    assert report.verdict == "pass", report.reason
    integrity = report.specs[-1]["integrity"]
    first = integrity["first_attempt"]
    # Its stalling thread runs outside the window, which the threads' accounting sees first.
    assert first is not None and first["ok"] is False
    assert first["clock"] in ("wall-clock", "threads")
    assert integrity["ok"] is True
    assert integrity["do_nothing_beside"] > 0  # judged beside do-nothing cycles of its process
    assert report.phases_s["recalibrate"] > 0
    imports = [line for line in report.candidate_output.splitlines() if "imported" in line]
    assert imports == ["imported; first process: True", "imported; first process: False"]


def test_a_candidate_that_stalls_the_harness_after_its_window_fails_on_both_attempts():
    """Its timer thread holds the interpreter's lock while the harness inspects the outputs: the
    wall clock over the cycle sees the stall, and the thread's own run outside the window is seen
    as that (candidate_threads.py), whichever accounting names the failure."""
    report = judge(CHEATERS / "stalls_the_harness.py", "bench")
    assert report.verdict == "fail", report.reason
    spec = report.specs[-1]
    assert spec["gate"] == "integrity"
    assert spec["integrity"]["first_attempt"]["clock"] in ("wall-clock", "threads")
    assert re.search(r"wall-clock accounting|own threads ran", report.reason), report.reason
    assert re.search(r"beyond the do-nothing cycles: prepare [+-]\d", report.reason), report.reason
