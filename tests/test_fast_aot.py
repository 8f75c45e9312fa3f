"""Every fast kernel compiles for an H100/H200 (sm_90) under the shipped and look-ahead plans.

The other fast-kernel tests run the kernels in Triton's CPU interpreter, which never runs Triton's
compiler: the look-ahead kernel passed them all and then failed to compile on every GPU launch.
This compiles the plans' launches ahead of time with the CUDA backend's bundled compiler instead,
in a child process: Triton decides between interpreted and compiled functions when it is first
imported, and test_fast_geqrf.py needs that to happen with TRITON_INTERPRET on, so this module
must not import Triton at all.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

NO_COMPILER = 77  # qrsup.kernels.fast.aot's exit status where Triton cannot compile for CUDA


# Other Triton installs to compile under as well (folders to put first on the path, separated
# like PATH): the H200 image's Triton 3.6 took no default value for a string constexpr that the
# Triton pip gives this machine took, and 16 of 42 launches failed to compile there only.
EXTRA_TRITONS = [site for site in os.environ.get("QRSUP_AOT_TRITONS", "").split(os.pathsep) if site]


@pytest.mark.e2e
@pytest.mark.parametrize("triton_site", [None, *EXTRA_TRITONS])
def test_every_fast_kernel_compiles_for_sm90(tmp_path: Path, triton_site: str | None) -> None:
    stdout = _compile_for_sm90(tmp_path, ["-m", "qrsup.kernels.fast.aot"], triton_site)
    if triton_site is not None:  # the compile ran under that Triton, not the environment's
        assert f"(Triton {_version_in(Path(triton_site))})" in stdout, stdout


@pytest.mark.e2e
def test_sass_mix_reads_a_panel_launchs_loop_without_a_gpu(tmp_path: Path) -> None:
    """scripts/sass_mix.py, which weighs a kernel change before a device session: the panel's
    step loop and ptxas's resources for the shipped 640×512 plan."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "sass_mix.py"
    args = [str(script), "--shape", "640x512", "--kernel", "qr_panel_kernel"]
    stdout = _compile_for_sm90(tmp_path, args)
    assert re.search(r"Used \d+ registers", stdout), stdout
    loops = re.findall(r"loop 0x[0-9a-f]+–0x[0-9a-f]+: (\d+) instructions", stdout)
    assert loops and all(int(count) > 50 for count in loops), stdout


@pytest.mark.e2e
def test_launch_resources_shows_a_register_cap_fitting_a_panels_grid_in_one_round(
    tmp_path: Path,
) -> None:
    """scripts/launch_resources.py on 640×512: the 512-row panel's 640 programs take more than
    one round at ptxas's own register count (three with H by rows, two by columns) and one under
    a 96-register cap."""
    root = Path(__file__).resolve().parents[1]
    shipped = (root / "kernels" / "fast" / "configs.toml").read_text()
    start = shipped.index('name = "medium"')
    capped = shipped[:start] + shipped[start:].replace(
        "panel_max_registers = 0", "panel_max_registers = 96", 1
    )
    (tmp_path / "capped.toml").write_text(capped)
    script = str(root / "scripts" / "launch_resources.py")
    panels = r"qr_panel_kernel .* programs 640–640  4 warps .* (\d+) an SM \(\w+\) +rounds (\d+)"
    rounds = []
    for extra in ([], ["--configs", str(tmp_path / "capped.toml")]):
        stdout = _compile_for_sm90(tmp_path, [script, "--shape", "640x512", *extra])
        rounds.append(tuple(map(int, re.findall(panels, stdout)[0])))
    (fit, first), (fit_capped, then) = rounds
    assert fit_capped > fit and first > 1 and then == 1, rounds


@pytest.mark.e2e
@pytest.mark.parametrize("triton_site", [None, *EXTRA_TRITONS])
def test_the_gluon_update_probe_compiles_its_apply_walk_without_shared_memory_staging(
    tmp_path: Path, triton_site: str | None
) -> None:
    """scripts/gluon_apply_probe.py, the next step for the update bound by shared memory: both
    its Gluon kernels compile for sm_90 without spills, and the apply walk's loop reads and writes
    no shared memory of its own (its tensor-core operand X is staged once, before the loop)."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "gluon_apply_probe.py"
    stdout = _compile_for_sm90(tmp_path, [str(script), "--bn", "32"], triton_site)
    apply_walk, fused = stdout.split("Gluon fused update")[:2]
    assert stdout.count("0 bytes spill stores") >= 2, stdout
    (loop,) = re.findall(r"loop .*", apply_walk)
    assert "HGMMA:24" in loop and "STS" not in loop and "LDS" not in loop, loop
    assert len(re.findall(r"loop .*", fused)) == 2, fused


def _compile_for_sm90(tmp_path: Path, args: list[str], triton_site: str | None = None) -> str:
    """stdout of `python ARGS` run with the interpreter off and a cold Triton cache (and
    `triton_site` first on the path); skips where no CUDA compiler is found (exit 77)."""
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")  # a cold compile, every run
    if triton_site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [triton_site, env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if result.returncode == NO_COMPILER:
        pytest.skip(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
    return result.stdout


def _version_in(site: Path) -> str:
    """The version of the Triton installed in `site`, from its distribution's folder name."""
    (dist,) = site.glob("triton-*.dist-info")
    return dist.name.removeprefix("triton-").removesuffix(".dist-info")
