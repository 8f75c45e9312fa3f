"""Shared fixtures: a tiny suite and a one-call judge for candidate files."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import psutil
import pytest
import torch
from qrsup.kernels.judge.report import JudgeReport
from qrsup.kernels.judge.runner import JudgeConfig, Timeouts, evaluate
from qrsup.kernels.schema import Progress
from qrsup.kernels.suites import Spec, Suite

from tests.loop_helpers import IncumbentSeeder

if TYPE_CHECKING:
    from tests.ray_cluster import RayTestCluster

ROOT = Path(__file__).resolve().parent.parent
CHEATERS = Path(__file__).resolve().parent / "cheaters"
CANDIDATES = ROOT / "kernels" / "candidates"


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as a module: the device scripts' pure parts are tested on the CPU."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TINY = Suite(
    name="tiny",
    tests=(Spec(3, 16, 1, "dense", 11), Spec(2, 24, 0, "rankdef", 12)),
    benchmarks=(Spec(4, 16, 1, "dense", 21),),
)

FAST_TIMEOUTS = Timeouts(prepare=30, load=60, first_call=20, call=20, inspect=30, total=180)


# The smallest suite a file or a session is judged on end to end: one test, one benchmark.
TINY_TOML = """
name = "tiny"
[[tests]]
batch = 2
n = 12
case = "dense"
[[benchmarks]]
batch = 2
n = 16
cond = 1
"""


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    """TINY_TOML as a suite file."""
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_TOML)
    return path


LEFTOVER_GRACE_S = 5.0


@pytest.fixture
def no_leftover_processes() -> Iterator[None]:
    """Fail a test whose judge or profile leaves a process of its own behind."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    new = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    # A process SIGKILLed a moment ago may still be tearing down its memory: it gets 5 s to go.
    _, alive = psutil.wait_procs(new, timeout=LEFTOVER_GRACE_S)
    leftovers = [p for p in alive if _status(p) not in (psutil.STATUS_ZOMBIE, None)]
    for process in leftovers:  # ended here, so one leak fails one test, not every later one
        with contextlib.suppress(psutil.Error):
            process.kill()
    assert leftovers == [], f"processes left behind: {leftovers}"


def _status(process: psutil.Process) -> str | None:
    try:
        return process.status()
    except psutil.NoSuchProcess:
        return None


@pytest.fixture(scope="session")
def seed_incumbent() -> IncumbentSeeder:
    """One seeder for the test run: the incumbent is judged once, for the first session seeded."""
    return IncumbentSeeder()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayTestCluster]:
    """One local multi-node Ray cluster for every test that needs one (it is slow to start)."""
    pytest.importorskip("ray")
    from tests.ray_cluster import RayTestCluster

    cluster = RayTestCluster()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def processes_whose_command_has(text: str) -> list[psutil.Process]:
    """Living processes anywhere on the machine whose command line mentions `text`."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if text in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def tiny_config(mode: str = "test", **overrides: object) -> JudgeConfig:
    """The tiny suite on the CPU with the quick rule."""
    settings: dict[str, object] = {
        "suite": TINY,
        "mode": mode,
        "device": "cpu",
        "rule": "quick",
        "timeouts": FAST_TIMEOUTS,
        "memory_limit_bytes": 3 * 2**30,
    }
    settings.update(overrides)
    return JudgeConfig(**settings)  # type: ignore[arg-type]


def judge(
    path: Path, mode: str = "test", on_progress: Progress | None = None, **overrides: object
) -> JudgeReport:
    """Judge a file on the tiny suite on the CPU with the quick rule."""
    return evaluate(path, tiny_config(mode, **overrides), on_progress)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
