"""Where an exported repetition's time goes, step by step, for one spec.

On the H200 (loop of 2026-12-01) a 640×512 spec's exported do-nothing cycle cost 565–736 ms against
3–7 ms for a plain one, and each 640×512 spec runs three of them per judge run (calibration, the
first call's check, the last repetition's). This times the steps the judge takes to hand a
batch's factors from the contestant to the referee, and the alternatives a change would use:

- `cpu()`: the contestant's device-to-host copy into fresh pageable memory;
- `tofile`: writing that into the export file (as the contestant does, after a truncation);
- `pinned copy` / `mmap copy`: a copy into pinned memory, or straight into the file's mapped pages;
- `from_file`: the referee's read of the file; `to(device)`: its copy back to the device;
- `generate` and `check`: regenerating the input and grading the factors (the shipped kernel's);
- `area export` / `area to(device)`: the judge's way since 2026-12-04, a copy into the shared
  export area (kernels/judge/export_area.py, pinned on a GPU) and the referee's copy of it back
  to the device through its own mapping;
- `area pin` / `area release`: registering the whole area with the driver on each side, as a
  judge does before the candidate, and releasing it, as a judge does on the device turn when its
  contestant closes (a session's largest export sets the area's size: `--area-mib`).

`python scripts/measure_export_cycle.py --spec 640x512 --device cuda --dirs /tmp /dev/shm`
prints the median of `--rounds` rounds for each step and directory, then the export area's.
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from qrsup.kernels.checker import check_factors
from qrsup.kernels.fast.geqrf import geqrf
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.generators import generate_input
from qrsup.kernels.judge.export_area import ExportArea
from qrsup.kernels.suites import Spec


def timed(step: Callable[[], object], device: torch.device) -> tuple[float, object]:
    """Seconds for `step`, the device drained on both sides, and what it returned."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def one_round(spec: Spec, device: torch.device, folder: Path) -> dict[str, float]:
    seconds: dict[str, float] = {}
    seconds["generate"], a = timed(lambda: generate_input(spec, device), device)
    h, tau = geqrf(a, check_finite=False) if device.type == "cuda" else torch.geqrf(a)
    flat = torch.cat([h.reshape(-1), tau.reshape(-1)])
    size = flat.numel() * 4
    path = folder / "outputs.f32"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        seconds["cpu()"], host = timed(lambda: flat.cpu(), device)

        def write() -> None:
            os.ftruncate(fd, 0)
            with os.fdopen(os.dup(fd), "wb") as sink:
                host.numpy().tofile(sink)

        seconds["tofile"], _ = timed(write, device)
        seconds["from_file"], read = timed(
            lambda: torch.from_file(str(path), shared=False, size=flat.numel()), device
        )
        seconds["to(device)"], back = timed(lambda: read.to(device), device)
        if device.type == "cuda":
            pinned = torch.empty(flat.numel(), pin_memory=True)
            seconds["pinned copy"], _ = timed(lambda: pinned.copy_(flat), device)

        def mapped() -> None:
            os.ftruncate(fd, 0)
            os.ftruncate(fd, size)
            with mmap.mmap(fd, size) as pages:
                torch.frombuffer(pages, dtype=torch.float32).copy_(flat)

        seconds["mmap copy"], _ = timed(mapped, device)
        n2 = spec.batch * spec.n * spec.n

        def grade() -> object:
            return check_factors(a, back[:n2].view_as(h), back[n2:].view_as(tau))

        seconds["check"], result = timed(grade, device)
        assert result.ok, result.reason
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return seconds


def area_round(spec: Spec, device: torch.device, areas: tuple[ExportArea, ExportArea]) -> dict:
    """The contestant's export into the shared area and the referee's read of it, each
    through its own mapping of the same pages."""
    writer, reader = areas
    a = generate_input(spec, device)
    h, tau = geqrf(a, check_finite=False) if device.type == "cuda" else torch.geqrf(a)
    flat = torch.cat([h.reshape(-1), tau.reshape(-1)])
    seconds: dict[str, float] = {}
    target = writer.floats(flat.numel())
    seconds["area export"], _ = timed(lambda: target.copy_(flat, non_blocking=True), device)
    source = reader.floats(flat.numel())
    seconds["area to(device)"], back = timed(lambda: source.to(device), device)
    assert torch.equal(back, flat)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=parse_shape, default="640x512", help="BATCHxN")
    parser.add_argument("--case", default="dense")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dirs", nargs="+", type=Path, default=[Path(tempfile.gettempdir())])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--area-mib", type=int, default=0, help="the area's size, if larger")
    args = parser.parse_args()
    batch, n = args.spec
    spec = Spec(batch, n, 2, args.case, 1029)
    device = torch.device(args.device)
    print(f"{batch}x{n} {args.case} on {device}: {batch * n * (n + 1) * 4 / 2**20:.0f} MiB")
    for folder in args.dirs:
        rounds = [one_round(spec, device, folder) for _ in range(args.rounds)]
        line = ", ".join(
            f"{step} {1e3 * statistics.median(r[step] for r in rounds):.1f}" for step in rounds[0]
        )
        print(f"{folder}: median ms over {args.rounds} rounds: {line}", flush=True)
    nbytes = max(batch * n * (n + 1) * 4, args.area_mib * 2**20)
    writer = ExportArea.create(nbytes)
    reader = ExportArea(os.dup(writer.fd))
    pinned = {}
    if device.type == "cuda":
        pinned["area pin"], _ = timed(lambda: (writer.pin(), reader.pin()), device)
    rounds = [area_round(spec, device, (writer, reader)) for _ in range(args.rounds)]
    first = ", ".join(f"{step} {1e3 * seconds:.1f}" for step, seconds in rounds[0].items())
    steady = ", ".join(
        f"{step} {1e3 * statistics.median(r[step] for r in rounds[1:]):.1f}" for step in rounds[0]
    )
    pinned["area release"], _ = timed(lambda: (writer.close(), reader.close()), device)
    both = ", ".join(f"{step} {1e3 * seconds:.1f}" for step, seconds in pinned.items())
    print(f"export area of {nbytes / 2**20:.0f} MiB, both sides: {both} ms")
    print(f"export area: first round ms: {first}; median of the rest: {steady}")


if __name__ == "__main__":
    main()
