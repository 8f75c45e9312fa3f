"""Run a submission file through the contest's own harness, and set its figures beside qrsup's.

The harness is gpu-mode/reference-kernels' `problems/linalg/qr_v2` folder (eval.py, reference.py,
task.py, task.yml) with `problems/pmpp_v2/utils.py` beside it; nothing of it is kept in this
repository. HARNESS_DIR holds those five files side by side, or is a checkout of that repository
(the files where it keeps them). Usage:

    python scripts/contest_eval.py HARNESS_DIR submission.py --mode test benchmark \
        [--suite edges] [--qrsup-json bench.json ...] [--json out.json]

Each mode runs `POPCORN_FD=... python eval.py MODE FILE` in a scratch copy of the harness, with the
task's specs written in the harness's `key: value; ...` format. `--suite` gives the harness a
qrsup suite's specs instead (its tests in test mode, its benchmarks otherwise): `--suite edges
--mode test` checks the shapes the contest's lists leave out with the contest's own checker. With
`--qrsup-json`, every `qrsup bench --json` report given is compared spec by spec with the
harness's benchmark means.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qrsup.kernels.suites import Spec, get_suite
from qrsup.kernels.timing import geomean

HARNESS_FILES = ("eval.py", "reference.py", "task.py", "utils.py")
# Where a checkout of gpu-mode/reference-kernels keeps each file (a flat folder: beside each other).
REPOSITORY_FOLDERS = {"utils.py": "problems/pmpp_v2"}
PROBLEM_FOLDER = "problems/linalg/qr_v2"


class MissingHarness(ValueError):
    """HARNESS_DIR lacks a harness file in either layout."""


def harness_files(root: Path) -> dict[str, Path]:
    """The harness's files (and task.yml) by name, side by side in `root` or where a checkout of
    the contest's repository keeps them: the first layout with all of them wins."""
    names = (*HARNESS_FILES, "task.yml")
    layouts = {
        "side by side": {name: root / name for name in names},
        f"in a checkout ({PROBLEM_FOLDER}/, utils.py in problems/pmpp_v2/)": {
            name: root / REPOSITORY_FOLDERS.get(name, PROBLEM_FOLDER) / name for name in names
        },
    }
    lacking = {
        where: [name for name, path in layout.items() if not path.is_file()]
        for where, layout in layouts.items()
    }
    for where, missing in lacking.items():
        if not missing:
            return layouts[where]
    where = min(lacking, key=lambda w: len(lacking[w]))  # the layout nearer complete
    raise MissingHarness(f"{root} lacks {', '.join(lacking[where])} {where}")


MODE_SPECS = {"test": "tests", "benchmark": "benchmarks", "leaderboard": "benchmarks"}


def task_specs(task_yml: Path) -> dict[str, list[dict]]:
    """The task's spec lists: each spec line of task.yml is a JSON object under its list key."""
    specs: dict[str, list[dict]] = {"tests": [], "benchmarks": []}
    current = None
    for line in task_yml.read_text().splitlines():
        key = line.rstrip(":").strip()
        if not line.startswith(" ") and line.endswith(":"):
            current = key if key in specs else None
        elif current and line.strip().startswith("- {"):
            specs[current].append(json.loads(line.strip()[2:]))
    return specs


def spec_line(spec: dict) -> str:
    return "; ".join(f"{key}: {value}" for key, value in spec.items())


def suite_specs(name: str, mode: str) -> list[dict]:
    """A qrsup suite's specs for `mode`, as the harness's task.yml lists them."""
    suite = get_suite(name)
    return [harness_spec(s) for s in (suite.tests if mode == "test" else suite.benchmarks)]


def harness_spec(spec: Spec) -> dict:
    """The harness's eval.py reads a spec's values as integers or words only."""
    if not float(spec.cond).is_integer():
        raise ValueError(f"{spec.label}: the contest's harness reads only integer cond values")
    cond = int(spec.cond)
    return {"batch": spec.batch, "n": spec.n, "cond": cond, "seed": spec.seed, "case": spec.case}


def run_mode(
    harness: dict[str, Path],
    submission: Path,
    mode: str,
    timeout_s: float,
    specs: list[dict] | None = None,
) -> dict:
    """One eval.py run in a scratch copy of the harness (`harness_files`), on `specs` (default:
    task.yml's list for the mode); its POPCORN lines parsed."""
    specs = specs if specs is not None else task_specs(harness["task.yml"])[MODE_SPECS[mode]]
    with tempfile.TemporaryDirectory(prefix="contest-eval-") as scratch:
        work = Path(scratch)
        for name in HARNESS_FILES:
            shutil.copy(harness[name], work / name)
        shutil.copy(submission, work / "submission.py")
        (work / "specs.txt").write_text("\n".join(spec_line(s) for s in specs) + "\n")
        start = time.monotonic()
        # eval.py writes its results to the descriptor POPCORN_FD names: a file here, read once it
        # has exited, so a hung harness meets the timeout instead of a blocking read.
        with open(work / "popcorn.txt", "w") as popcorn, open(work / "stdout.txt", "w") as stdout:
            process = subprocess.Popen(
                [sys.executable, "eval.py", mode, "specs.txt"],
                cwd=work,
                env={**os.environ, "POPCORN_FD": str(popcorn.fileno())},
                pass_fds=(popcorn.fileno(),),
                stdout=stdout,
                stderr=subprocess.STDOUT,
            )
            try:
                returncode = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                returncode = None
        lines = (work / "popcorn.txt").read_text().splitlines()
        output = (work / "stdout.txt").read_text()
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    return {
        "mode": mode,
        "returncode": returncode,
        "wall_s": round(time.monotonic() - start, 1),
        "fields": fields,
        "output_tail": output[-2000:],
    }


def harness_means_ns(result: dict) -> dict[str, float]:
    """Benchmark means by spec line (eval.py logs nanoseconds)."""
    fields = result["fields"]
    count = int(fields.get("benchmark-count", 0))
    return {
        fields[f"benchmark.{i}.spec"]: float(fields[f"benchmark.{i}.mean"])
        for i in range(count)
        if f"benchmark.{i}.mean" in fields
    }


def qrsup_means_ns(report_json: Path) -> dict[str, float]:
    report = json.loads(report_json.read_text())["report"]
    return {
        spec_line(spec["spec"]): spec["stats"]["mean_ns"]
        for spec in report["specs"]
        if spec["kind"] == "benchmark" and spec.get("stats")
    }


def geomean_ms(means_ns: dict[str, float]) -> str:
    return f"{geomean(list(means_ns.values())) / 1e6:.4f}" if means_ns else "—"


def comparison_table(harness: dict[str, float], others: dict[str, dict[str, float]]) -> str:
    """One row per harness spec: its mean, then each qrsup report's and the ratio to it."""
    names = list(others)
    header = ["spec", "eval.py (ms)"] + [f"{name} (ms, ratio)" for name in names]
    rows = [" | ".join(header), " | ".join("---" for _ in header)]
    for spec, mean in harness.items():
        cells = [spec, f"{mean / 1e6:.4f}"]
        for name in names:
            theirs = others[name].get(_same_spec(spec, others[name]))
            cells.append(f"{theirs / 1e6:.4f} ({theirs / mean:.3f})" if theirs else "—")
        rows.append(" | ".join(cells))
    cells = ["geomean", geomean_ms(harness)] + [geomean_ms(others[name]) for name in names]
    rows.append(" | ".join(cells))
    return "\n".join(rows)


def _same_spec(line: str, theirs: dict[str, float]) -> str:
    """qrsup writes `case: dense` where the task leaves the case out; match on the rest."""
    wanted = {part.strip() for part in line.split(";")} - {"case: dense"}
    for key in theirs:
        if {part.strip() for part in key.split(";")} - {"case: dense"} == wanted:
            return key
    return line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("harness", type=Path)
    parser.add_argument("submission", type=Path)
    parser.add_argument("--mode", nargs="+", default=["test", "benchmark"], choices=MODE_SPECS)
    parser.add_argument("--timeout-s", type=float, default=480.0)
    parser.add_argument("--suite", help="a qrsup suite's specs instead of task.yml's (edges, …)")
    parser.add_argument("--qrsup-json", type=Path, nargs="*", default=[])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    try:
        harness = harness_files(args.harness)
    except MissingHarness as error:
        parser.error(str(error))
    if not args.submission.is_file():
        parser.error(f"no such submission: {args.submission}")
    try:  # before any run: a suite the harness cannot take is one line, not a traceback later
        specs = {mode: suite_specs(args.suite, mode) if args.suite else None for mode in args.mode}
    except ValueError as error:  # SuiteError is one
        parser.error(str(error))
    results = [
        run_mode(harness, args.submission, mode, args.timeout_s, specs[mode]) for mode in args.mode
    ]
    for result in results:
        fields = result["fields"]
        print(f"== eval.py {result['mode']}: rc={result['returncode']} wall={result['wall_s']}s")
        for key, value in fields.items():
            print(f"{key}: {value}")
        if result["returncode"] != 0:
            print(result["output_tail"])
    bench = next((r for r in results if r["mode"] != "test"), None)
    if bench and args.qrsup_json:
        others = {path.stem: qrsup_means_ns(path) for path in args.qrsup_json if path.exists()}
        print(comparison_table(harness_means_ns(bench), others))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["returncode"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
