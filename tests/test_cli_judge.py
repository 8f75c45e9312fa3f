"""`qrsup test` and `qrsup bench`: one clear line and exit 2 for bad input, 0 only on a pass."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from qrsup.supervisor.cli import main

from tests.conftest import CANDIDATES, CHEATERS


def run_cli(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("qrsup")
    command = [exe] if exe else [sys.executable, "-m", "qrsup.supervisor.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["test", "missing.py"], "candidate file not found"),
        (["test", str(CANDIDATES / "blocked_wy.py"), "--suite", "nope"], "unknown suite 'nope'"),
        (["test", str(CANDIDATES / "blocked_wy.py"), "--seed", "abc"], "--seed must be an integer"),
        (["bench", str(CANDIDATES / "blocked_wy.py"), "--device", "cuda"], "no CUDA device"),
        (["bench", str(CANDIDATES / "blocked_wy.py"), "--device", "tpu"], "--device must be"),
        (["test", str(CHEATERS / "mentions_the_banned_word.py")], "forbidden word"),
        (["frobnicate"], "invalid choice"),
        (["test", str(CANDIDATES / "blocked_wy.py"), "--json", str(CANDIDATES)], "is a directory"),
        (
            ["test", str(CANDIDATES / "blocked_wy.py"), "--suite", "smoke", "--hardening"],
            "the suite 'smoke' names no hardening cases",
        ),
    ],
)
def test_bad_input_gets_one_line_and_exit_2(capsys, args, message):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("qrsup: error:") and message in err


def test_not_python_and_no_custom_kernel(tmp_path, capsys):
    notes = tmp_path / "notes.py"
    notes.write_text("hello there\n")
    assert main(["test", str(notes)]) == 2
    assert "is not Python" in capsys.readouterr().err
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert main(["test", str(empty)]) == 2
    assert "does not define custom_kernel" in capsys.readouterr().err


def test_malformed_suite_toml(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[tests]\n")
    assert main(["test", str(CANDIDATES / "blocked_wy.py"), "--suite", str(bad)]) == 2
    assert "malformed suite TOML" in capsys.readouterr().err


@pytest.mark.e2e  # two whole judge runs, the baseline's and the candidate's: over 8 s here
def test_bench_with_baseline_prints_table_and_writes_json(tiny_suite, tmp_path):
    out = tmp_path / "report.json"
    args = ["bench", str(CANDIDATES / "blocked_wy.py"), "--suite", str(tiny_suite)]
    result = run_cli(*args, "--baseline", "--json", str(out), "--seed", "99")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "geomean:" in result.stdout and "speedup" in result.stdout
    payload = json.loads(out.read_text())
    assert payload["report"]["verdict"] == "pass"
    assert payload["baseline"]["candidate"].endswith("torch_geqrf.py")
    assert payload["report"]["seed"] == 99


@pytest.mark.e2e  # a `qrsup test` run; the markup test below asserts the same exit and verdict
def test_failing_candidate_exits_1(tiny_suite):
    result = run_cli("test", str(CHEATERS / "raises.py"), "--suite", str(tiny_suite))
    assert result.returncode == 1
    assert "verdict: error" in result.stdout


def test_a_candidates_markup_and_escapes_are_printed_as_text_and_the_json_kept(
    tiny_suite, tmp_path
):
    """The reason is the candidate's exception text and the output its own printing: neither
    is read as markup or reaches the terminal as control codes. The JSON's new folder is made."""
    out = tmp_path / "new" / "folder" / "report.json"
    cheater = CHEATERS / "raises_with_markup_and_escapes.py"
    result = run_cli("test", str(cheater), "--suite", str(tiny_suite), "--json", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    # Piped, the progress is plain lines on stderr, and stdout keeps the report alone.
    progress = [line for line in result.stderr.splitlines() if line.startswith("test raises_")]
    assert progress[-1] == "test raises_with_markup_and_escapes.py: test 1/1 2x12 dense c0 → error"
    assert "raises_with_markup_and_escapes.py: calibrate" not in result.stdout
    words = " ".join(result.stdout.split())  # as wrapped to the terminal's width
    assert "custom_kernel raised RuntimeError: [/x] closing tag" in words
    assert "\x1b" not in result.stdout
    assert "verdict: error" in result.stdout
    assert json.loads(out.read_text())["report"]["verdict"] == "error"
