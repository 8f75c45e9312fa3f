"""The entry for callers: profile one benchmark spec of a candidate in the judge, keep the results.

    result = profile_candidate(path, suite, device, spec_index, trace_out=trace_path_for(path))
    write_latest(result, run_paths.profile(agent))   # what the TUI shows live
    store_it(result.to_dict())                          # with the evaluation

`result` is a `ProfileSummary` or a `ProfileFailure`; `result.to_text()` is the prompt-sized text.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from qrsup.kernels.executors.base import LOCAL, JudgeExecutor
from qrsup.kernels.judge.runner import JudgeConfig, Timeouts
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.profiling.ncu import NCU_TIMEOUT_S
from qrsup.kernels.profiling.summary import ProfileFailure, ProfileSummary, one_line
from qrsup.kernels.profiling.trace import TRACE_FILE
from qrsup.kernels.schema import Progress
from qrsup.kernels.suites import Spec, Suite


def profile_candidate(
    path: Path,
    suite: Suite,
    device: str,
    spec_index: int,
    *,
    rule: str = "quick",
    ncu: bool = False,
    trace_out: Path | None = None,
    timeouts: Timeouts | None = None,
    on_progress: Progress | None = None,
    isolation: IsolationSettings | None = None,
    triton_cache: Path | None = None,
    executor: JudgeExecutor = LOCAL,
) -> ProfileSummary | ProfileFailure:
    """Profile benchmark `spec_index` of `suite`; never raises for anything the candidate does.

    `trace_out` keeps the full Chrome trace there (gzipped if it ends in .gz); `rule` sets how
    many inputs are profiled; `executor` says where the run executes (this host by default).
    """
    if not 0 <= spec_index < len(suite.benchmarks):
        last = len(suite.benchmarks) - 1
        known = f"0–{last}" if last >= 0 else "none"
        return ProfileFailure(
            "usage", f"unknown spec index {spec_index}: {suite.name} has benchmarks {known}"
        )
    spec = suite.benchmarks[spec_index]
    config = JudgeConfig(
        suite=Suite(name=suite.name, tests=(), benchmarks=(spec,)),
        mode="bench",
        device=device,
        rule=rule,
        timeouts=timeouts or Timeouts(),
        isolation=isolation or IsolationSettings(),
        triton_cache=triton_cache,
    )
    if ncu:
        budget = config.total_timeout_s() + NCU_TIMEOUT_S
        config = replace(config, timeouts=replace(config.timeouts, total=budget))
    if trace_out is not None:
        trace_out.unlink(missing_ok=True)  # a trace kept beside the candidate is always this run's
    data = executor.run_judge(
        path,
        config,
        on_progress,
        extra={"profile": {"index": spec_index, "ncu": ncu}},
        keep={TRACE_FILE: trace_out} if trace_out is not None else None,
    )
    return _result(data, spec_index, spec, trace_out)


def trace_path_for(candidate: Path) -> Path:
    """Where a candidate's full trace is kept: next to it, gzipped (Perfetto reads it so)."""
    return candidate.with_suffix(".trace.json.gz")


def write_latest(result: ProfileSummary | ProfileFailure, path: Path) -> None:
    """Replace the text at `path` atomically, so a watcher never reads half a profile."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(result.to_text() + "\n")
    temp.replace(path)


def _result(
    data: dict, index: int, spec: Spec, trace_out: Path | None
) -> ProfileSummary | ProfileFailure:
    verdict = data["verdict"]
    if verdict == "rejected":
        return ProfileFailure("usage", data["reason"], verdict)
    if verdict != "pass":
        specs = data.get("specs") or [{}]
        why = one_line(specs[0].get("reason") or data.get("reason") or "")
        reason = f"benchmark {index} ({spec.label}) does not pass the gates ({verdict}): {why}"
        return ProfileFailure("refused", reason, verdict)
    profile = data.get("profile")
    if profile is None:
        return ProfileFailure(
            "profiler", data.get("profile_error") or "no profile came back", verdict
        )
    kept = trace_out is not None and trace_out.is_file()
    return ProfileSummary.from_dict(
        {
            **profile,
            "candidate": Path(data["candidate"]).name,
            "suite": data["suite"],
            "spec_index": index,
            "spec_label": spec.label,
            "device": " ".join(data.get("device", {}).values()) or "?",
            "trace_file": str(trace_out) if kept else "",
        }
    )
