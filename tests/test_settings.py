"""qrsup.toml: optional, typed, and every bad value a clear one-line error."""

from __future__ import annotations

import pytest
from qrsup.agents.settings import PATIENCE_S, SettingsError, load_settings
from qrsup.kernels.judge.sandbox import IsolationSettings

from tests.conftest import CANDIDATES
from tests.test_cli_judge import run_cli


def test_no_file_gives_the_defaults(tmp_path):
    settings = load_settings(tmp_path)
    assert settings.judge == IsolationSettings()
    assert settings.warm_referees is True
    assert settings.compile_patience_s == PATIENCE_S


def test_loop_table_sets_the_compile_patience(tmp_path):
    (tmp_path / "qrsup.toml").write_text("[loop]\ncompile_patience_s = 90\n")
    assert load_settings(tmp_path).compile_patience_s == 90.0


def test_judge_table_sets_the_boundary(tmp_path):
    (tmp_path / "qrsup.toml").write_text(
        '[judge]\nisolation = "required"\nuser = "someone"\nprivate_dir_mb = 64\n'
        "tmp_mb = 16\nmax_processes = 100\nwarm = false\n"
    )
    settings = load_settings(tmp_path)
    assert settings.judge == IsolationSettings("required", "someone", 64 * 2**20, 16 * 2**20, 100)
    assert settings.warm_referees is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[judge\n", "qrsup.toml:"),
        ('[judge]\nisolation = "sometimes"\n', "isolation mode must be one of"),
        ("[judge]\nprivate_dir_mb = -1\n", "private_dir_bytes must be positive"),
        ('[judge]\nmax_processes = "many"\n', "invalid literal"),
        ("[judge]\nusr = 'x'\n", "unknown [judge] key(s): usr"),
        ('[judge]\nwarm = "yes"\n', "[judge] warm must be true or false, got 'yes'"),
        ("judge = 3\n", "[judge] must be a table"),
        ("[loop]\ncompile_patience_s = 0\n", "compile_patience_s must be a number of seconds > 0"),
        ('[loop]\ncompile_patience_s = "long"\n', "got 'long'"),
        ("[loop]\npatience = 3\n", "unknown [loop] key(s): patience"),
    ],
)
def test_bad_settings_are_one_clear_error(tmp_path, text, message):
    (tmp_path / "qrsup.toml").write_text(text)
    with pytest.raises(SettingsError, match=r"qrsup\.toml") as caught:
        load_settings(tmp_path)
    assert message in str(caught.value)


def test_bench_with_a_bad_qrsup_toml_exits_2_with_one_line(tmp_path):
    (tmp_path / "qrsup.toml").write_text('[judge]\nisolation = "sometimes"\n')
    result = run_cli("--workspace", str(tmp_path), "test", str(CANDIDATES / "torch_geqrf.py"))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "isolation mode must be one of" in result.stderr
