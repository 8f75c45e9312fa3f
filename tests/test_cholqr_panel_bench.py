"""The Cholesky-QR2 panel of scripts/cholqr_panel_bench.py gives torch.geqrf's factors: what its
figures in docs/benchmarks.md rest on. On a CPU the script checks its algebra in float64, and
under Triton's interpreter its LU kernel against the same steps in torch, and its one-program
Cholesky against torch's."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from tests.conftest import ROOT

SCRIPT = ROOT / "scripts" / "cholqr_panel_bench.py"


def _gaps(interpret: bool) -> dict[str, float]:
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU's check, on any machine
    run = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return ast.literal_eval(run.stdout.split("largest gaps: ", 1)[1].strip())


def test_the_panel_gives_geqrfs_r_tau_and_v():
    gaps = _gaps(interpret=False)
    assert set(gaps) == {"r", "tau", "v", "gram_by_slabs"}
    assert max(gaps.values()) < 1e-12, gaps


def test_the_lu_kernel_takes_the_same_steps_as_torch():
    gaps = _gaps(interpret=True)
    assert gaps["kernel_lu"] < 1e-6 and gaps["kernel_signs"] == 0.0, gaps


def test_the_one_program_cholesky_gives_r_and_its_inverse_and_flags_a_singular_gram():
    gaps = _gaps(interpret=True)
    assert gaps["kernel_r"] < 1e-5 and gaps["kernel_r_inverse"] < 1e-5, gaps
    assert gaps["kernel_flags_good"] == 0.0 and gaps["kernel_flags_singular"] == 1.0, gaps
