"""Nsight Compute counters for the top kernels: occupancy, DRAM and SM throughput.

ncu replays each kernel many times to read its counters, so it runs on a separate, one-shot
process of the candidate (`qrsup.kernels.profiling.ncu_target`), limited to the kernels inside
one NVTX range and to a bounded number of launches. Its CSV (one row per kernel launch and
metric) is read here; anything it cannot give becomes a one-line note, never an error of the
profile.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from qrsup.kernels.judge.processes import kill_child_tree

NCU_RANGE = "qrsup-ncu"
NCU_LAUNCH_COUNT = 40
NCU_TIMEOUT_S = 300.0
TOP_KERNELS = 5
METRICS = {
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "duration": "gpu__time_duration.sum",
}
TIME_UNITS_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}


class NcuError(RuntimeError):
    """Nsight Compute gave no counters, with a one-line reason."""


@dataclass(frozen=True)
class KernelCounters:
    """Nsight Compute's counters for one kernel name, averaged over its profiled launches."""

    name: str
    launches: int
    duration_us: float
    occupancy_pct: float | None
    dram_pct: float | None
    sm_pct: float | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def find_ncu() -> str | None:
    """The ncu executable on PATH, or in CUDA_HOME/bin or /usr/local/cuda/bin."""
    extra = [
        Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin",
        Path("/usr/local/cuda/bin"),
    ]
    search = os.pathsep.join([os.environ.get("PATH", ""), *map(str, extra)])
    return shutil.which("ncu", path=search)


def measure(
    request: dict, work_dir: Path, timeout_s: float = NCU_TIMEOUT_S
) -> tuple[KernelCounters, ...]:
    """Run the candidate once more under ncu (`ncu_target`); the top kernels' counters."""
    ncu = find_ncu()
    if ncu is None:
        raise NcuError("Nsight Compute (ncu) is not installed here (not on PATH or in CUDA_HOME)")
    log, output = work_dir / "ncu.csv", work_dir / "ncu-target.log"
    request_file = work_dir / "ncu-request.json"
    request_file.write_text(json.dumps(request))
    target = [sys.executable, "-m", "qrsup.kernels.profiling.ncu_target", str(request_file)]
    code = _run([*_ncu_options(ncu, log), *target], output, timeout_s)
    try:
        return parse_ncu_csv(log.read_text(errors="replace") if log.exists() else "")
    except NcuError as exc:
        if code == 0:
            raise
        last = (
            output.read_text(errors="replace").strip().splitlines()[-1:] if output.exists() else []
        )
        raise NcuError(f"{exc}; ncu exited with status {code}: {''.join(last)}") from None


def _ncu_options(ncu: str, log: Path) -> list[str]:
    """Only our metrics, only kernels inside the NVTX range, a bounded number of launches."""
    return [
        ncu,
        "--csv",
        "--print-units",
        "base",
        "--metrics",
        ",".join(METRICS.values()),
        "--nvtx",
        "--nvtx-include",
        f"{NCU_RANGE}/",
        "--launch-count",
        str(NCU_LAUNCH_COUNT),
        "--target-processes",
        "all",
        "--log-file",
        str(log),
    ]


def _run(command: list[str], output: Path, timeout_s: float) -> int:
    """The exit status of `command`; its whole process group is killed after."""
    with open(output, "wb") as sink:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise NcuError(
                f"ncu did not finish within {timeout_s:g} s; process group killed"
            ) from None
        finally:
            kill_child_tree(proc)
            proc.wait()


def parse_ncu_csv(text: str) -> tuple[KernelCounters, ...]:
    """The top kernels by total time from ncu's `--csv` output, one row per launch and metric."""
    errors = [line for line in text.splitlines() if line.startswith("==ERROR==")]
    rows = [line for line in text.splitlines() if line.startswith('"')]
    if not rows:
        reason = errors[0].removeprefix("==ERROR==").strip() if errors else "ncu wrote no counters"
        raise NcuError(reason)
    launches: dict[str, dict[str, float]] = defaultdict(dict)
    names: dict[str, str] = {}
    wanted = {metric: key for key, metric in METRICS.items()}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        key = wanted.get(row.get("Metric Name") or "")
        value = _value(row.get("Metric Value"))
        if key is None or value is None or not row.get("ID"):
            continue
        if key == "duration":
            value *= TIME_UNITS_US.get(row.get("Metric Unit") or "ns", 1e-3)
        launches[row["ID"]][key] = value
        names[row["ID"]] = row.get("Kernel Name") or "?"
    if not launches:
        raise NcuError("ncu profiled no kernel inside the profiled range")
    return _by_kernel(launches, names)


def _by_kernel(
    launches: dict[str, dict[str, float]], names: dict[str, str]
) -> tuple[KernelCounters, ...]:
    grouped: dict[str, list[dict[str, float]]] = defaultdict(list)
    for launch_id, values in launches.items():
        grouped[names[launch_id]].append(values)
    counters = [
        KernelCounters(
            name=name[:200],
            launches=len(group),
            duration_us=_mean(group, "duration") or 0.0,
            occupancy_pct=_mean(group, "occupancy_pct"),
            dram_pct=_mean(group, "dram_pct"),
            sm_pct=_mean(group, "sm_pct"),
        )
        for name, group in grouped.items()
    ]
    counters.sort(key=lambda c: -c.duration_us * c.launches)
    return tuple(counters[:TOP_KERNELS])


def _mean(group: list[dict[str, float]], key: str) -> float | None:
    values = [v[key] for v in group if key in v]
    return sum(values) / len(values) if values else None


def _value(text: str | None) -> float | None:
    try:
        return float((text or "").replace(",", ""))
    except ValueError:
        return None
