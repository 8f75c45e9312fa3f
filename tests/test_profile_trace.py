"""Reading profiler traces and ncu output: phase shares, launches, gaps, and forged input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from qrsup.kernels.profiling import ncu
from qrsup.kernels.profiling.ncu import NcuError, parse_ncu_csv
from qrsup.kernels.profiling.summary import ProfileSummary, profile_from_dict
from qrsup.kernels.profiling.timeline import summarize
from qrsup.kernels.profiling.trace import CALL_RANGE, PHASE_PREFIX, TraceError, load_trace

HOST = {"pid": 1, "tid": 1}


def span(cat: str, name: str, ts: float, dur: float, **args: object) -> dict:
    where = {"pid": 0, "tid": 7} if cat == "kernel" else HOST
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **where, "args": args}


def annotation(name: str, ts: float, dur: float) -> dict:
    return span("user_annotation", name, ts, dur)


def memory(total: int, change: int, device_type: int) -> dict:
    args = {"Total Allocated": total, "Bytes": change, "Device Type": device_type}
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "ts": 0,
        **HOST,
        "args": args,
    }


def write(tmp_path: Path, events: list) -> Path:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def device_trace() -> list[dict]:
    """One call: a panel phase launching two kernels, a graph launch outside any phase."""
    return [
        annotation(CALL_RANGE, 0, 100),
        annotation(PHASE_PREFIX + "panel", 10, 30),
        span("cuda_driver", "cuLaunchKernel", 12, 2, correlation=1),
        span("cuda_driver", "cuLaunchKernel", 20, 2, correlation=2),
        span("cuda_runtime", "cudaGraphLaunch", 50, 5, correlation=3),
        span("kernel", "qr_panel_kernel", 30, 10, correlation=1),
        span("kernel", "qr_panel_kernel", 44, 10, correlation=2),
        span("kernel", "qr_update_kernel", 60, 20, correlation=3),
        span("kernel", "qr_update_kernel", 80, 20, correlation=3),
        memory(1000, 1000, 1),
        memory(5000, 4000, 1),
        memory(100, 100, 0),
    ]


def test_device_time_is_charged_to_the_phase_that_launched_it(tmp_path):
    figures = summarize(load_trace(write(tmp_path, device_trace())), "device")
    assert figures.phases == pytest.approx({"other": 40 / 60, "panel": 20 / 60})
    assert [(op.name, op.self_us, op.calls) for op in figures.top] == [
        ("qr_update_kernel", 40.0, 2),
        ("qr_panel_kernel", 20.0, 2),
    ]
    assert (figures.launches, figures.launch_calls, figures.calls) == (4, 3, 1)
    assert figures.busy_us == 60 and figures.span_us == 70
    assert figures.median_gap_us == 5  # gaps of 4 and 6 us between kernels
    assert figures.peak_memory_bytes == 5000 and figures.start_memory_bytes == 0
    assert not figures.launch_bound


def test_cpu_time_is_charged_to_the_innermost_phase_and_the_rest_is_other(tmp_path):
    events = [
        annotation(CALL_RANGE, 0, 100),
        annotation(PHASE_PREFIX + "trailing", 10, 60),
        annotation(PHASE_PREFIX + "T", 20, 20),
        span("cpu_op", "aten::mm", 20, 40),
        span("cpu_op", "aten::copy_", 30, 10),
        span("cpu_op", "aten::add", 70, 10),
        span("cpu_op", "aten::outside_the_calls", 200, 10),
    ]
    figures = summarize(load_trace(write(tmp_path, events)), "cpu")
    assert figures.phases == pytest.approx({"other": 0.4, "trailing": 0.4, "T": 0.2})
    assert sum(figures.phases.values()) == pytest.approx(1.0)
    assert {op.name: op.self_us for op in figures.top} == {
        "aten::mm": 30.0,
        "aten::copy_": 10.0,
        "aten::add": 10.0,
    }
    assert (figures.launches, figures.busy_us, figures.span_us) == (2, 50.0, 100.0)
    assert figures.launch_bound  # half the call ran outside any torch op


def test_forged_events_are_skipped_and_overlapping_phases_cannot_pass_100_percent(tmp_path):
    events = [
        annotation(CALL_RANGE, 0, 100),
        annotation(PHASE_PREFIX + "a", 0, 100),
        {**annotation(PHASE_PREFIX + "b", 0, 100), "tid": 2, "pid": 2},  # another thread
        annotation(PHASE_PREFIX + "c", 50, 500),  # overruns the call
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::nan", "ts": math.inf, "dur": 1},
        "not an event",
        {"name": "[memory]", "args": {"Total Allocated": "lots"}},
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}).replace("Infinity", "1e999"))
    figures = summarize(load_trace(path), "cpu")
    assert sum(figures.phases.values()) == pytest.approx(1.0)
    assert all(0.0 <= share <= 1.0 for share in figures.phases.values())
    assert "b" not in figures.phases and figures.top == ()
    assert figures.peak_memory_bytes is None


@pytest.mark.parametrize(
    ("content", "clock", "message"),
    [
        (None, "cpu", "wrote no trace"),
        ("{not json", "cpu", "not JSON"),
        ('{"traceEvents": 3}', "cpu", "no traceEvents"),
        (json.dumps({"traceEvents": [span("cpu_op", "aten::mm", 0, 1)]}), "cpu", "no profiled"),
        (json.dumps({"traceEvents": [annotation(CALL_RANGE, 0, 1)]}), "device", "no GPU kernels"),
    ],
)
def test_unreadable_traces_give_a_reason(tmp_path, content, clock, message):
    path = tmp_path / "trace.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(TraceError, match=message):
        summarize(load_trace(path), clock)


def test_summary_text_is_prompt_sized_and_round_trips(tmp_path):
    figures = summarize(load_trace(write(tmp_path, device_trace())), "device")
    summary = ProfileSummary("fast.py", "qr_v2", 3, "640x512 dense c2", "cuda H200", figures)
    text = summary.to_text()
    assert "panel 33%" in text and "qr_update_kernel" in text and "4 kernels from 3 calls" in text
    assert len(text) < 1500
    assert profile_from_dict(json.loads(json.dumps(summary.to_dict()))) == summary


NCU_HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Section Name","Metric Name","Metric Unit","Metric Value"'
)


def ncu_row(launch: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return f'"{launch}","9","python","h","{kernel}","1","7","Command line profiler metrics",' + (
        f'"{metric}","{unit}","{value}"'
    )


def test_ncu_counters_are_averaged_per_kernel_and_ranked_by_total_time():
    rows = [NCU_HEADER, "==PROF== Connected to process 9"]
    for launch, kernel, duration, occupancy in (
        (0, "qr_panel_kernel", "2,000", "40"),
        (1, "qr_update_kernel", "30,000", "80"),
        (2, "qr_panel_kernel", "4,000", "60"),
    ):
        rows.append(ncu_row(launch, kernel, ncu.METRICS["duration"], "nsecond", duration))
        rows.append(ncu_row(launch, kernel, ncu.METRICS["occupancy_pct"], "%", occupancy))
        rows.append(ncu_row(launch, kernel, ncu.METRICS["dram_pct"], "%", "n/a"))
    update, panel = parse_ncu_csv("\n".join(rows))
    assert (update.name, update.launches, update.duration_us) == ("qr_update_kernel", 1, 30.0)
    assert (panel.launches, panel.duration_us, panel.occupancy_pct) == (2, 3.0, 50.0)
    assert panel.dram_pct is None and panel.sm_pct is None


def test_ncu_errors_and_a_missing_ncu_become_reasons(monkeypatch, tmp_path):
    denied = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access counters"
    with pytest.raises(NcuError, match="ERR_NVGPUCTRPERM"):
        parse_ncu_csv(f"==PROF== Connected to process 9\n{denied}\n")
    with pytest.raises(NcuError, match="no kernel inside"):
        parse_ncu_csv(NCU_HEADER + "\n")
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    with pytest.raises(NcuError, match="not installed"):
        ncu.measure({}, tmp_path)
