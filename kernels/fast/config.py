"""Configs of the fast geqrf: a declared space and one chosen point per shape class, from TOML.

The kernel reads them from `configs.toml` beside this file, or from the file named by
`QRSUP_FAST_CONFIGS` (or passed explicitly), so a tuner can search the space without editing code.
The shipped file is package data, read through importlib.resources, so an exported submission
(`qrsup export`) that carries the package in memory carries its configs too.

Configs are keyed by GPU architecture. A file's top-level `[[shape]]` list is the table tuned on
its top-level `arch` (90: an H100 or H200; no `arch` means any GPU), and `[[sm100.shape]]` lists
add tables for other architectures. A GPU uses its own table or, failing that, the nearest known
one: an unknown GPU runs correctly on configs tuned elsewhere, and a tuner there writes its own.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, fields, replace
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
    outer_block_width: int
    """Columns per outer block, a second blocking level (0: none). Where wider than a block,
    each block's trailing update stops at the outer block's end; the blocks' T's are then joined
    into the outer block's and the rest of the matrix is updated once per outer block by
    `outer_update_library`: rank-`outer_block_width` products in place of narrow ones."""
    outer_update_library: str
    """Who runs an outer block's update of the rest of the matrix: "cublas", three batched
    GEMMs, where "tf32x3" and "f16x3" run as IEEE (library_update.py), or "triton", the fused
    update at the class's tiles and precisions (update.py), whose program holds the outer
    block's whole T: at most 128 columns wide. The outer block's T is joined by cuBLAS either
    way."""
    panel_width: int
    """Columns per panel while the register budget allows it; panels of a block are joined."""
    max_panel_elems: int
    """Register budget of the panel program: rows × columns; wider panels are halved to fit."""
    panel_elems_per_thread: int
    """Panel elements each thread holds; sets the panel program's warps."""
    panel_max_registers: int
    """Register cap per thread of one-program panels of 4 warps or more (0: ptxas decides).
    A cap lets more programs share an SM: 640 matrices at 128 registers a thread fit 528
    programs at once on an H200, so each panel ran in two rounds; at 96 all fit, spilling a
    little to L1."""
    panel_pair_reduce: bool
    """One two-output reduction per reflector instead of two sums (GPU only; slow interpreted)."""
    panel_unroll: bool
    """The reflector steps of one-program panels (look-ahead launches' included) unrolled at
    compile time: each step's column is then a constant, so its selects vanish (32 × 32: 34%
    fewer sm_90 instructions), for 7–9 times the code and 6–20 times the compile time."""
    panel_gather: bool
    """Each reflector step of one-program panels (look-ahead launches' included) takes column i
    by a gather along the lanes (one shuffle per element) rather than a masked sum across them:
    a 256 × 16 look-ahead panel's step compiles to 331 sm_90 instructions instead of 418."""
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
    update_max_registers: int
    """Register cap per thread of the trailing updates, look-ahead launches included (0: ptxas
    decides). At 40 × 352 a look-ahead launch takes 190 registers, so 2 programs share an SM
    and 360–440 programs run in two rounds; at 168 (no spill) 3 share one."""
    inner_update_block_m: int
    """Rows per step of the updates inside a block (panel_width reflectors on the block's own
    columns, fewer than block_width): narrower and shorter-lived than the trailing updates."""
    inner_update_block_n: int
    """Columns per program of the updates inside a block."""
    inner_update_warps: int
    """Warps per program of the updates inside a block."""
    inner_update_max_registers: int
    """Register cap per thread of the updates inside a block (0: ptxas decides). At 640 × 512
    a 16-reflector update takes 182–187 registers, so 2 programs share an SM; at 128 (no
    spill with Triton 3.6) 4 do, within the 36 KB of shared memory each takes."""
    update_apply_ahead: bool
    """Load C for the fused trailing update's second walk `update_stages` row steps ahead, into
    shared memory, as V already is: that load feeds no product, so without this Triton loads it
    in the step that uses it (update.py's apply_columns). At 640 × 512's 64-reflector update it
    takes 98 → 112 KB of shared memory a program, which still lets 2 share an SM."""
    inner_update_apply_ahead: bool
    """The same for the fused updates inside a block."""
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
    update_library: str
    """Who runs a block's trailing update: "triton" (update.py, update_split.py) or "cublas",
    three batched fp32 GEMMs (Vᵀ·C, Tᵀ·W, C − V·W) at the two update precisions whatever torch's
    TF32 setting, "tf32x3" as IEEE unless `update_library_split` and "f16x3" always as IEEE
    (library_update.py). Updates inside a block stay Triton's."""
    t_precision: str
    """tl.dot precision of the T join's VᵀV and its triangular products."""
    t_gram_rows: int
    """Rows per program of the T join's VᵀV, summed over row slabs in parallel (0: one program)."""
    path: str
    """Algorithm: "blocked" launches every panel, T join and update; "fused" runs one program
    per matrix that does them all (the matrix must fit its register budget as one panel column);
    "warp" factors each matrix of n ≤ 32 in one warp, a column a lane. Shapes a path cannot take
    get the blocked launches."""
    fused_warps: int
    """Warps of the fused path's program, which runs every stage of one matrix."""
    graph: bool
    """Capture the launch sequence once per shape and replay it as a CUDA graph."""
    direct_launch: bool
    """Record the launch sequence once per input layout through Triton's dispatch and make it
    again from the host on later calls, with each call's A, H and τ, instead of a graph's replay
    on copies (direct_launch.py; plans with cuBLAS calls keep `graph`). One-launch plans always
    launch directly."""
    lookahead: bool
    """Merge each fused update with the panel that follows it into one launch: the panel's own
    columns are updated and factored by one program per matrix while the other programs update
    the rest, so the panel's reflector chain overlaps the trailing update (lookahead.py)."""
    block_launch: bool
    """Factor each block (its panels, the update of its own columns after each, its T join) in
    one launch of one program per matrix instead of a launch per stage (block.py); blocks whose
    panels or inner updates split rows keep their launches."""
    update_two_pass: bool
    """Run each trailing update as two launches instead of one program per column block walking
    the rows twice: Tᵀ·Vᵀ·C per column block, then C − V·W with one program per tile (update.py).
    Row-split and cuBLAS updates keep their own launches."""
    inner_update_two_pass: bool
    """The same for the updates inside a block."""
    column_major: bool
    """Hold H column-major, as LAPACK and torch.geqrf return it: each column is then contiguous
    along the rows, the dimension that the panel's reductions, Vᵀ·C and the T join's VᵀV
    contract over, while V·W's operand V turns row-strided. Every kernel takes H's strides; the
    panels alone read a row-major copy of their columns (driver.py), since Triton lays a tile
    loaded down contiguous rows out along them and the panel's steps then cost 1.7–3× more."""
    update_l2_hints: bool
    """Tell L2 what the fused update reads again (V, and C until its second walk: kept) and
    what it does not (C's second read and its stores: evicted first), so the matrices passing
    through the update do not evict the reflectors their neighbours share (update.py)."""
    update_w_by_columns: bool
    """Sum the row-split update's Vᵀ·C as (Cᵀ·V)ᵀ, so that the product's M is the column block
    BN rather than the panel's 16 or 32 reflectors: at BN ≥ 64 sm_90 runs it as a warpgroup
    MMA (update_split.py)."""
    update_w_handover: bool
    """Consecutive row-split updates alternate between two W buffers, and each one's Vᵀ·C
    launch zeroes the next one's part of the other, so a chain of them needs one fill launch
    instead of one each (52 → 1 at 60 × 1024, 192 → 1 at 2 × 4096; plan.py's _hand_over_w).
    On an H100: 60 × 1024 5.208 → 5.162 ms, 8 × 2048 10.059 → 9.902 (docs/benchmarks.md)."""
    update_library_split: bool
    """cuBLAS updates run a "tf32x3" product as TF32 GEMMs of its operands' TF32 splits
    (hi·hi + hi·lo + lo·hi, about fp32's accuracy at the tensor cores' TF32 rate, eight times
    cuBLAS's fp32 one on sm_90) instead of one IEEE GEMM (library_update.py). Triton's updates
    split their own operands whatever this says."""

    def matches(self, batch: int, n: int) -> bool:
        """Whether a batch × n × n input belongs to this class."""
        fits_n = self.n_max is None or n <= self.n_max
        fits_batch = self.batch_max is None or batch <= self.batch_max
        return fits_n and fits_batch


PRECISIONS = ("ieee", "tf32x3", "tf32", "f16x3")  # products.py says what each is
PATHS = ("blocked", "fused", "warp")
UPDATE_LIBRARIES = ("triton", "cublas")
MAX_TRITON_OUTER = 128  # columns of an outer block whose T one Triton update program holds
_CHOICES = {
    "update_library": UPDATE_LIBRARIES,
    "outer_update_library": UPDATE_LIBRARIES,
    "update_precision": PRECISIONS,
    "update_apply_precision": PRECISIONS,
    "t_precision": PRECISIONS,
    "path": PATHS,
}
_BOUNDS = ("n_max", "batch_max")
KNOBS = tuple(f.name for f in fields(ShapeConfig) if f.name not in ("name", *_BOUNDS))


ARCH_TABLE = re.compile(r"sm(\d+)")
Table = tuple[ShapeConfig, ...]


@dataclass(frozen=True)
class Config:
    """The declared space (allowed values per knob) and, per architecture, ordered shape classes.

    `home` is the architecture of the file's top-level table; `arch` names the table in use
    (`shapes`, `for_shape`), the home one until `for_arch` picks another."""

    space: dict[str, tuple[object, ...]]
    tables: dict[int | None, Table]
    source: Path
    home: int | None = None
    arch: int | None = None

    @property
    def shapes(self) -> Table:
        return self.tables[self.arch]

    def for_arch(self, arch: int | None) -> Config:
        """The table for a GPU of compute capability `arch` (90 for sm_90); else a table for
        any GPU (a file without `arch`); else the nearest known one, the lower on a tie."""
        if arch in self.tables or arch is None or self.home is None:
            return replace(self, arch=arch if arch in self.tables else self.home)
        known = [key for key in self.tables if key is not None]
        return replace(self, arch=min(known, key=lambda key: (abs(key - arch), key)))

    def with_table(self, arch: int | None, shapes: Table) -> Config:
        """`shapes` as the table for `arch` (the home one where None), then in use: how a tuner
        on some GPU writes its choice, adding that GPU's table where it had none."""
        key = self.home if arch is None else arch
        return replace(self, tables={**self.tables, key: shapes}, arch=key)

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
    """Validate parsed TOML against the schema: every knob present and inside the space, in
    every architecture's table."""
    space = _parse_space(raw.get("space"), source)
    home = raw.get("arch")
    if home is not None and (type(home) is not int or home < 1):
        raise ConfigError(f"{source}: arch must be a compute capability such as 90, got {home!r}")
    tables = {home: _parse_table(raw.get("shape"), space, f"{source}: ", "[[shape]]")}
    for key, value in raw.items():
        if key in ("space", "shape", "arch"):
            continue
        match = ARCH_TABLE.fullmatch(key)
        if match is None or not isinstance(value, dict) or set(value) != {"shape"}:
            raise ConfigError(f"{source}: unknown key {key!r} (a table is [[smNN.shape]])")
        arch = int(match[1])
        if arch == home:
            raise ConfigError(f"{source}: sm{arch} is the file's own arch: use [[shape]]")
        tables[arch] = _parse_table(value["shape"], space, f"{source}: {key} ", f"[[{key}.shape]]")
    return Config(space=space, tables=tables, source=source, home=home, arch=home)


def _parse_table(
    rows: object, space: dict[str, tuple[object, ...]], where: str, header: str
) -> Table:
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{where}needs at least one {header} table")
    shapes = tuple(_parse_shape(row, space, f"{where}shape {i}") for i, row in enumerate(rows))
    last = shapes[-1]
    if last.n_max is not None or last.batch_max is not None:
        raise ConfigError(f"{where}the last shape class must leave out n_max and batch_max")
    return shapes


def dump_config(config: Config) -> str:
    """TOML text that `parse_config` reads back as `config` (how a tuner writes its choice)."""
    lines = [] if config.home is None else [f"arch = {config.home}", ""]
    lines += ["[space]"]
    lines += [
        f"{key} = [{', '.join(_toml(v) for v in values)}]" for key, values in config.space.items()
    ]
    others = sorted(key for key in config.tables if key != config.home)
    for arch in [config.home, *others]:
        header = "[[shape]]" if arch == config.home else f"[[sm{arch}.shape]]"
        for shape in config.tables[arch]:
            lines += ["", header, f"name = {_toml(shape.name)}"]
            lines += [f"{k} = {_toml(getattr(shape, k))}" for k in _BOUNDS if getattr(shape, k)]
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
        "inner_update_block_m",
        "inner_update_block_n",
        "fused_warps",
    ):
        value = getattr(shape, key)
        if value & (value - 1):
            raise ConfigError(f"{where}: {key} = {value} must be a power of two")
    for key, known in _CHOICES.items():
        if getattr(shape, key) not in known:
            raise ConfigError(f"{where}: {key} = {getattr(shape, key)!r} is not one of {known}")
    if shape.outer_block_width & (shape.outer_block_width - 1):  # every negative one too
        raise ConfigError(
            f"{where}: outer_block_width = {shape.outer_block_width} must be 0 or a power of two"
        )
    if shape.outer_update_library == "triton" and shape.outer_block_width > MAX_TRITON_OUTER:
        raise ConfigError(
            f"{where}: a Triton outer update holds its whole T in one program, so "
            f"outer_block_width = {shape.outer_block_width} needs outer_update_library = "
            f'"cublas" (the Triton one takes at most {MAX_TRITON_OUTER})'
        )
    for key in ("t_gram_rows", "panel_split_rows"):
        if getattr(shape, key) < 0:
            raise ConfigError(f"{where}: {key} = {getattr(shape, key)} must be ≥ 0")
    return shape
