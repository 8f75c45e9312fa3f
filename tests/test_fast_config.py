"""The fast kernel's configs file: the shipped one is valid, and bad ones are refused clearly."""

import tomllib
from pathlib import Path

import pytest

from kernels.fast.config import DEFAULT_CONFIGS, ConfigError, load_config, parse_config
from kernels.fast.plan import make_plan


def _shipped() -> dict:
    return tomllib.loads(DEFAULT_CONFIGS.read_text())


def test_shipped_configs_load_and_cover_every_shape() -> None:
    config = load_config(DEFAULT_CONFIGS)
    for batch, n in ((1, 1), (20, 32), (640, 512), (60, 1024), (2, 4096), (3, 100_000)):
        assert config.for_shape(batch, n).matches(batch, n)


def test_env_var_points_the_loader_at_another_file(tmp_path: Path, monkeypatch) -> None:
    raw = DEFAULT_CONFIGS.read_text().replace('name = "medium"', 'name = "tuned"')
    path = tmp_path / "configs.toml"
    path.write_text(raw)
    monkeypatch.setenv("QRSUP_FAST_CONFIGS", str(path))
    config = load_config()
    assert config.source == path
    assert config.for_shape(60, 1024).name == "tuned"


def test_value_outside_the_declared_space_is_refused() -> None:
    raw = _shipped()
    raw["shape"][0]["panel_width"] = 24
    with pytest.raises(ConfigError, match="panel_width = 24 is outside the space"):
        parse_config(raw, Path("bad.toml"))


def test_precision_of_the_wrong_type_is_refused() -> None:
    raw = _shipped()
    raw["shape"][0]["graph"] = 1
    with pytest.raises(ConfigError, match="graph"):
        parse_config(raw, Path("bad.toml"))


def test_a_bounded_last_class_is_refused_so_no_shape_goes_unconfigured() -> None:
    raw = _shipped()
    raw["shape"][-1]["n_max"] = 4096
    with pytest.raises(ConfigError, match="last shape class"):
        parse_config(raw, Path("bad.toml"))


def test_missing_knob_and_unknown_key_are_named() -> None:
    raw = _shipped()
    del raw["shape"][1]["update_warps"]
    with pytest.raises(ConfigError, match="missing update_warps"):
        parse_config(raw, Path("bad.toml"))
    raw = _shipped()
    raw["shape"][1]["colour"] = "blue"
    with pytest.raises(ConfigError, match="unknown keys"):
        parse_config(raw, Path("bad.toml"))


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")


def test_plan_covers_every_column_and_halves_panels_to_fit_the_register_budget() -> None:
    config = load_config(DEFAULT_CONFIGS)
    for n in (1, 31, 33, 100, 512, 1000, 4096):
        shape = config.for_shape(2, n)
        plan = make_plan(n, shape)
        assert plan is not None
        assert plan.steps[0].col == 0
        for step, following in zip(plan.steps, plan.steps[1:], strict=False):
            assert following.col == step.col + step.nb
        last = plan.steps[-1]
        assert last.col < n <= last.col + last.nb
        for step in plan.steps:
            assert step.block_m >= n - step.col
            assert step.block_m * step.nb <= shape.max_panel_elems
