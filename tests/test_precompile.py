"""A tuner candidate's kernels are compiled before its judge run, into the cache the judge hands
its contestant, so the contestant finds them there instead of compiling on the judge's clock.

On a machine without a GPU this compiles for sm_90 with Triton's bundled ptxas (skipped where
there is none); on a GPU the contestant's own launches must find every kernel in the cache.
Like test_fast_aot.py, this module must not import Triton: the compiles run in child processes.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from qrsup.agents.loop import compiles_beside
from qrsup.agents.precompile import Compilation, Precompiler
from qrsup.agents.spaces import FastKernelSpace
from qrsup.kernels.device_arch import device_arch
from qrsup.kernels.judge.triton_cache import MANAGER_ENV
from qrsup.kernels.schema import Candidate, ProgressUpdate
from qrsup.kernels.suites import Spec

from tests.conftest import CANDIDATES, ROOT
from tests.loop_helpers import wait_for

CONFIGS = ROOT / "kernels" / "fast" / "configs.toml"
NO_COMPILER = 77  # qrsup.kernels.fast.aot's exit status where Triton cannot compile for CUDA


def _compiled_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}


def _precompile(*arguments: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "qrsup.kernels.fast.precompile", *arguments],
        env=_compiled_env() | (env or {}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def cuda_compiler() -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "from qrsup.kernels.fast.aot import cuda_compiler_available as c;"
         "raise SystemExit(0 if c() else 77)"],
        env=_compiled_env(),
        capture_output=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    if probe.returncode == NO_COMPILER:
        pytest.skip("no Triton CUDA backend with ptxas here")


def _kernels(cache: Path) -> set[str]:
    """The cache's compiled kernels (Triton also keeps its launcher modules there)."""
    return {entry.parent.name for entry in cache.glob("*/*.cubin")}


def _candidate(source: str) -> Candidate:
    return Candidate("c-0123456789", "h", source, "c-parent", "a1", "exploit", "fast", "", {}, 0.0)


def test_a_config_compiles_once_and_a_second_run_finds_every_kernel_cached(cuda_compiler, tmp_path):
    cache = tmp_path / "triton"
    first = _precompile(str(CONFIGS), str(cache), "--arch=90", "--shape=4x32", "--shape=4x32")
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    compiled = _kernels(cache)
    assert compiled, first.stdout
    assert f"precompiled {len(compiled)} kernels (0 already cached)" in first.stdout
    again = _precompile(str(CONFIGS), str(cache), "--arch=90", "--shape=4x32")
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    assert f"precompiled 0 kernels ({len(compiled)} already cached)" in again.stdout
    assert _kernels(cache) == compiled


def _group_files(cache: Path) -> dict[str, str]:
    return {str(path.relative_to(cache)): path.read_text() for path in cache.glob("*/__grp__*")}


@pytest.fixture(scope="module")
def moved_cache(cuda_compiler, tmp_path_factory) -> tuple[Path, Path]:
    """The shipped config compiled at `host`, then moved to `kept`, leaving nothing at `host`:
    one compile for the tests that each look up their own copy of it."""
    root = tmp_path_factory.mktemp("moved")
    host, kept = root / "host", root / "kept"
    first = _precompile(str(CONFIGS), str(host), "--arch=90", "--shape=4x32")
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    host.rename(kept)
    return kept, host


@pytest.mark.e2e  # a compile for the module, then one for each lookup: over 6 s each here
@pytest.mark.parametrize("manager", ["relocatable", "triton's own"])
def test_a_cache_seen_under_another_path_is_found_only_by_the_relocatable_lookup(
    moved_cache, tmp_path, manager
):
    """The judge's contestant sees a kept cache at its private path, the precompiler at the
    host's. Triton's own lookup takes the other path's entries for missing: it compiles again
    and rewrites each group file for its own path. The relocatable one finds them."""
    kept, host = moved_cache
    mounted = shutil.copytree(kept, tmp_path / "mounted")
    groups = _group_files(mounted)
    assert groups and all(str(host) in text for text in groups.values())
    env = {} if manager == "relocatable" else {MANAGER_ENV: "triton.runtime.cache:FileCacheManager"}
    again = _precompile(str(CONFIGS), str(mounted), "--arch=90", "--shape=4x32", env=env)
    assert again.returncode == 0, again.stdout + again.stderr[-3000:]
    recompiled = _group_files(mounted) != groups
    assert recompiled == (manager != "relocatable")


def test_bad_arguments_are_one_line_and_exit_2(tmp_path):
    shape = _precompile(str(CONFIGS), str(tmp_path), "--arch=90", "--shape=8by512")
    assert shape.returncode == 2
    assert "a shape is BATCHxN, e.g. 8x512, not '8by512'" in shape.stderr
    missing = _precompile(str(tmp_path / "none.toml"), str(tmp_path), "--arch=90", "--shape=8x512")
    assert missing.returncode == 2
    assert "cannot read" in missing.stdout and "none.toml" in missing.stdout


def test_the_agent_compiles_a_tuner_candidate_from_its_text_and_nothing_else(
    cuda_compiler, tmp_path
):
    space = FastKernelSpace(CONFIGS)
    point = space.default_point() | {"single-panel.update_warps": 2}
    precompiler = Precompiler(tmp_path / "triton", 90, tmp_path, workers=2)
    line = precompiler(_candidate(space.render(point)), [Spec(4, 32, 1, "dense", 1)])
    assert line.startswith("precompiled ") and "(0 already cached)" in line, line
    assert _kernels(tmp_path / "triton")
    assert not list(tmp_path.glob("*.configs.toml"))  # its config and output files are gone
    assert not list(tmp_path.glob("*.precompile.log"))
    # Code it would have to run to learn its config is never compiled for, nor run.
    plain = (CANDIDATES / "fast_geqrf.py").read_text()
    assert precompiler(_candidate(plain), [Spec(4, 32, 1, "dense", 1)]) == ""


def test_a_compile_started_ahead_runs_on_its_own_until_cancelled(tmp_path):
    """An agent compiles its next candidate while the GPU judges this one, and cancels it when
    that candidate is dropped: the compiler and its files go."""
    space = FastKernelSpace(CONFIGS)
    precompiler = Precompiler(tmp_path / "triton", 90, tmp_path, workers=1)
    compilation = precompiler.start(
        _candidate(space.render(space.default_point())), [Spec(4, 32, 1, "dense", 1)]
    )
    assert compilation is not None and compilation.server.process.poll() is None
    compilation.hold(True)  # while the judge times, it and its workers stand still
    assert _settles(compilation.server.process.pid, stopped=True)
    compilation.hold(False)
    assert _settles(compilation.server.process.pid, stopped=False)
    compilation.hold(True)
    compilation.cancel()  # a held compile is ended too
    assert compilation.server.process.returncode is not None
    assert not list(tmp_path.glob("*.configs.toml")) and not list(tmp_path.glob("*.precompile.log"))


WARM_SPECS = [Spec(4, 32, 1, "dense", 1)]


@pytest.fixture
def warm_precompiler(tmp_path):
    """An agent's precompiler, its warm compiler ended after the test."""
    precompiler = Precompiler(tmp_path / "triton", 90, tmp_path, workers=2)
    yield precompiler
    precompiler.close()


def _start(precompiler: Precompiler, **changes: object) -> Compilation:
    """The compile of the shipped config with `changes` (knob: value), for WARM_SPECS."""
    space = FastKernelSpace(CONFIGS)
    compilation = precompiler.start(
        _candidate(space.render(space.default_point() | changes)), WARM_SPECS
    )
    assert compilation is not None
    return compilation


def test_one_warm_compiler_serves_an_agents_candidates_in_turn(cuda_compiler, warm_precompiler):
    """The second candidate's compile goes to the same process, which compiles only what the
    first did not; a cancel after its answer came keeps that process serving."""
    first = _start(warm_precompiler)
    assert "(0 already cached)" in first.wait()
    changed = {"single-panel.update_warps": 2}
    second = _start(warm_precompiler, **changed)
    assert second.server is first.server
    line = second.wait()
    assert line.startswith("precompiled ") and "already cached" in line
    assert "(0 already cached)" not in line, line  # the unchanged kernels were found
    third = _start(warm_precompiler, **changed)
    replies = third.server.process.stdout
    assert replies is not None
    assert select.select([replies.fileno()], [], [], 120)[0]  # its answer is in, unread
    third.cancel()
    assert third.server.alive()
    assert _start(warm_precompiler, **changed).server is third.server


def test_a_dead_warm_compiler_is_a_log_line_and_the_next_compile_starts_another(
    warm_precompiler,
):
    compilation = _start(warm_precompiler)
    os.killpg(compilation.server.process.pid, signal.SIGKILL)
    line = compilation.wait()
    assert line.startswith("precompile failed (") and "the judge compiles instead" in line
    again = _start(warm_precompiler)
    assert again.server is not compilation.server
    assert again.server.alive()


def test_a_compile_past_the_patience_is_overrun_and_its_compiler_ends(tmp_path):
    """The loop sets such a candidate aside; the next compile starts a compiler afresh."""
    precompiler = Precompiler(tmp_path / "triton", 90, tmp_path, workers=1, patience_s=0.05)
    try:
        compilation = _start(precompiler)
        line = compilation.wait()
        assert compilation.overran and line.startswith("precompile: still compiling after")
        assert compilation.server.process.returncode is not None
        assert not list(tmp_path.glob("*.configs.toml"))
    finally:
        precompiler.close()


def test_the_warm_compiler_answers_a_bad_job_line_and_serves_on(tmp_path):
    server = subprocess.run(
        [sys.executable, "-m", "qrsup.kernels.fast.precompile_server", "--arch=90"],
        input='not json\n{"id": "c-1", "configs": "%s"}\n' % (tmp_path / "none.toml"),
        env=_compiled_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert server.returncode == 0, server.stderr[-3000:]
    replies = [json.loads(line) for line in server.stdout.splitlines()]
    assert replies[0]["id"] is None and "not a JSON job line" in replies[0]["error"]
    assert replies[1]["id"] == "c-1" and "cannot read the job" in replies[1]["error"]


def test_no_precompiler_without_a_gpu_nvml_can_name():
    assert device_arch("cpu") is None
    assert Precompiler.for_device("cpu", Path("cache"), Path("work")) is None


GEQRF_ON_CUDA = textwrap.dedent(
    """
    import sys
    import torch
    from qrsup.kernels.fast.config import load_config
    from qrsup.kernels.fast.geqrf import FastGeqrf

    solver = FastGeqrf(load_config(sys.argv[1]))
    for shape in sys.argv[2:]:
        batch, n = map(int, shape.split("x"))
        solver(torch.randn(batch, n, n, device="cuda"), check_finite=False)
    torch.cuda.synchronize()
    """
)


@pytest.mark.gpu
def test_a_contestant_finds_every_precompiled_kernel_in_the_cache(tmp_path):
    """The cache keys of the stand-in driver's warm-up are the real launches' keys."""
    import torch

    major, minor = torch.cuda.get_device_capability()
    cache, shapes = tmp_path / "triton", ["8x512", "2x2048", "40x176", "20x32"]
    warmed = _precompile(
        str(CONFIGS), str(cache), f"--arch={10 * major + minor}", *(f"--shape={s}" for s in shapes)
    )
    assert warmed.returncode == 0, warmed.stdout + warmed.stderr[-3000:]
    before = _kernels(cache)
    ran = subprocess.run(
        [sys.executable, "-c", GEQRF_ON_CUDA, str(CONFIGS), *shapes],
        env=_compiled_env() | {"TRITON_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    missed = _kernels(cache) - before
    assert not missed, f"{len(missed)} of the launches compiled again: {sorted(missed)[:5]}"


def _settles(pid: int, stopped: bool, timeout_s: float = 5.0) -> bool:
    """Whether the process's state in /proc comes to say stopped (T) or not, within the time:
    a signal is delivered asynchronously."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if (state == "T") == stopped:
            return True
        time.sleep(0.01)
    return False


def _ended(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_held_compile_and_its_workers_end_when_the_agent_that_started_it_dies(
    cuda_compiler, tmp_path
):
    """An agent holds its compile ahead while the judge times; if the agent dies then, nothing
    would ever let the stopped compiler go on: it and its workers die with the agent."""
    agent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import pathlib, sys, time\n"
            "from qrsup.agents.precompile import CompileServer\n"
            f"server = CompileServer.start(90, 2, pathlib.Path({str(tmp_path)!r}))\n"
            f"server.submit({{'id': 'c-1', 'configs': {str(CONFIGS)!r},"
            f" 'cache': {str(tmp_path / 'triton')!r}, 'shapes': [[64, 512], [8, 2048]]}})\n"
            "print(server.process.pid, flush=True)\n"
            "time.sleep(600)\n",
        ],
        env=_compiled_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        compiler = psutil.Process(int(agent.stdout.readline()))
        # Both workers, so the hold does not land on one still starting.
        wait_for(lambda: len(compiler.children()) == 2, 120, "the compiler's workers")
        os.killpg(compiler.pid, signal.SIGSTOP)  # held, as while the judge times
        group = [compiler, *compiler.children()]
        wait_for(lambda: all(p.status() == psutil.STATUS_STOPPED for p in group), 30, "the hold")
        workers = group[1:]
        agent.kill()
        agent.wait()
        alive = psutil.wait_procs([compiler, *workers], timeout=10)[1]
        # A process that ended stays a zombie until its new parent, the host's init, reaps it:
        # some inits do that late under load.
        assert [p.pid for p in alive if not _ended(p)] == []
    finally:
        agent.kill()
        agent.wait()


def test_a_compile_ahead_runs_only_beside_a_test_spec_that_another_follows() -> None:
    """A hold lands after the referee has moved on: a compile let go in the load or the last
    test would still run when the first timed cycle starts."""
    tests = [ProgressUpdate("test", i, 3) for i in range(3)]
    assert [compiles_beside(u) for u in tests] == [True, True, False]
    done = ProgressUpdate("test", 1, 3, status="pass")
    assert compiles_beside(done)  # test 2 starts next, and holds it again
    others = ["calibrate", "load", "benchmark", "waiting for the cuda:0"]
    assert not any(compiles_beside(ProgressUpdate(phase, 0, 5)) for phase in others)
    assert not compiles_beside(ProgressUpdate("test"))
