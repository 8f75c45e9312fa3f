"""Does the judge's contestant find the kernels the precompiler put in its cache?

The H200 loop of 2026-12-01 precompiled every tuner candidate ("0 kernels compiled, 13 already
cached"), yet the first call of its quick stage still took 3 to 13 s. This script takes one tuner
neighbour of the shipped kernel (a knob whose kernels no cache holds yet), precompiles it into a
fresh cache, judges it there (quick rule, once per `--isolation` mode given, in order, on the
same cache: a later run finds what an earlier one compiled), and then names
every cache entry the contestant added: a kernel it did not find. For each, the precompiled entry
of the same kernel is set beside it, field by field of Triton's metadata, so a mismatch names its
cause. With `--profile-first-call` the candidate also profiles its own first call and leaves the
profile in the cache (the one place behind the boundary it may write that outlives the run);
the ten dearest functions are printed. Usage (on a GPU host):

    python scripts/measure_precompile_hits.py --isolation auto off --knob medium.update_block_n=32
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import stat
import tempfile
import time
from pathlib import Path

from qrsup.agents.precompile import Precompiler
from qrsup.agents.spaces import FastKernelSpace
from qrsup.kernels.fast.config import DEFAULT_CONFIGS
from qrsup.kernels.fast.precompile import parse_shape
from qrsup.kernels.judge.runner import JudgeConfig, evaluate
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import get_suite


def neighbour(knob: str) -> str:
    """The shipped kernel's candidate source with one knob changed (`class.knob=value`)."""
    key, _, text = knob.partition("=")
    space = FastKernelSpace(DEFAULT_CONFIGS)
    point = dict(space.default_point())
    if key not in point:
        raise SystemExit(f"no knob {key!r}; the space has {sorted(point)}")
    point[key] = json.loads(text) if text[:1] in "0123456789-[{tf" else text
    return space.render(point)


PROFILE_FILE = "first-call.prof"
PROFILED_FIRST_CALL = f"""

import cProfile as _cprofile
import os as _os

_unprofiled = custom_kernel
_calls = []


def custom_kernel(a):
    _calls.append(1)
    if len(_calls) > 1:
        return _unprofiled(a)
    profiler = _cprofile.Profile()
    result = profiler.runcall(_unprofiled, a)
    profiler.dump_stats(_os.path.join(_os.environ["TRITON_CACHE_DIR"], "{PROFILE_FILE}"))
    return result
"""


def entries(cache: Path) -> dict[str, Path]:
    """The cache's entries: key directory → its metadata file (None for launchers and utils)."""
    found = {}
    for entry in cache.iterdir():
        if entry.is_dir():
            meta = [p for p in entry.glob("*.json") if not p.name.startswith("__grp__")]
            found[entry.name] = meta[0] if meta else entry
    return found


def describe(path: Path) -> str:
    info = path.stat()
    return f"{path.name} uid={info.st_uid} mode={stat.filemode(info.st_mode)}"


def metadata_difference(ours: Path, theirs: Path) -> dict[str, object]:
    """Metadata fields whose values differ between two compiles of one kernel."""
    a, b = json.loads(ours.read_text()), json.loads(theirs.read_text())
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def run(
    root: Path, isolation: str, source: str, shapes: list[tuple[int, int]], workers: int
) -> None:
    cache, work = root / "triton", root / "work"
    work.mkdir(exist_ok=True)
    path = root / "candidate.py"
    path.write_text(source)
    suite = get_suite("qr_v2")
    tests = tuple(s for s in suite.tests if (s.batch, s.n) in shapes)
    benchmarks = tuple(s for s in suite.benchmarks if (s.batch, s.n) in shapes)
    if not tests + benchmarks:
        raise SystemExit(f"no qr_v2 spec has one of the shapes {shapes}")
    subset = type(suite)(name="hits", tests=tests, benchmarks=benchmarks)
    precompiler = Precompiler.for_device("cuda:0", cache, work)
    if precompiler is None:
        raise SystemExit("no NVML GPU here: the precompiler only runs beside a CUDA judge")
    precompiler = Precompiler(cache, precompiler.arch, work, workers)
    candidate = Candidate("c-hits", "", source, None, "a", "exploit", "fast", "", None, 0.0)
    line = precompiler(candidate, tests + benchmarks)
    before = entries(cache)
    print(f"== isolation {isolation}: {line}; {len(before)} entries", flush=True)
    for name in list(before)[:3]:
        print("   precompiled:", describe(before[name]))
    config = JudgeConfig(
        suite=subset,
        mode="all",
        device="cuda",
        rule="quick",
        isolation=IsolationSettings(mode=isolation),
        triton_cache=cache,
    )
    start = time.monotonic()
    report = evaluate(path, config)
    print(f"   verdict {report.verdict} in {time.monotonic() - start:.1f} s {report.reason[:200]}")
    for spec in report.specs:
        print(f"   spec {spec.get('label')}: first call {spec.get('first_call_s', 0):.2f} s")
    profile = cache / PROFILE_FILE
    if profile.exists():
        stats = pstats.Stats(str(profile))
        stats.sort_stats("cumulative").print_stats(25)
        profile.unlink()
    added = {k: v for k, v in entries(cache).items() if k not in before}
    print(f"   the contestant added {len(added)} entries")
    by_name = {p.name: p for p in before.values() if p.suffix == ".json"}
    for key, meta in sorted(added.items())[:8]:
        twin = by_name.get(meta.name)
        note = metadata_difference(twin, meta) if twin is not None else "no precompiled twin"
        print(f"   + {key[:12]} {describe(meta)}: {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--isolation", nargs="+", default=["auto", "off"])
    parser.add_argument("--knob", default="medium.update_block_n=32")
    parser.add_argument(
        "--specs", nargs="+", type=parse_shape, default=[(640, 512), (16, 512)], help="BATCHxN"
    )
    parser.add_argument("--profile-first-call", action="store_true")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    args = parser.parse_args()
    source = neighbour(args.knob) + (PROFILED_FIRST_CALL if args.profile_first_call else "")
    root = Path(tempfile.mkdtemp(prefix="precompile-hits-"))  # one cache for every run
    for isolation in args.isolation:
        run(root, isolation, source, args.specs, args.workers)


if __name__ == "__main__":
    main()
