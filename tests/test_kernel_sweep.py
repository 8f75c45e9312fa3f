"""scripts/kernel_sweep.py's variants are points of the config space. The sweep only runs on a
lent GPU, where a variant naming an unknown class or knob, or a value outside the space, would
cost a scarce device call before anything was timed."""

from __future__ import annotations

from pathlib import Path

import pytest
from qrsup.kernels.fast.config import ConfigError, dump_config, load_config

from tests.conftest import load_script

SWEEP = load_script("kernel_sweep")


def test_every_class_the_sweep_varies_is_a_shipped_class() -> None:
    assert set(SWEEP.VARIANTS) <= {shape.name for shape in load_config().shapes}


@pytest.mark.parametrize("name", sorted(SWEEP.VARIANTS))
def test_every_variant_is_a_point_of_the_config_space(name: str, tmp_path: Path) -> None:
    """Each variant, written as a configs file and read back, passes config.py's checks."""
    base = load_config()
    for knobs in SWEEP.VARIANTS[name]:
        path = tmp_path / "configs.toml"
        path.write_text(dump_config(SWEEP.with_class(base, name, knobs)))
        varied = load_config(path)
        shape = next(s for s in varied.shapes if s.name == name)
        assert all(getattr(shape, knob) == value for knob, value in knobs.items()), knobs


def test_a_value_outside_the_space_is_caught(tmp_path: Path) -> None:
    """What the test above relies on: reading back refuses a value the space does not list."""
    path = tmp_path / "configs.toml"
    path.write_text(dump_config(SWEEP.with_class(load_config(), "medium", {"panel_width": 48})))
    with pytest.raises(ConfigError):
        load_config(path)


def test_finalists_are_the_shipped_point_and_the_fastest_of_the_screen() -> None:
    """Only finalists are timed on every spec of a class, so the shipped point must be among them
    whatever its screen time, and variants the screen did not reach or that failed stay out."""
    rows: list[dict[str, object]] = [
        {"knobs": {}, "screen_ms": 5.0},
        {"knobs": {"a": 1}, "screen_ms": 4.0},
        {"knobs": {"b": 1}, "screen_ms": 6.0},
        {"knobs": {"c": 1}, "screen_ms": 3.0},
        {"knobs": {"d": 1}},  # the screen ran out of time before it
        {"knobs": {"e": 1}, "screen_ms": float("inf")},
    ]
    chosen = SWEEP.finalists(rows, keep=2)
    assert [r["knobs"] for r in chosen] == [{}, {"c": 1}, {"a": 1}]
    assert SWEEP.finalists(rows[1:], keep=9) == [rows[3], rows[1], rows[2]]
