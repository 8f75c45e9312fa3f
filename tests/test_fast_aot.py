"""Every fast kernel compiles for an H100/H200 (sm_90) under the shipped and look-ahead plans.

The other fast-kernel tests run the kernels in Triton's CPU interpreter, which never runs Triton's
compiler: the look-ahead kernel passed them all and then failed to compile on every GPU launch.
This compiles the plans' launches ahead of time with the CUDA backend's bundled compiler instead,
in a child process: Triton decides between interpreted and compiled functions when it is first
imported, and test_fast_geqrf.py needs that to happen with TRITON_INTERPRET on, so this module
must not import Triton at all.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

NO_COMPILER = 77  # qrsup.kernels.fast.aot's exit status where Triton cannot compile for CUDA


@pytest.mark.e2e
def test_every_fast_kernel_compiles_for_sm90(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton")  # a cold compile, every run
    result = subprocess.run(
        [sys.executable, "-m", "qrsup.kernels.fast.aot"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if result.returncode == NO_COMPILER:
        pytest.skip(result.stdout.strip())
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]
