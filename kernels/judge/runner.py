"""The caller's side of the judge: static checks, then a referee process group, then a report.

The referee gets its config and a fresh HMAC key on stdin and reports over a pipe only it holds;
frames that fail the signature, a referee that dies, or one that overruns the deadline all become
verdicts here. Whatever the candidate left running is killed before `evaluate` returns.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from qrsup.kernels.judge.device_turns import DeviceTurns, turn_file
from qrsup.kernels.judge.environment import judged_environment
from qrsup.kernels.judge.manifest import changed_files
from qrsup.kernels.judge.processes import (
    become_subreaper,
    descendants,
    kill_processes,
    kill_tree,
    make_undumpable,
    marked_children,
)
from qrsup.kernels.judge.protocol import (
    ChannelClosed,
    ChannelTimeout,
    LineReader,
    ProtocolError,
    verify,
)
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.judge.static_checks import CONTEST_FORBIDDEN_WORDS, check_candidate_file
from qrsup.kernels.schema import Progress, ProgressUpdate
from qrsup.kernels.suites import Spec, Suite
from qrsup.kernels.timing import STOPPING_RULES, inputs_per_repetition

OUTPUT_HEAD_CHARS = 4000
OUTPUT_TAIL_CHARS = 12000
RUN_MARK = "QRSUP_JUDGE_RUN"  # an environment variable naming the judge run a process belongs to
MIN_FILE_LIMIT_BYTES = 256 * 2**20  # room for the candidate's log and a profile trace
TAMPERED_REASON = "the judge's own files changed since the session started"


@dataclass(frozen=True)
class Timeouts:
    """Per-phase limits in seconds; `total` bounds the whole judge run."""

    prepare: float = 120.0
    load: float = 180.0
    first_call: float = 300.0
    call: float = 60.0
    inspect: float = 180.0
    total: float | None = None

    def to_dict(self) -> dict[str, float]:
        return {
            "prepare": self.prepare,
            "load": self.load,
            "first_call": self.first_call,
            "call": self.call,
            "inspect": self.inspect,
        }


@dataclass(frozen=True)
class JudgeConfig:
    """How to judge: which specs, where, how strictly."""

    suite: Suite
    mode: str = "test"  # "test": the suite's tests; "bench": its benchmarks; "all": both
    device: str = "cpu"
    seed: int | None = None
    rule: str = "contest"
    recheck: str = "sampled"  # or "all"
    memory_limit_bytes: int = 16 * 2**30
    forbidden_words: tuple[str, ...] = CONTEST_FORBIDDEN_WORDS
    timeouts: Timeouts = field(default_factory=Timeouts)
    device_turns: Path | None = None  # default: the GPU's turn file (device_turns.py)
    isolation: IsolationSettings = field(default_factory=IsolationSettings)
    manifest: Mapping[str, str] | None = None  # the judge's files as the session started
    # Compiled kernels kept across runs. A candidate can write what later runs load from here,
    # so only runs of code that trusts each other may share one: the same source, or sources
    # qrsup generated itself (the tuner's config points of the shipped kernel).
    triton_cache: Path | None = None

    def __post_init__(self) -> None:
        if self.mode not in ("test", "bench", "all"):
            raise ValueError(f"mode must be 'test', 'bench' or 'all', not {self.mode!r}")
        if self.rule not in STOPPING_RULES:
            raise ValueError(f"unknown stopping rule {self.rule!r}")
        if self.recheck not in ("sampled", "all"):
            raise ValueError(f"recheck must be 'sampled' or 'all', not {self.recheck!r}")

    def judged_suite(self) -> Suite:
        return self.suite if self.seed is None else self.suite.with_secret_seed(self.seed)

    def total_timeout_s(self) -> float:
        if self.timeouts.total is not None:
            return self.timeouts.total
        tests, benchmarks = self.judged_specs()
        rule = STOPPING_RULES[self.rule]
        per_spec = self.timeouts.first_call + 4 * self.timeouts.inspect
        per_benchmark = per_spec + rule.max_elapsed_ns / 1e9
        return 120 + self.timeouts.load + len(tests) * per_spec + len(benchmarks) * per_benchmark

    def max_file_bytes(self) -> int:
        """The contestant's file-size limit: its largest export of factors, or the floor."""
        tests, benchmarks = self.judged_specs()
        rule = STOPPING_RULES[self.rule]
        exports = [_export_bytes(s, 1) for s in tests]
        exports += [_export_bytes(s, inputs_per_repetition(s, rule)) for s in benchmarks]
        return max([MIN_FILE_LIMIT_BYTES, *exports]) + MIN_FILE_LIMIT_BYTES

    def judged_specs(self) -> tuple[tuple[Spec, ...], tuple[Spec, ...]]:
        """(tests, benchmarks) this mode runs, with the secret seed applied."""
        suite = self.judged_suite()
        tests = suite.tests if self.mode in ("test", "all") else ()
        benchmarks = suite.benchmarks if self.mode in ("bench", "all") else ()
        return tests, benchmarks


def _export_bytes(spec: Spec, inputs: int) -> int:
    return 4 * spec.batch * (spec.n * spec.n + spec.n) * inputs


def evaluate(
    candidate: Path, config: JudgeConfig, on_progress: Progress | None = None
) -> JudgeReport:
    """Judge one candidate file; never raises for anything the candidate does."""
    return JudgeReport.from_dict(run_judge(candidate, config, on_progress))


def run_judge(
    candidate: Path,
    config: JudgeConfig,
    on_progress: Progress | None = None,
    extra: dict | None = None,
    keep: dict[str, Path] | None = None,
) -> dict:
    """The referee's report as a dict; never raises for anything the candidate does.

    `extra` joins the referee's config (a profile run asks for its flow that way); `keep` maps
    names of files in the private work dir to where they are copied before it is removed.
    """
    candidate = candidate.resolve()
    suite = config.judged_suite()
    static = check_candidate_file(candidate, config.forbidden_words)
    base = {
        "candidate": str(candidate),
        "source_sha256": hashlib.sha256(static.source.encode()).hexdigest() if static.ok else "",
        "suite": suite.name,
        "mode": config.mode,
        "seed": config.seed,
    }
    if not static.ok:
        return {"verdict": "rejected", "reason": static.reason, **base}
    changed = changed_files(config.manifest) if config.manifest is not None else []
    if changed:
        reason = f"{TAMPERED_REASON}: {', '.join(changed)}; nothing was judged"
        return {"verdict": "tampered", "reason": reason, **base}
    become_subreaper()
    make_undumpable()  # the key and the report pipe live here: out of reach of our own uid too
    device = "GPU" if config.device.startswith("cuda") else "CPU"
    waiting = ProgressUpdate(phase=f"waiting for the {device}")
    on_wait = partial(on_progress, waiting) if on_progress else None
    turns = DeviceTurns(config.device_turns or turn_file(config.device, os.environ), on_wait)
    with tempfile.TemporaryDirectory(prefix="qrsup-judge-") as work:
        work_dir = Path(work)
        os.chmod(work_dir, 0o700)
        with turns.turn():
            data = _run_referee(candidate, config, work_dir, on_progress, extra or {})
        if turns.path is not None:
            data.setdefault("phases_s", {})["device_wait"] = turns.waited_s
        output = _read_output(work_dir / "candidate-output.log")
        for name, destination in (keep or {}).items():
            _copy_out(work_dir / name, destination)
    data.pop("type", None)
    return {**data, **base, "candidate_output": output}


def _run_referee(
    candidate: Path,
    config: JudgeConfig,
    work_dir: Path,
    on_progress: Progress | None,
    extra: dict,
) -> dict:
    key = secrets.token_bytes(32)
    tests, benchmarks = config.judged_specs()
    referee_config = {
        **extra,
        "key": key.hex(),
        "candidate": str(candidate),
        "device": config.device,
        "work_dir": str(work_dir),
        "rule": config.rule,
        "recheck": config.recheck,
        "memory_limit_bytes": config.memory_limit_bytes,
        "max_file_bytes": config.max_file_bytes(),
        "isolation": config.isolation.to_dict(),
        "triton_cache": str(config.triton_cache) if config.triton_cache is not None else None,
        "timeouts": config.timeouts.to_dict(),
        "tests": [_spec_dict(s) for s in tests],
        "benchmarks": [_spec_dict(s) for s in benchmarks],
    }
    run_mark = secrets.token_hex(8)  # inherited by the referee's descendants, escapees included
    report_read, report_write = os.pipe()
    referee_log = open(work_dir / "referee.log", "wb")  # noqa: SIM115 - closed below
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qrsup.kernels.judge.referee_main",
            str(report_write),
            str(os.getpid()),
        ],
        stdin=subprocess.PIPE,
        stdout=referee_log,
        stderr=subprocess.STDOUT,
        pass_fds=(report_write,),
        start_new_session=True,
        env={**judged_environment(os.environ, config.device), RUN_MARK: run_mark},
    )
    os.close(report_write)
    try:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(referee_config) + "\n").encode())
        proc.stdin.close()
        result = _collect(
            LineReader(report_read), key, started + config.total_timeout_s(), on_progress
        )
    finally:
        os.close(report_read)
        kill_tree(proc.pid)
        proc.wait()
        referee_log.close()
        escapees = marked_children(RUN_MARK, run_mark)
        kill_processes(escapees + [d for e in escapees for d in descendants(e.pid)])
    if result is None:
        code = proc.returncode
        log = _read_output(work_dir / "referee.log")
        return _judge_failure(
            "crash", f"the judge process died (status {code}) before reporting", log
        )
    if isinstance(result, str):
        return _judge_failure(*result.split(":", 1), "")
    result.setdefault("phases_s", {})["wall"] = time.monotonic() - started
    return result


def _collect(
    reader: LineReader, key: bytes, deadline: float, on_progress: Progress | None
) -> dict | str | None:
    """The referee's final report, a 'kind:reason' string for a broken run, or None if it died."""
    while True:
        try:
            line = reader.read_line(deadline)
        except ChannelTimeout:
            return "timeout:the judge run exceeded its total time limit; all processes killed"
        except ChannelClosed:
            return None
        except ProtocolError as exc:
            return f"fail:the judge channel was tampered with ({exc})"
        try:
            message = verify(key, line)
        except ProtocolError as exc:
            return f"fail:the judge channel was tampered with ({exc})"
        if message.get("type") == "report":
            return message
        if on_progress is not None:
            on_progress(ProgressUpdate.from_frame(message))


def _judge_failure(verdict: str, reason: str, log: str) -> dict:
    detail = f"{reason}\n{log}".strip() if log else reason
    return {"verdict": verdict, "reason": detail, "specs": []}


def _spec_dict(spec: Spec) -> dict:
    return {
        "batch": spec.batch,
        "n": spec.n,
        "cond": spec.cond,
        "case": spec.case,
        "seed": spec.seed,
    }


def _copy_out(source: Path, destination: Path) -> None:
    """Copy a regular file the run left (never a planted link), gzipped for a `.gz` name."""
    if source.is_file() and not source.is_symlink():
        destination.parent.mkdir(parents=True, exist_ok=True)
        opener = gzip.open if destination.suffix == ".gz" else open
        with open(source, "rb") as kept, opener(destination, "wb") as copy:
            shutil.copyfileobj(kept, copy)


def _read_output(path: Path) -> str:
    """The candidate's own stdout/stderr, head and tail, for the human."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if len(text) <= OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS:
        return text
    skipped = len(text) - OUTPUT_HEAD_CHARS - OUTPUT_TAIL_CHARS
    head, tail = text[:OUTPUT_HEAD_CHARS], text[-OUTPUT_TAIL_CHARS:]
    return f"{head}\n[… {skipped} characters omitted …]\n{tail}"
