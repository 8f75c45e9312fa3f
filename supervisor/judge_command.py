"""`qrsup test` and `qrsup bench`: judge one file and print the per-spec table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from qrsup.agents.settings import SettingsError, load_settings
from qrsup.kernels.executors.base import JudgeExecutor
from qrsup.kernels.executors.ray_executor import RayExecutor
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.judge.triton_cache import per_source, user_cache_root
from qrsup.kernels.suites import SuiteError, get_suite
from qrsup.kernels.timing import STOPPING_RULES
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.executor_option import (
    add_executor_options,
    command_executor,
    note_line,
    placement_line,
    ray_device,
)
from qrsup.supervisor.judge_view import JudgeProgress, report_table, summary_lines, terminal_safe
from rich.console import Console

BASELINE_CANDIDATE = Path(__file__).resolve().parent.parent / "kernels/candidates/torch_geqrf.py"


def add_judge_commands(commands: argparse._SubParsersAction) -> None:
    for name, help_text in (
        ("test", "check a candidate file against a suite's test specs"),
        ("bench", "check and time a candidate file on a suite's benchmark specs"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("file", type=Path, help="a Python file defining custom_kernel(A)")
        sub.add_argument(
            "--suite", help="qr_v2, smoke, edges, or a suite .toml (default: by device)"
        )
        sub.add_argument("--seed", help="secret seed mixed into every spec's seed")
        sub.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda if present)")
        sub.add_argument("--json", type=Path, dest="json_out", help="write the report here")
        add_executor_options(sub)
        sub.add_argument(
            "--recheck",
            choices=("sampled", "all"),
            default="sampled",
            help="re-check a random sample of timed outputs, or all of them",
        )
        if name == "test":
            sub.add_argument(
                "--hardening",
                action="store_true",
                help="also the suite's hardening cases, which a promotion's revalidation runs",
            )
        if name == "bench":
            sub.add_argument(
                "--baseline", action="store_true", help="also time torch.geqrf in the same run"
            )
            sub.add_argument(
                "--rule",
                choices=sorted(STOPPING_RULES),
                default=None,
                help="stopping rule (default: contest on CUDA, quick on the CPU)",
            )


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_device(requested: str | None) -> str:
    if requested is None:
        return "cuda" if cuda_available() else "cpu"
    if requested == "cpu":
        return "cpu"
    if requested == "cuda" or (requested.startswith("cuda:") and requested[5:].isdigit()):
        if not cuda_available():
            raise UsageError(f"--device {requested} asked for, but no CUDA device is available")
        return requested
    raise UsageError(f"--device must be cpu, cuda or cuda:N, got {requested!r}")


def workspace_isolation(workspace: Path) -> IsolationSettings:
    """The judge's boundary as the workspace's qrsup.toml sets it (the defaults without one)."""
    try:
        return load_settings(workspace).judge
    except SettingsError as exc:
        raise UsageError(str(exc)) from None


def parse_seed(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--seed must be an integer, got {text!r}") from None


def judge_command(args: argparse.Namespace, console: Console) -> int:
    with command_executor(args, note_line) as executor:
        return _judge(args, console, executor)


def json_destination(path: Path | None) -> None:
    """Make sure `--json PATH` can be written before any judging: a run of minutes must not
    end in a traceback over a missing folder. Its folder is made, as `export -o` does."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"--json: {path} is a directory; name a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--json: cannot make the folder {path.parent}: {exc.strerror}") from None


def _judge(args: argparse.Namespace, console: Console, executor: JudgeExecutor) -> int:
    json_destination(args.json_out)
    ray = isinstance(executor, RayExecutor)
    device = ray_device(args.device, executor) if ray else resolve_device(args.device)
    seed = parse_seed(args.seed)
    suite_name = args.suite or ("qr_v2" if device.startswith("cuda") else "smoke")
    try:
        suite = get_suite(suite_name)
    except SuiteError as exc:
        raise UsageError(str(exc)) from None
    if getattr(args, "hardening", False):
        if not suite.hardening:
            raise UsageError(f"--hardening: the suite '{suite.name}' names no hardening cases")
        suite = suite.hardened()
    mode = args.command
    rule = getattr(args, "rule", None) or ("contest" if device.startswith("cuda") else "quick")
    config = JudgeConfig(
        suite=suite,
        mode=mode,
        device=device,
        seed=seed,
        rule=rule,
        recheck=args.recheck,
        isolation=workspace_isolation(args.workspace),
        triton_cache=per_source(user_cache_root())(args.file) if args.file.is_file() else None,
    )
    title = f"{mode} {args.file.name}"
    report = _judge_with_progress(executor, args.file, config, console, title)
    if report.verdict == "rejected":
        print(f"qrsup: error: {report.reason}", file=sys.stderr)
        return 2
    baseline = None
    if getattr(args, "baseline", False):
        title = "baseline torch.geqrf"
        baseline = _judge_with_progress(executor, BASELINE_CANDIDATE, config, console, title)
    if args.json_out is not None:  # first: what the run found is kept whatever the printing does
        payload = {"report": report.to_dict()}
        if baseline is not None:
            payload["baseline"] = baseline.to_dict()
        args.json_out.write_text(json.dumps(payload, indent=2))
    if warning := report.isolation_warning():
        print(f"qrsup: {warning}", file=sys.stderr)
    console.print(report_table(report, baseline))
    for line in summary_lines(report, baseline):
        console.print(line, highlight=False)
    if report.placement:
        console.print(placement_line(report.placement), highlight=False, markup=False)
    if report.candidate_output.strip() and not report.passed:
        console.print("[dim]candidate output (tail):[/]")
        output = terminal_safe(report.candidate_output[-2000:])
        console.print(output, markup=False, highlight=False)
    return 0 if report.passed and (baseline is None or baseline.passed) else 1


def _judge_with_progress(
    executor: JudgeExecutor, file: Path, config: JudgeConfig, console: Console, title: str
) -> JudgeReport:
    with JudgeProgress(console, title) as progress:
        return executor.evaluate(file, config, on_progress=progress.update)
