"""Device-side dev run for the fast geqrf: check every qr_v2 test spec, time configs, profile.

One call does it all so a scarce device lease is spent once: `python scripts/fast_dev.py --out D`
writes D/dev.json and prints a short table last. Timings here steer config choices only; claims
come from `qrsup bench`.
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

from kernels.checker import check_factors
from kernels.fast.config import Config, load_config
from kernels.fast.geqrf import FastGeqrf
from kernels.generators import generate_input
from kernels.suites import Spec, get_suite

FLUSH_BYTES = 256 * 1024 * 1024
MAX_INPUTS = 20


def solver_with(base: Config, batch: int, n: int, **knobs: object) -> FastGeqrf:
    """A solver whose only (catch-all) class is the default class of (batch, n) with `knobs`."""
    shape = dataclasses.replace(
        base.for_shape(batch, n), name="variant", n_max=None, batch_max=None, **knobs
    )
    return FastGeqrf(dataclasses.replace(base, shapes=(shape,)))


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
            print(f"check {spec.label:28s} {factors}")
            continue
        result = check_factors(a, *factors)
        diag = result.diagnostics
        rows.append(
            {
                "spec": spec.label,
                "ok": result.ok,
                "reason": result.reason,
                "factor_scaled": diag.get("factor_scaled_max"),
                "orth_scaled": diag.get("orthogonality_scaled_max"),
                "first_call_s": round(first_s, 3),
            }
        )
        print(f"check {spec.label:28s} ok={result.ok} {diag.get('factor_scaled_max', 0):.2f}")
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
            solver(a)
        end.record()
        torch.cuda.synchronize()
        per_call.append(start.elapsed_time(end) / count)
    return sorted(per_call)[len(per_call) // 2]


def profile_spec(solver: FastGeqrf, spec: Spec) -> list[dict]:
    """Device time per kernel name for one call (after warm-up)."""
    a = generate_input(spec, device="cuda")
    solver(a)
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        solver(a)
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        total_us = event.device_time_total
        if total_us > 0:
            rows.append({"kernel": event.key[:60], "calls": event.count, "us": round(total_us)})
    return sorted(rows, key=lambda r: -r["us"])[:8]


def variants() -> list[tuple[str, tuple[int, int], dict[str, object]]]:
    """Config points to compare, per benchmark shape of interest."""
    points: list[tuple[str, tuple[int, int], dict[str, object]]] = []
    for shape in ((640, 512), (60, 1024)):
        points += [
            ("pair", shape, {"panel_pair_reduce": True}),
            ("pw64", shape, {"panel_width": 64, "panel_pair_reduce": True}),
            ("ept64", shape, {"panel_elems_per_thread": 64, "panel_pair_reduce": True}),
            ("bm32bn64", shape, {"update_block_m": 32, "panel_pair_reduce": True}),
            ("bm64bn128w8", shape, {"update_block_n": 128, "update_warps": 8}),
            ("ieee", shape, {"update_precision": "ieee", "panel_pair_reduce": True}),
        ]
    points += [
        ("pair", (60, 1024), {"panel_pair_reduce": True, "max_panel_elems": 16384}),
        ("pair", (8, 2048), {"panel_pair_reduce": True}),
        ("pair", (2, 4096), {"panel_pair_reduce": True}),
        ("budget64k", (2, 4096), {"panel_pair_reduce": True, "max_panel_elems": 65536}),
        ("nograph", (40, 352), {"graph": False}),
        ("pair", (40, 352), {"panel_pair_reduce": True}),
        ("pair", (40, 176), {"panel_pair_reduce": True}),
        ("pair", (20, 32), {"panel_pair_reduce": True}),
    ]
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-variants", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, object] = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    base = load_config()
    default = FastGeqrf(base)
    report["checks"] = check_suite(default)
    _save(args.out, report)

    bench = get_suite("qr_v2").benchmarks
    timings = {}
    for spec in bench:
        timings[spec.label] = _attempt(lambda spec=spec: time_spec(default, spec))
        print(f"time  {spec.label:28s} {timings[spec.label]}")
    report["default_ms"] = timings
    ok_times = [v for v in timings.values() if isinstance(v, float)]
    if len(ok_times) == len(bench):
        report["default_geomean_ms"] = math.exp(sum(map(math.log, ok_times)) / len(ok_times))
    _save(args.out, report)

    profiles = {}
    for spec in bench[3:7]:
        profiles[spec.label] = _attempt(lambda spec=spec: profile_spec(default, spec))
    report["profiles"] = profiles
    _save(args.out, report)

    if not args.skip_variants:
        sweep = []
        by_shape = {(s.batch, s.n): s for s in bench if s.case == "dense"}
        for name, (batch, n), knobs in variants():
            solver = _attempt(lambda b=batch, n=n, k=knobs: solver_with(base, b, n, **k))
            ms = _attempt(lambda s=solver, sp=by_shape[(batch, n)]: time_spec(s, sp, reps=3))
            sweep.append({"variant": name, "shape": f"{batch}x{n}", "knobs": knobs, "ms": ms})
            print(f"sweep {batch}x{n} {name:12s} {ms}")
            _save(args.out, report | {"sweep": sweep})
        report["sweep"] = sweep
    _save(args.out, report)
    print(json.dumps(report.get("default_ms"), indent=1))
    print("geomean", report.get("default_geomean_ms"))


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
