"""Configs of the fast geqrf: a declared space and one chosen point per shape class, from TOML.

The kernel reads them from `configs.toml` beside this file, or from the file named by
`QRSUP_FAST_CONFIGS` (or passed explicitly), so a tuner can search the space without editing code.
The shipped file is package data, read through importlib.resources, so an exported submission
(`qrsup export`) that carries the package in memory carries its configs too.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

CONFIGS_ENV = "QRSUP_FAST_CONFIGS"
DEFAULT_CONFIGS: Traversable = files(__package__) / "configs.toml"  # a Path when installed


class ConfigError(ValueError):
    """A configs file that does not describe a valid config space and choice."""


@dataclass(frozen=True)
class ShapeConfig:
    """The chosen knobs for one shape class (see kernels/README.md for what each one moves)."""

    name: str
    """Label of the class, for reports."""
    n_max: int | None
    """Largest n of the class; None means unbounded."""
    batch_max: int | None
    """Largest batch of the class; None means unbounded."""
    block_width: int
    """Columns per block: the trailing matrix is updated once per block (≥ the panel width)."""
    panel_width: int
    """Columns per panel while the register budget allows it; panels of a block are joined."""
    max_panel_elems: int
    """Register budget of the panel program: rows × columns; wider panels are halved to fit."""
    panel_elems_per_thread: int
    """Panel elements each thread holds; sets the panel program's warps."""
    panel_pair_reduce: bool
    """One two-output reduction per reflector instead of two sums (GPU only; slow interpreted)."""
    panel_split_rows: int
    """Rows per program of a row-split panel (0: one program per matrix factors each panel).
    A panel taller than this is factored by slabs in parallel and rebuilt (panel_split.py), so
    its width is no longer bound by all its rows fitting one program's registers."""
    update_block_m: int
    """Rows per step of the trailing-update programs."""
    update_block_n: int
    """Trailing columns per update program."""
    update_warps: int
    """Warps per update program."""
    update_stages: int
    """Software-pipelining depth of the update's row loops."""
    update_split_below: int
    """Row-split the update when batch × column blocks is below this many programs (0: never)."""
    update_split_rows: int
    """Rows per program of the row-split update's Vᵀ·C sum."""
    update_precision: str
    """tl.dot precision of Vᵀ·C and Tᵀ·W, the products that contract against the trailing matrix."""
    update_apply_precision: str
    """tl.dot precision of V·W, the update's last product (V's entries are bounded by 1)."""
    t_precision: str
    """tl.dot precision of the T join's VᵀV and its triangular products."""
    t_gram_rows: int
    """Rows per program of the T join's VᵀV, summed over row slabs in parallel (0: one program)."""
    path: str
    """Algorithm: "blocked" launches every panel, T join and update; "fused" runs one program
    per matrix that does them all (the matrix must fit its register budget as one panel column)."""
    fused_warps: int
    """Warps of the fused path's program, which runs every stage of one matrix."""
    graph: bool
    """Capture the launch sequence once per shape and replay it as a CUDA graph."""
    lookahead: bool
    """Merge each fused update with the panel that follows it into one launch: the panel's own
    columns are updated and factored by one program per matrix while the other programs update
    the rest, so the panel's reflector chain overlaps the trailing update (lookahead.py)."""

    def matches(self, batch: int, n: int) -> bool:
        """Whether a batch × n × n input belongs to this class."""
        fits_n = self.n_max is None or n <= self.n_max
        fits_batch = self.batch_max is None or batch <= self.batch_max
        return fits_n and fits_batch


PRECISIONS = ("ieee", "tf32x3", "tf32")
PATHS = ("blocked", "fused")
_CHOICES = {
    "update_precision": PRECISIONS,
    "update_apply_precision": PRECISIONS,
    "t_precision": PRECISIONS,
    "path": PATHS,
}
_BOUNDS = ("n_max", "batch_max")
KNOBS = tuple(f.name for f in fields(ShapeConfig) if f.name not in ("name", *_BOUNDS))


@dataclass(frozen=True)
class Config:
    """The declared space (allowed values per knob) and the ordered shape classes."""

    space: dict[str, tuple[object, ...]]
    shapes: tuple[ShapeConfig, ...]
    source: Path

    def for_shape(self, batch: int, n: int) -> ShapeConfig:
        """The first shape class that holds a batch × n × n input."""
        for shape in self.shapes:
            if shape.matches(batch, n):
                return shape
        raise ConfigError(f"{self.source}: no shape class holds batch={batch}, n={n}")


def load_config(path: str | Path | Traversable | None = None) -> Config:
    """Read and validate a configs file: `path`, else $QRSUP_FAST_CONFIGS, else the shipped one."""
    chosen = path or os.environ.get(CONFIGS_ENV) or DEFAULT_CONFIGS
    chosen = Path(chosen) if isinstance(chosen, str) else chosen
    try:
        raw = tomllib.loads(chosen.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read configs file {chosen}: {error}") from error
    return parse_config(raw, Path(str(chosen)))


def parse_config(raw: dict[str, object], source: Path) -> Config:
    """Validate parsed TOML against the schema: every knob present and inside the space."""
    space = _parse_space(raw.get("space"), source)
    rows = raw.get("shape")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{source}: needs at least one [[shape]] table")
    shapes = tuple(_parse_shape(row, space, f"{source}: shape {i}") for i, row in enumerate(rows))
    last = shapes[-1]
    if last.n_max is not None or last.batch_max is not None:
        raise ConfigError(f"{source}: the last shape class must leave out n_max and batch_max")
    return Config(space=space, shapes=shapes, source=source)


def dump_config(config: Config) -> str:
    """TOML text that `parse_config` reads back as `config` (how a tuner writes its choice)."""
    lines = ["[space]"]
    lines += [
        f"{key} = [{', '.join(_toml(v) for v in values)}]" for key, values in config.space.items()
    ]
    for shape in config.shapes:
        lines += ["", "[[shape]]", f"name = {_toml(shape.name)}"]
        lines += [f"{key} = {_toml(getattr(shape, key))}" for key in _BOUNDS if getattr(shape, key)]
        lines += [f"{key} = {_toml(getattr(shape, key))}" for key in KNOBS]
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _parse_space(raw: object, source: Path) -> dict[str, tuple[object, ...]]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: needs a [space] table")
    missing = [k for k in KNOBS if k not in raw]
    unknown = [k for k in raw if k not in KNOBS]
    if missing or unknown:
        raise ConfigError(f"{source}: [space] missing {missing}, unknown {unknown}")
    space: dict[str, tuple[object, ...]] = {}
    for key in KNOBS:
        values = raw[key]
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{source}: [space].{key} must be a non-empty list")
        space[key] = tuple(values)
    return space


def _parse_shape(raw: object, space: dict[str, tuple[object, ...]], where: str) -> ShapeConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table")
    allowed = {"name", *_BOUNDS, *KNOBS}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}")
    values: dict[str, object] = {"name": str(raw.get("name", where))}
    for key in _BOUNDS:
        bound = raw.get(key)
        if bound is not None and (not isinstance(bound, int) or bound < 1):
            raise ConfigError(f"{where}: {key} must be a positive integer, got {bound!r}")
        values[key] = bound
    for key in KNOBS:
        if key not in raw:
            raise ConfigError(f"{where}: missing {key}")
        if raw[key] not in space[key] or type(raw[key]) is not type(space[key][0]):
            raise ConfigError(f"{where}: {key} = {raw[key]!r} is outside the space {space[key]}")
        values[key] = raw[key]
    shape = ShapeConfig(**values)  # type: ignore[arg-type]
    for key in (
        "block_width",
        "panel_width",
        "max_panel_elems",
        "update_block_m",
        "update_block_n",
        "fused_warps",
    ):
        value = getattr(shape, key)
        if value & (value - 1):
            raise ConfigError(f"{where}: {key} = {value} must be a power of two")
    for key, known in _CHOICES.items():
        if getattr(shape, key) not in known:
            raise ConfigError(f"{where}: {key} = {getattr(shape, key)!r} is not one of {known}")
    for key in ("t_gram_rows", "panel_split_rows"):
        if getattr(shape, key) < 0:
            raise ConfigError(f"{where}: {key} = {getattr(shape, key)} must be ≥ 0")
    return shape
