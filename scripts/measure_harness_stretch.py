"""Where an honest candidate's cycles run longer than the do-nothing ones, step by step.

The referee judges each cycle against do-nothing cycles timed before the candidate loaded. On an
H100 the shipped kernel's 20×32 cycles ran 3.1 ms longer in preparation and 2.4 ms longer in
inspection than those (their timed windows 0.14 ms), and a near miss became a failure. This runs
the contestant's own harness in one process, without the referee: do-nothing cycles, then the
candidate's, then do-nothing cycles again, and times each harness step in each. A step slower
only beside the candidate's calls points at what its calls leave behind; one slower in the last
do-nothing cycles too, at what loading it changed in the process. Do-nothing cycles whose window
waits `--wait-ms` on the device (a sleep kernel, as long as the candidate's work) tell whether
waiting for the device there is what slows the steps after it. Last (`alt:`), the candidate's
cycles with a do-nothing cycle after every second, as the judge times a near miss: whether
do-nothing cycles beside the candidate's share their stretch, which the judge counts on.

`python scripts/measure_harness_stretch.py FILE [--shape 20x32] [--case dense] [--cond 1]
[--count 50] [--cycles 30] [--wait-ms 1.7] [--gap-ms 0.2]`
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch
from qrsup.kernels.judge import contestant as harness
from qrsup.kernels.judge.harness_watch import HarnessWatch
from qrsup.kernels.judge.referee import BESIDE_EVERY

Timings = dict[str, list[float]]


def timed(timings: Timings, label: str, function: Callable) -> Callable:
    """`function`, adding its wall time in ms to `timings[label]` at each call."""

    def wrapper(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            timings[label].append((time.perf_counter() - start) * 1e3)

    return wrapper


def instrument(timings: Timings, wait: dict[str, float]) -> None:
    """Time the harness's steps, and let the do-nothing kernel wait `wait["ms"]` on the device.
    Done before the contestant (and its watch) exists, so the watch takes the wrapped steps for
    the harness's own."""
    do_nothing = harness._calibration_kernel

    def waiting(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if wait["ms"] > 0 and a.is_cuda:
            props = torch.cuda.get_device_properties(a.device)
            clock_hz = getattr(props, "clock_rate", 1_700_000) * 1e3  # kHz; the go time says
            torch.cuda._sleep(int(wait["ms"] * 1e-3 * clock_hz / wait["calls"]))
        elif wait["ms"] > 0:
            time.sleep(wait["ms"] * 1e-3 / wait["calls"])
        return do_nothing(a)

    harness._calibration_kernel = waiting
    harness.generate_input = timed(timings, "prepare: generate_input", harness.generate_input)
    harness._tensor_clone = timed(timings, "prepare: clone", harness._tensor_clone)
    harness._collect = timed(timings, "inspect: collect", harness._collect)
    for name in ("seen", "guard"):
        setattr(HarnessWatch, name, timed(timings, f"watch.{name}", getattr(HarnessWatch, name)))
    sync = harness.DeviceClock.synchronize
    harness.DeviceClock.synchronize = timed(timings, "synchronize", sync)
    for name in ("_problems", "_aliasing_problems", "_mutation_problems"):
        step = timed(timings, f"inspect: {name}", getattr(harness.Contestant, name))
        setattr(harness.Contestant, name, step)


def run_cycles(
    contestant: harness.Contestant,
    spec: dict,
    count: int,
    cycles: int,
    pattern: tuple[bool, ...],
    gap_s: float,
) -> dict[bool, Timings]:
    """`cycles` repetitions of prepare → go → inspect, each exchange timed whole, `gap_s`
    apart (the referee's own work between exchanges, during which the device idles); each
    cycle does nothing or calls the candidate as `pattern` says in turn (True: do nothing).
    The exchanges' times, by kind of cycle."""
    phases: dict[bool, Timings] = {kind: defaultdict(list) for kind in set(pattern)}
    for cycle in range(cycles):
        calibrate = pattern[cycle % len(pattern)]
        seeds = [1_000_003 * cycle + i for i in range(count)]
        messages = (
            ("prepare", {"spec": spec, "seeds": seeds}),
            ("go", {"calibrate": calibrate}),
            ("inspect", {}),
        )
        for name, message in messages:
            time.sleep(gap_s)
            start = time.perf_counter_ns()
            reply = getattr(contestant, name)(message)
            phases[calibrate][name].append((time.perf_counter_ns() - start) / 1e6)
            if not reply.get("ok") or reply.get("problems"):
                raise SystemExit(f"{name} refused: {reply}")
    return phases


def shape(text: str) -> tuple[int, int]:
    """`BATCHxN`, both positive."""
    batch, _, n = text.partition("x")
    if not (batch.isdigit() and n.isdigit() and int(batch) > 0 and int(n) > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not BATCHxN, e.g. 20x32")
    return int(batch), int(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--shape", type=shape, default="20x32", help="BATCHxN")
    parser.add_argument("--case", default="dense")
    parser.add_argument("--cond", type=float, default=1.0)
    parser.add_argument("--count", type=int, default=50, help="inputs per repetition")
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--wait-ms", type=float, default=1.7, help="per cycle, on the device")
    parser.add_argument("--gap-ms", type=float, default=0.2, help="between exchanges")
    args = parser.parse_args()
    if not args.file.is_file():
        parser.error(f"{args.file}: no such candidate file")
    batch, n = args.shape
    spec = {"batch": batch, "n": n, "cond": args.cond, "case": args.case}
    steps: Timings = defaultdict(list)
    wait = {"ms": 0.0, "calls": float(args.count)}
    instrument(steps, wait)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    contestant = harness.Contestant(device)
    table: dict[str, dict[str, float]] = {}
    waiting = f"waits {args.wait_ms:g} ms"
    # The judge's beside cycles: a do-nothing cycle after every BESIDE_EVERY of the candidate's.
    beside = (False,) * BESIDE_EVERY + (True,)
    for label, pattern, load, wait_ms in (
        ("do-nothing before", (True,), False, 0.0),
        (waiting, (True,), False, args.wait_ms),
        ("candidate", (False,), True, 0.0),
        ("do-nothing after", (True,), False, 0.0),
        (f"{waiting} after", (True,), False, args.wait_ms),
        ("alt", beside, False, 0.0),
    ):
        wait["ms"] = wait_ms
        if load:
            reply = contestant.import_candidate(args.file.resolve())
            if not reply.get("ok"):
                raise SystemExit(f"load refused: {reply}")
        steps.clear()
        gap_s = args.gap_ms / 1e3
        phases = run_cycles(contestant, spec, args.count, args.cycles, pattern, gap_s)
        for calibrate, timed in phases.items():
            medians = {name: statistics.median(values) for name, values in timed.items()}
            if len(phases) > 1:  # the alternating cycles, shown by kind: exchanges alone
                table[f"{label}: {'do-nothing' if calibrate else 'candidate'}"] = medians
                continue
            # Steps summed per cycle (a step may run several times in one), then their median.
            per_cycle = {name: sum(values) / args.cycles for name, values in steps.items()}
            table[label] = medians | per_cycle
    labels = list(table)
    print(f"{batch}x{n} {args.case} c{args.cond:g}, {args.count} inputs per cycle, {device}")
    print(f"{'ms per cycle':28}" + "".join(f"{label:>19}" for label in labels))
    for row in dict.fromkeys(name for label in labels for name in table[label]):
        cells = (table[label].get(row) for label in labels)  # the alt: columns time no steps
        print(f"{row:28}" + "".join("—".rjust(19) if v is None else f"{v:19.3f}" for v in cells))


if __name__ == "__main__":
    main()
