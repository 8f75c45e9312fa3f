"""`qrsup profile` end to end: a profile taken in the judge's contestant, or one clear refusal."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from qrsup.kernels.profiling.candidate import profile_candidate, trace_path_for, write_latest
from qrsup.kernels.profiling.summary import ProfileFailure, ProfileSummary
from qrsup.kernels.suites import QR_V2, SMOKE
from qrsup.supervisor.cli import build_parser, main
from qrsup.supervisor.profile_command import profile_command
from rich.console import Console

from tests.conftest import CANDIDATES, CHEATERS, FAST_TIMEOUTS

BREAKS_THE_PROFILER = '''
"""Honest QR, but it breaks torch's profiler on import: a profiler that cannot start."""
import torch
import torch.autograd.profiler


def _refuse(*args, **kwargs):
    raise RuntimeError("profiler disabled by the candidate")


torch.autograd.profiler._enable_profiler = _refuse


def custom_kernel(a):
    return torch.geqrf(a)
'''


pytestmark = pytest.mark.usefixtures("no_leftover_processes")


@pytest.fixture(scope="module")
def blocked_wy_profile(tmp_path_factory) -> tuple[ProfileSummary, str, Path]:
    """`qrsup profile` of the blocked-WY candidate on smoke benchmark 1, run once for the module."""
    out = tmp_path_factory.mktemp("profile")
    args = build_parser().parse_args(
        [
            "profile",
            str(CANDIDATES / "blocked_wy.py"),
            "--spec",
            "1",
            "--device",
            "cpu",
            "--ncu",
            "--json",
            str(out / "summary.json"),
            "--trace",
            str(trace_path_for(out / "blocked_wy.py")),
        ]
    )
    screen = io.StringIO()
    assert profile_command(args, Console(file=screen, width=120)) == 0
    summary = ProfileSummary.from_dict(json.loads((out / "summary.json").read_text()))
    return summary, screen.getvalue(), out


def test_blocked_wy_profile_splits_its_time_into_its_phases(blocked_wy_profile):
    summary, _, _ = blocked_wy_profile
    phases = summary.figures.phases
    assert {"panel", "T", "trailing", "other"} <= set(phases)
    assert sum(phases.values()) == pytest.approx(1.0, abs=0.01)
    assert phases["panel"] > phases["other"]


def test_blocked_wy_profile_names_real_torch_ops(blocked_wy_profile):
    summary, screen, _ = blocked_wy_profile
    names = [op.name for op in summary.figures.top]
    assert names and all(name.startswith("aten::") for name in names)
    assert "aten::bmm" in names and names[0] in screen
    assert summary.figures.clock == "cpu" and summary.figures.launches > 0
    assert summary.figures.peak_memory_bytes and summary.figures.peak_memory_bytes > 0


def test_profile_keeps_the_trace_gzipped_and_says_ncu_needs_a_gpu(blocked_wy_profile):
    summary, screen, out = blocked_wy_profile
    kept = trace_path_for(out / "blocked_wy.py")
    with gzip.open(kept) as trace:
        events = json.load(trace)["traceEvents"]
    assert any(e.get("name") == "qrsup:trailing" for e in events)
    assert summary.trace_file == str(kept)
    assert "not measured on the CPU" in summary.ncu_note and "not measured on the CPU" in screen


def test_latest_profile_text_is_written_whole_and_prompt_sized(blocked_wy_profile, tmp_path):
    summary, _, _ = blocked_wy_profile
    latest = tmp_path / "work" / "profiles" / "latest.txt"
    write_latest(summary, latest)
    text = latest.read_text()
    assert text.startswith("profile of blocked_wy.py: smoke benchmark 1")
    assert "phases: panel" in text and len(text) < 2000
    assert [p.name for p in latest.parent.iterdir()] == ["latest.txt"]


def test_candidate_that_fails_the_gates_is_refused_a_profile():
    result = profile_candidate(
        CHEATERS / "returns_input.py", SMOKE, "cpu", 1, timeouts=FAST_TIMEOUTS
    )
    assert isinstance(result, ProfileFailure)
    assert (result.kind, result.verdict) == ("refused", "fail")
    assert "does not pass the gates" in result.reason and "shares memory" in result.reason


def test_profiler_that_cannot_start_leaves_the_verdict_a_pass(tmp_path):
    candidate = tmp_path / "breaks_the_profiler.py"
    candidate.write_text(BREAKS_THE_PROFILER)
    result = profile_candidate(candidate, SMOKE, "cpu", 0, timeouts=FAST_TIMEOUTS)
    assert isinstance(result, ProfileFailure)
    assert (result.kind, result.verdict) == ("profiler", "pass")
    assert "the profiler could not start" in result.reason
    assert "profiler disabled by the candidate" in result.reason


@pytest.mark.parametrize("spec", ["7", "-1"])
def test_unknown_spec_index_is_one_line_and_exit_2(capsys, spec):
    args = ["profile", str(CANDIDATES / "blocked_wy.py"), "--spec", spec, "--device", "cpu"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err == f"qrsup: error: unknown spec index {spec}: smoke has benchmarks 0–6"


def test_cli_with_the_profile_command_loads_without_textual_or_torch():
    code = (
        "import sys; sys.modules['textual'] = None; import qrsup.supervisor.cli; "
        "print(sorted(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert "'torch'" not in loaded.stdout and "'qrsup.supervisor.profile_command'" in loaded.stdout


@pytest.mark.gpu
def test_fast_kernel_profile_on_qr_v2_spec_3_names_its_triton_kernels():
    result = profile_candidate(CANDIDATES / "fast_geqrf.py", QR_V2, "cuda", 3, rule="contest")
    assert isinstance(result, ProfileSummary), result.to_text()
    names = [op.name for op in result.figures.top]
    assert result.figures.clock == "device"
    assert any(name.startswith("qr_") for name in names), names
