"""Device-side dev run for the fast geqrf: check, tune each shape class, re-check, profile.

One call does it all so a scarce device lease is spent once:
`python scripts/fast_dev.py --out D [--write-configs]` writes D/dev.json and D/configs.toml (the
fastest variant per shape class, by the geometric mean over the class's dense benchmark shapes)
and prints a short summary last. Its timings steer config choices only; claims come from
`qrsup bench`, which should run after it on the configs it wrote.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path

import torch
import triton
from qrsup.kernels.checker import check_factors
from qrsup.kernels.fast.config import DEFAULT_CONFIGS, Config, dump_config, load_config
from qrsup.kernels.fast.geqrf import FastGeqrf
from qrsup.kernels.generators import generate_input
from qrsup.kernels.suites import Spec, get_suite

FLUSH_BYTES = 256 * 1024 * 1024
MAX_INPUTS = 20

# Knob changes tried per shape class, each against the class's shipped choice.
VARIANTS: dict[str, list[dict[str, object]]] = {
    "single-panel": [{"panel_elems_per_thread": 16}],
    "small": [
        {"panel_elems_per_thread": 64},
        {"block_width": 64, "panel_elems_per_thread": 64},
        {"panel_pair_reduce": False},
    ],
    "medium": [
        {"block_width": 32},
        {"block_width": 128},
        {"panel_elems_per_thread": 128},
        {"panel_elems_per_thread": 32},
        {"update_stages": 3},
    ],
    "large": [
        {"panel_elems_per_thread": 64},
        {"block_width": 128},
        {"update_split_rows": 512},
        {"panel_width": 16},
    ],
}


def with_class(base: Config, name: str, knobs: dict[str, object]) -> Config:
    """`base` with the class called `name` changed by `knobs`."""
    shapes = tuple(dataclasses.replace(s, **knobs) if s.name == name else s for s in base.shapes)
    return base.with_table(base.arch, shapes)


def check_suite(solver: FastGeqrf) -> list[dict]:
    """Every qr_v2 test spec through the gates, with the first call's wall time (compiles)."""
    rows = []
    for spec in get_suite("qr_v2").tests:
        a = generate_input(spec, device="cuda")
        start = time.perf_counter()
        factors = _attempt(lambda a=a: solver(a))
        torch.cuda.synchronize()
        first_s = time.perf_counter() - start
        if isinstance(factors, str):
            rows.append({"spec": spec.label, "ok": False, "reason": factors})
            continue
        result = check_factors(a, *factors)
        diag = result.diagnostics
        rows.append(
            {
                "spec": spec.label,
                "ok": result.ok,
                "reason": result.reason,
                "factor_scaled": round(diag.get("factor_scaled_max", -1), 3),
                "orth_scaled": round(diag.get("orthogonality_scaled_max", -1), 3),
                "first_call_s": round(first_s, 3),
            }
        )
    bad = [r for r in rows if not r["ok"]]
    print(f"checks: {len(rows) - len(bad)}/{len(rows)} pass", *[f"\n  {r}" for r in bad])
    return rows


def time_spec(solver: FastGeqrf, spec: Spec, reps: int = 5) -> float:
    """Median per-call ms over `reps` loops of distinct inputs, L2 flushed before each loop."""
    count = max(1, min(MAX_INPUTS, FLUSH_BYTES // spec.input_bytes))
    inputs = [generate_input(spec.reseeded(spec.seed + i), device="cuda") for i in range(count)]
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    result = check_factors(inputs[0], *solver(inputs[0]))
    if not result.ok:
        raise RuntimeError(f"{spec.label}: {result.reason}")
    per_call = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for a in inputs:
            solver(a, check_finite=False)
        end.record()
        torch.cuda.synchronize()
        per_call.append(start.elapsed_time(end) / count)
    return sorted(per_call)[len(per_call) // 2]


def tune(base: Config, bench: tuple[Spec, ...], deadline: float) -> tuple[Config, list[dict]]:
    """Per class, keep the variant with the lowest geomean over its dense benchmark shapes;
    variants not started by `deadline` (perf_counter seconds) are skipped."""
    log = []
    chosen = base
    for name, variants in VARIANTS.items():
        specs = [
            s for s in bench if s.case == "dense" and base.for_shape(s.batch, s.n).name == name
        ]
        best_knobs, best_ms = None, math.inf
        for knobs in [{}, *variants]:
            if knobs and time.perf_counter() > deadline:
                break
            config = with_class(chosen, name, knobs)
            solver = FastGeqrf(config)
            times = [_attempt(lambda s=s, f=solver: time_spec(f, s, reps=3)) for s in specs]
            ok = all(isinstance(t, float) for t in times)
            score = math.exp(sum(math.log(t) for t in times) / len(times)) if ok else math.inf
            log.append({"class": name, "knobs": knobs, "ms": times, "geomean_ms": score})
            print(f"tune {name:12s} {json.dumps(knobs):60s} {score:9.4f} {times}")
            if score < best_ms:
                best_knobs, best_ms = knobs, score
        if best_knobs:
            chosen = with_class(chosen, name, best_knobs)
    return chosen, log


def profile_spec(solver: FastGeqrf, spec: Spec) -> list[dict]:
    """Device time per kernel name for one call (after warm-up)."""
    a = generate_input(spec, device="cuda")
    solver(a)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        solver(a, check_finite=False)
        torch.cuda.synchronize()
    rows = [
        {"kernel": e.key[:40], "calls": e.count, "us": round(e.device_time_total)}
        for e in prof.key_averages()
        if e.device_time_total > 0
    ]
    return sorted(rows, key=lambda r: -r["us"])[:6]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--write-configs", action="store_true", help="replace the shipped file")
    parser.add_argument("--skip-shipped-check", action="store_true", help="check tuned only")
    parser.add_argument("--tune-s", type=float, default=240.0, help="time allowed for tuning")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    base = load_config()
    if not args.skip_shipped_check:
        report["checks_shipped"] = check_suite(FastGeqrf(base))
        _save(args.out, report)

    bench = get_suite("qr_v2").benchmarks
    tuned, report["tuning"] = tune(base, bench, time.perf_counter() + args.tune_s)
    header = [line for line in DEFAULT_CONFIGS.read_text().splitlines() if line.startswith("#")]
    text = "\n".join(header) + "\n\n" + dump_config(tuned)
    (args.out / "configs.toml").write_text(text)
    if args.write_configs:
        DEFAULT_CONFIGS.write_text(text)
    _save(args.out, report)

    solver = FastGeqrf(tuned)
    report["checks_tuned"] = check_suite(solver)
    timings = {s.label: _attempt(lambda s=s: time_spec(solver, s)) for s in bench}
    report["tuned_ms"] = timings
    if all(isinstance(v, float) for v in timings.values()):
        report["tuned_geomean_ms"] = math.exp(sum(map(math.log, timings.values())) / len(bench))
    report["profiles"] = {s.label: _attempt(lambda s=s: profile_spec(solver, s)) for s in bench[:7]}
    _save(args.out, report)
    for label, ms in timings.items():
        print(f"{label:24s} {ms}")
    print("tuned geomean ms", report.get("tuned_geomean_ms"))


def _attempt(body: object) -> object:
    """Run a measurement; a failure becomes its message so one bad variant spoils nothing else."""
    try:
        return body()  # type: ignore[operator]
    except Exception as error:  # the dev run records every failure and goes on
        return f"error: {type(error).__name__}: {str(error)[:300]}"


def _save(out: Path, report: dict) -> None:
    (out / "dev.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
