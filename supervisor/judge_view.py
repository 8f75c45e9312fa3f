"""Rich rendering of judge reports: the per-spec table and live progress for `qrsup test|bench`."""

from __future__ import annotations

import re
from pathlib import Path

from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.schema import ProgressUpdate
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

STATUS_STYLE = {"pass": "green", "skipped": "dim"}
# Terminal control sequences (CSI, OSC, two-byte escapes) and the other control characters but
# newline and tab: what a candidate prints must not clear or recolour the screen around a verdict.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, clearing
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, links
    r"|\x1b[@-_]?"  # two-byte escapes, or a lone ESC
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def terminal_safe(text: str) -> str:
    """`text` without the control sequences a terminal would act on."""
    return _CONTROL.sub("", text)


def display_path(path: str) -> str:
    """A candidate's path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def format_ms(ns: float | None) -> str:
    if ns is None:
        return "—"
    ms = ns / 1e6
    return f"{ms:.4f}" if ms < 0.1 else f"{ms:.3f}" if ms < 100 else f"{ms:.1f}"


class JudgeProgress:
    """A progress bar fed by the referee's progress frames. Where the output is not a terminal
    (a pipe, a file, CI) a bar draws nothing, so a long run there would print nothing for minutes:
    it then writes a plain line to stderr for each phase and each finished spec instead, leaving
    stdout to the report."""

    def __init__(self, console: Console, title: str, lines: Console | None = None) -> None:
        self._title = title
        self._lines = None if console.is_terminal else lines or Console(stderr=True)
        self._phase = ""
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[label]}"),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task(title, total=None, label="starting")

    def __enter__(self) -> JudgeProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(None, None, None)

    def update(self, update: ProgressUpdate) -> None:
        self._write_line(update)
        if update.done is None:
            self._progress.update(self._task, label=f"{update.phase}…")
            return
        label = update.describe()
        self._progress.update(self._task, total=update.total, completed=update.done, label=label)

    def _write_line(self, update: ProgressUpdate) -> None:
        """A phase's start, once, and each spec's outcome with its mean where it was timed."""
        if self._lines is None:
            return
        if update.done is None:
            if update.phase == self._phase:
                return
            self._phase = update.phase
        elif update.status is None:
            return
        mean = f" {format_ms(update.mean_ns)} ms" if update.mean_ns is not None else ""
        line = terminal_safe(f"{self._title}: {update.describe()}{mean}")
        self._lines.print(line, markup=False, highlight=False, soft_wrap=True)


def report_table(report: JudgeReport, baseline: JudgeReport | None = None) -> Table:
    """Spec, status, mean ± err, checks, and speedup against the baseline timed in the same run."""
    title = (
        f"{report.mode} · {report.suite} · {report.device.get('name', '?')} · {report.candidate}"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("spec")
    table.add_column("status")
    timed = report.mode == "bench"
    if timed:
        table.add_column("mean ± err (ms)", justify="right")
        table.add_column("checks", justify="right")
    if baseline is not None:
        table.add_column("baseline (ms)", justify="right")
        table.add_column("speedup", justify="right")
    table.add_column("residual (of 20)", justify="right")
    table.add_column("reason", overflow="fold", max_width=60)
    base_means = baseline.spec_means_ns() if baseline else {}
    for spec in report.specs:
        status = spec["status"]
        style = STATUS_STYLE.get(status, "red")
        row = [str(spec["index"]), spec["label"], f"[{style}]{status}[/]"]
        stats = spec.get("stats")
        if timed:
            mean = f"{format_ms(stats['mean_ns'])} ± {format_ms(stats['err_ns'])}" if stats else "—"
            row += [mean, str(spec.get("checks", 0))]
        if baseline is not None:
            base = base_means.get(spec["index"])
            row.append(format_ms(base))
            row.append(f"{base / stats['mean_ns']:.2f}×" if base and stats else "—")
        residual = spec.get("diagnostics", {}).get("factor_scaled_max")
        row.append(f"{residual:.2f}" if residual is not None else "—")
        row.append(escape(spec_note(spec)))  # a candidate's exception text is not markup
        table.add_row(*row)
    return table


def spec_note(spec: dict) -> str:
    """The first line of a spec's reason; for a pass, whether its timing needed a second
    attempt or do-nothing cycles beside its own, which an honest kernel should rarely need and
    a reader of a pass should see."""
    if spec.get("reason"):
        return spec["reason"].splitlines()[0][:200]
    integrity = spec.get("integrity") or {}
    notes = []
    if first := integrity.get("first_attempt"):
        notes.append(
            f"timed again in a fresh contestant: the first attempt's {first.get('clock', '')} "
            f"accounting found {first['unaccounted_ns'] / 1e6:.3f} ms unaccounted, "
            f"{first['allowed_ns'] / 1e6:.3f} ms allowed"
        )
    if beside := integrity.get("do_nothing_beside"):
        raised = (integrity.get("baseline") or {}).get("fresh_ns", 0.0)
        notes.append(f"judged beside {beside} do-nothing cycles, {raised / 1e6:+.3f} ms")
    return "; ".join(notes)


def summary_lines(report: JudgeReport, baseline: JudgeReport | None = None) -> list[str]:
    """The verdict, the geomean (and the baseline's), and where the judge's time went."""
    lines = []
    verdict_style = "green" if report.passed else "red"
    lines.append(f"verdict: [{verdict_style}]{report.verdict}[/]")
    if report.reason and not report.passed:
        lines.append(f"reason: {escape(report.reason.splitlines()[0])}")
    if report.geomean_ns is not None:
        text = f"geomean: {format_ms(report.geomean_ns)} ms"
        if baseline is not None and baseline.geomean_ns is not None:
            speedup = baseline.geomean_ns / report.geomean_ns
            text += f"   baseline: {format_ms(baseline.geomean_ns)} ms   speedup: {speedup:.2f}×"
        lines.append(text)
    phases = report.phases_s
    if phases:
        shown = ", ".join(f"{k} {v:.1f}s" for k, v in phases.items())
        lines.append(f"judge time: {shown}")
    split = report.calibration.get("split_s")
    if split:
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in split.items() if k != "cycles")
        lines.append(f"calibration: {parts} over {split.get('cycles', 0):.0f} cycles")
    return lines
