"""`qrsup profile`: one benchmark spec of a candidate under the profiler, printed as tables."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qrsup.kernels.executors.base import JudgeExecutor
from qrsup.kernels.executors.ray_executor import RayExecutor
from qrsup.kernels.profiling.candidate import profile_candidate
from qrsup.kernels.profiling.summary import ProfileFailure, ProfileSummary, one_line
from qrsup.kernels.suites import SuiteError, get_suite
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.executor_option import (
    add_executor_options,
    command_executor,
    note_line,
    ray_device,
)
from qrsup.supervisor.judge_command import resolve_device, workspace_isolation
from qrsup.supervisor.judge_view import format_ms
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text


def add_profile_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("profile", help="profile one benchmark spec of a candidate file")
    sub.add_argument("file", type=Path, help="a Python file defining custom_kernel(A)")
    sub.add_argument("--suite", help="qr_v2, smoke, edges, or a suite .toml (default: by device)")
    sub.add_argument("--spec", type=int, default=0, help="benchmark index in the suite (0)")
    sub.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda if present)")
    sub.add_argument("--json", type=Path, dest="json_out", help="write the summary here")
    sub.add_argument("--trace", type=Path, help="keep the full Chrome trace here (.gz: gzipped)")
    sub.add_argument(
        "--ncu", action="store_true", help="add Nsight Compute counters for the top kernels"
    )
    add_executor_options(sub)


def profile_command(args: argparse.Namespace, console: Console) -> int:
    """Profile, print, and exit 0 with a profile, 2 for bad input, 1 when none could be taken."""
    with command_executor(args, note_line) as executor:
        return _profile(args, console, executor)


def _profile(args: argparse.Namespace, console: Console, executor: JudgeExecutor) -> int:
    ray = isinstance(executor, RayExecutor)
    device = ray_device(args.device, executor) if ray else resolve_device(args.device)
    try:
        suite = get_suite(args.suite or ("qr_v2" if device.startswith("cuda") else "smoke"))
    except SuiteError as exc:
        raise UsageError(str(exc)) from None
    rule = "contest" if device.startswith("cuda") else "quick"
    with console.status(f"profiling {args.file.name}, {suite.name} benchmark {args.spec}…"):
        result = profile_candidate(
            args.file,
            suite,
            device,
            args.spec,
            rule=rule,
            ncu=args.ncu,
            trace_out=args.trace,
            isolation=workspace_isolation(args.workspace),
            executor=executor,
        )
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(result.to_dict(), indent=2))
    if isinstance(result, ProfileFailure):
        if result.kind == "usage":
            raise UsageError(one_line(result.reason))
        print(f"qrsup: error: {result.to_text()}", file=sys.stderr)
        return 1
    for renderable in profile_view(result):
        console.print(renderable, highlight=False)
    return 0


def profile_view(summary: ProfileSummary) -> list[Table | Text | str]:
    """The top kernels or ops, the phases, and the launch and memory figures."""
    f = summary.figures
    calls = max(1, f.calls)
    what = "kernel" if f.clock == "device" else "torch op"
    title = (
        f"profile · {summary.suite} benchmark {summary.spec_index} ({summary.spec_label}) · "
        f"{summary.device} · {summary.candidate} · {f.calls} calls"
    )
    top = Table()
    top.add_column(f"{what} (by self time)", overflow="fold", max_width=70)
    top.add_column("ms per call", justify="right")
    top.add_column("share", justify="right")
    top.add_column("calls per call", justify="right")
    for op in f.top:
        share = op.self_us / f.busy_us if f.busy_us else 0.0
        top.add_row(
            Text(op.name), _per_call_ms(op.self_us, calls), f"{share:.1%}", f"{op.calls / calls:g}"
        )
    phases = Table()
    phases.add_column("phase (qrsup.kernels.phases marks)")
    phases.add_column("share", justify="right")
    phases.add_column("ms per call", justify="right")
    total_us = f.busy_us if f.clock == "device" else f.span_us
    for name, share in f.phases.items():
        phases.add_row(Text(name), f"{share:.1%}", _per_call_ms(share * total_us, calls))
    ncu = [_ncu_table(summary)] if summary.ncu else []
    return [Text(title, style="bold"), top, phases, *ncu, *_figure_lines(summary)]


def _figure_lines(summary: ProfileSummary) -> list[str]:
    f = summary.figures
    calls = max(1, f.calls)
    bound = "[red]launch-bound[/]" if f.launch_bound else "[green]not launch-bound[/]"
    if f.clock == "device":
        launches = (
            f"{f.launches / calls:.0f} kernels from {f.launch_calls / calls:.0f} launch calls"
        )
        busy = "device busy"
    else:
        launches = f"{f.launches / calls:.0f} top-level torch ops"
        busy = "in torch ops"
    busy_ms, span_ms = _per_call_ms(f.busy_us, calls), _per_call_ms(f.span_us, calls)
    lines = [
        f"per call: {busy_ms} ms {busy} of {span_ms} ms; idle {f.idle_share:.0%} → {bound}",
        f"launches per call: {launches}; median gap {f.median_gap_us:.1f} us",
    ]
    if f.peak_memory_bytes is not None:
        peak, start = f.peak_memory_bytes / 2**20, (f.start_memory_bytes or 0) / 2**20
        lines.append(f"peak memory: {peak:.1f} MiB allocated ({start:.1f} MiB at start)")
    if summary.ncu_note:
        lines.append(f"ncu: {escape(summary.ncu_note)}")
    if summary.trace_file:
        lines.append(f"trace: {escape(summary.trace_file)}")
    return lines


def _ncu_table(summary: ProfileSummary) -> Table:
    table = Table()
    for column in ("kernel (Nsight Compute)", "launches", "us each", "occupancy", "DRAM", "SM"):
        table.add_column(column, justify="right" if table.columns else "left")
    for c in summary.ncu:
        cells = [c.occupancy_pct, c.dram_pct, c.sm_pct]
        percents = ["—" if v is None else f"{v:.0f}%" for v in cells]
        table.add_row(Text(c.name), str(c.launches), f"{c.duration_us:.1f}", *percents)
    return table


def _per_call_ms(total_us: float, calls: int) -> str:
    return format_ms(1e3 * total_us / calls)
