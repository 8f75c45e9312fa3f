"""`qrsup export`: one self-contained contest file that runs where only torch and triton exist,
passes the judge, and never holds the contest's forbidden word."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from qrsup.agents.store import Store
from qrsup.kernels.checker import check_factors
from qrsup.kernels.judge.static_checks import CONTEST_FORBIDDEN_WORDS, find_forbidden_word
from qrsup.kernels.schema import Candidate
from qrsup.supervisor.bundle import BundleError, bundle_candidate, rename_imports
from qrsup.supervisor.cli import main

from tests.conftest import CANDIDATES
from tests.test_cli_judge import run_cli
from tests.tui_sessions import frozen_session

SITE_PACKAGES = Path(torch.__file__).resolve().parents[1]
# Runs a submission with the standard library and torch's site-packages alone: no site hooks
# (-S: no editable-install finder), no environment (-I), and any qrsup import refused outright.
RUNNER = """\
import importlib.abc, importlib.util, sys
sys.path.append({site!r})

class NoQrsup(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "qrsup" or name.startswith("qrsup."):
            raise ImportError("qrsup is not installed here")

sys.meta_path.insert(0, NoQrsup())
spec = importlib.util.spec_from_file_location("submission", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["submission"] = module
spec.loader.exec_module(module)
import torch
a = torch.randn(3, 40, 40, generator=torch.Generator().manual_seed(5))
h, tau = module.custom_kernel(a.clone())
torch.save({{"a": a, "h": h, "tau": tau, "modules": sorted(sys.modules)}}, sys.argv[2])
"""
SHIPPED = CANDIDATES / "fast_geqrf.py"
BLOCKED = CANDIDATES / "blocked_wy.py"


def export(candidate: Path | str, out: Path, *extra: str) -> Path:
    assert main(["export", str(candidate), "-o", str(out), *extra]) == 0
    return out


def run_without_qrsup(submission: Path, tmp_path: Path, interpret: bool) -> dict:
    """What the submission returns for one input, imported where qrsup cannot be."""
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER.format(site=str(SITE_PACKAGES)))
    out = tmp_path / "out.pt"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(runner), str(submission), str(out)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return torch.load(out)


@pytest.mark.parametrize(
    ("candidate", "interpret", "ran"),
    [
        (SHIPPED, True, "kernels.fast.panel"),  # the Triton kernels, in the CPU interpreter
        (BLOCKED, False, "kernels.blocked_wy"),
    ],
)
def test_exported_candidate_runs_where_only_torch_and_triton_exist(
    tmp_path, candidate, interpret, ran
):
    submission = export(candidate, tmp_path / "submission.py")
    assert find_forbidden_word(submission.read_text(), CONTEST_FORBIDDEN_WORDS) == ("", 0)
    result = run_without_qrsup(submission, tmp_path, interpret)
    check = check_factors(result["a"], result["h"], result["tau"])
    assert check.ok, check.reason
    bundled = [m for m in result["modules"] if m.startswith("qrsup_bundle_")]
    assert any(m.endswith(ran) for m in bundled)
    assert not any(m == "qrsup" or m.startswith("qrsup.") for m in result["modules"])


def judged(submission: Path, verb: str) -> str:
    """`qrsup test|bench` on the smoke suite; its output, once it passed."""
    result = run_cli(verb, str(submission), "--suite", "smoke")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "verdict: pass" in result.stdout
    return result.stdout


# The blocked-WY export, a `qrsup test` run of over 7 s here, runs with -m e2e.
@pytest.mark.parametrize("candidate", [SHIPPED, pytest.param(BLOCKED, marks=pytest.mark.e2e)])
def test_exported_candidate_passes_qrsup_test_on_the_smoke_suite(tmp_path, candidate):
    judged(export(candidate, tmp_path / "submission.py"), "test")


@pytest.mark.slow  # a minute or more each on two busy cores
@pytest.mark.parametrize("candidate", [SHIPPED, BLOCKED])
def test_exported_candidate_passes_qrsup_bench_on_the_smoke_suite(tmp_path, candidate):
    assert "geomean:" in judged(export(candidate, tmp_path / "submission.py"), "bench")


@pytest.mark.e2e
def test_exported_fast_kernel_passes_the_judge_in_the_triton_interpreter(tmp_path, tiny_suite):
    """The bundled Triton kernels themselves, behind the judge's boundary (small specs only:
    the interpreter takes minutes for the smoke suite)."""
    submission = export(SHIPPED, tmp_path / "submission.py")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    for verb in ("test", "bench"):
        command = [sys.executable, "-m", "qrsup.supervisor.cli", verb, str(submission)]
        result = subprocess.run(
            [*command, "--suite", str(tiny_suite)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


@pytest.fixture
def tiny_suite(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n[[tests]]\nbatch = 2\nn = 20\n[[benchmarks]]\nbatch = 2\nn = 24\n'
    )
    return path


def test_a_stored_candidate_exports_by_its_id(tmp_path):
    paths = frozen_session(tmp_path)
    store = Store(paths.store)
    row = Candidate(
        "c-0123456789", "hash-blocked", BLOCKED.read_text(), None, "a1", "exploit",
        "blocked_wy", "the shipped blocked-WY config", None, time.time(),
    )  # fmt: skip
    store.add_candidate(row)
    store.close()
    workspace = paths.root.parent.parent
    out = tmp_path / "sub.py"
    export("c-0123456789", out, "--workspace", str(workspace), "--session", "frozen")
    text = out.read_text()
    assert "candidate c-0123456789 of session frozen" in text
    assert "kernels.blocked_wy" in text and "def custom_kernel" in text


def test_a_candidate_that_imports_nothing_of_qrsup_is_exported_as_it_is(tmp_path):
    source = tmp_path / "plain.py"
    source.write_text((CANDIDATES / "torch_geqrf.py").read_text())
    assert export(source, tmp_path / "out.py").read_text() == source.read_text()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.py", "candidate file not found"),
        (lambda d: "c-ffffffffff", "no session 'default'"),
        (lambda d: _write(d / "empty.py", "x = 1\n"), "does not define custom_kernel"),
        (
            lambda d: _write(
                d / "side.py", "# a side Stream\ndef custom_kernel(a):\n    return a\n"
            ),
            "forbidden word",
        ),
        (
            lambda d: _write(d / "rich.py", "import rich\ndef custom_kernel(a): ...\n"),
            "imports rich, which a contest machine lacks",
        ),
    ],
)
def test_bad_candidate_gets_one_line_and_exit_2(tmp_path, capsys, make, message):
    candidate, out = make(tmp_path), tmp_path / "out.py"
    assert main(["export", str(candidate), "-o", str(out), "--workspace", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("qrsup: error:") and message in err
    assert not out.exists()


def test_unknown_candidate_id_of_a_session_is_named(tmp_path, capsys):
    paths = frozen_session(tmp_path)
    workspace = str(paths.root.parent.parent)
    args = ["export", "c-ffffffffff", "--workspace", workspace, "--session", "frozen"]
    assert main([*args, "-o", str(tmp_path / "out.py")]) == 2
    assert "no candidate c-ffffffffff in session 'frozen'" in capsys.readouterr().err


def test_an_existing_output_is_kept_unless_forced(tmp_path, capsys):
    out = _write(tmp_path / "submission.py", "mine\n")
    assert main(["export", str(BLOCKED), "-o", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "mine\n"
    export(BLOCKED, out, "--force")
    assert "def custom_kernel" in out.read_text()


def test_an_output_that_cannot_be_written_is_one_line(tmp_path, capsys):
    blocker = _write(tmp_path / "not_a_folder", "")
    assert main(["export", str(BLOCKED), "-o", str(blocker / "submission.py")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot write" in err


def test_a_plain_import_of_the_package_still_binds_its_name():
    source = "import os, qrsup.kernels.phases\nfrom qrsup.kernels import blocked_wy as b\n"
    renamed = rename_imports(source, "root_x")
    assert renamed.splitlines() == [
        "import os, root_x.kernels.phases; import root_x as qrsup",
        "from root_x.kernels import blocked_wy as b",
    ]


def test_imports_only_a_type_checker_sees_are_not_bundled():
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import textual\n"
        "    from qrsup.supervisor.board import Board\n"
        "from qrsup.kernels.blocked_wy import geqrf_blocked\n"
        "def custom_kernel(a):\n    return geqrf_blocked(a)\n"
    )
    names = {m.name for m in bundle_candidate(source, "typed.py").modules}
    assert "kernels.blocked_wy" in names and "supervisor.board" not in names


def test_a_module_the_package_lacks_is_named():
    source = "from qrsup.kernels.nowhere import x\ndef custom_kernel(a):\n    return a\n"
    with pytest.raises(BundleError, match=r"needs qrsup\.kernels\.nowhere"):
        bundle_candidate(source, "lost.py")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
