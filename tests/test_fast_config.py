"""The fast kernel's configs file: the shipped one is valid, and bad ones are refused clearly."""

import dataclasses
import itertools
import tomllib
from pathlib import Path

import pytest
from qrsup.kernels.fast.config import (
    DEFAULT_CONFIGS,
    ConfigError,
    dump_config,
    load_config,
    parse_config,
)
from qrsup.kernels.fast.plan import (
    SPLIT_SHARED_BYTES,
    SPLIT_SHARED_BYTES_PER_ELEM,
    FusedOp,
    LookaheadOp,
    OuterJoinOp,
    PanelOp,
    SplitPanelOp,
    TFactorOp,
    UpdateOp,
    make_plan,
)


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
    assert config.for_shape(640, 512).name == "tuned"


def _with_tables(**tables: int) -> dict:
    """The shipped file plus, per `smNN=width`, a table for that architecture whose every class
    has that panel width (a value each table can be told by)."""
    raw = _shipped()
    for key, width in tables.items():
        raw[key] = {"shape": [{**row, "panel_width": width} for row in raw["shape"]]}
    return raw


def test_the_shipped_configs_are_sm90s_and_every_gpu_falls_back_to_them() -> None:
    config = load_config(DEFAULT_CONFIGS)
    assert config.home == 90 and set(config.tables) == {90}
    for arch in (None, 80, 90, 100, 120):  # the CPU, an A100, an H200, a B200, a newer GPU
        assert config.for_arch(arch).arch == 90
        assert config.for_arch(arch).for_shape(640, 512) == config.for_shape(640, 512)


def test_a_gpu_takes_its_own_table_else_the_nearest_the_lower_on_a_tie() -> None:
    config = parse_config(_with_tables(sm100=64, sm120=8), Path("tables.toml"))
    chosen = {arch: config.for_arch(arch).arch for arch in (None, 80, 90, 95, 100, 103, 130)}
    assert chosen == {None: 90, 80: 90, 90: 90, 95: 90, 100: 100, 103: 100, 130: 120}
    assert config.for_arch(100).for_shape(640, 512).panel_width == 64
    assert config.for_arch(130).for_shape(640, 512).panel_width == 8


def test_a_file_without_arch_serves_every_gpu_without_a_table_of_its_own() -> None:
    raw = _with_tables(sm100=64)
    del raw["arch"]
    config = parse_config(raw, Path("generic.toml"))
    assert config.home is None
    assert config.for_arch(90).arch is None and config.for_arch(100).arch == 100


def test_tables_round_trip_and_a_tuner_adds_its_gpus_table_beside_the_others() -> None:
    config = parse_config(_with_tables(sm100=64), Path("tables.toml"))
    assert parse_config(
        tomllib.loads(dump_config(config)), Path("again.toml")
    ) == dataclasses.replace(config, source=Path("again.toml"))
    on_b300 = config.for_arch(103)  # no table of its own: the B200's is nearest
    shapes = tuple(dataclasses.replace(s, panel_width=16) for s in on_b300.shapes)
    written = parse_config(tomllib.loads(dump_config(on_b300.with_table(103, shapes))), Path("w"))
    assert set(written.tables) == {90, 100, 103}
    assert written.for_arch(103).for_shape(640, 512).panel_width == 16
    assert written.for_arch(100).for_shape(640, 512).panel_width == 64
    assert written.tables[90] == config.tables[90]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"arch": "sm90"}, "arch must be a compute capability"),
        ({"sm90": {"shape": []}}, "sm90 is the file's own arch"),
        ({"h200": {"shape": []}}, "unknown key 'h200'"),
        ({"sm100": {"shape": []}}, "needs at least one"),
    ],
)
def test_bad_architecture_tables_are_refused(change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({**_shipped(), **change}, Path("bad.toml"))


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
    """One-program panels (row-split ones are held to their slab tiles below; n ≤ 32 ships on
    the warp path, which has none)."""
    config = load_config(DEFAULT_CONFIGS)
    for n in (1, 31, 33, 100, 512, 1000, 4096):
        shape = dataclasses.replace(config.for_shape(2, n), panel_split_rows=0, path="blocked")
        plan = make_plan(2, n, shape)
        assert plan is not None
        panels = plan.panels
        assert panels[0].col == 0
        for panel, following in itertools.pairwise(panels):
            assert following.col == panel.col + panel.nb
        assert panels[-1].col < n <= panels[-1].col + panels[-1].nb
        for panel in panels:
            assert panel.block_m >= n - panel.col
            assert panel.block_m * panel.nb <= shape.max_panel_elems
            assert panel.t_offset + panel.nb <= plan.t_width


def test_the_panel_register_cap_holds_only_panels_of_four_warps_or_more() -> None:
    """At 640 × 512 capped at 96, the 512-row panels take 4 warps and the cap; the short panels
    near the end, of fewer warps, already fit eight an SM and are left to ptxas."""
    shipped = load_config(DEFAULT_CONFIGS).for_shape(640, 512)
    assert {p.max_registers for p in make_plan(640, 512, shipped).panels} == {0}
    capped = dataclasses.replace(shipped, panel_max_registers=96)
    caps = {(p.warps, p.max_registers) for p in make_plan(640, 512, capped).panels}
    assert (4, 96) in caps and (1, 0) in caps
    assert all(cap == (96 if warps >= 4 else 0) for warps, cap in caps)


def test_inner_updates_alone_take_the_inner_register_cap() -> None:
    shape = load_config(DEFAULT_CONFIGS).for_shape(640, 512)
    for trailing_cap in (0, 168):
        capped = dataclasses.replace(
            shape, inner_update_max_registers=128, update_max_registers=trailing_cap
        )
        updates = [op for op in make_plan(640, 512, capped).ops if isinstance(op, UpdateOp)]
        inner = {op.max_registers for op in updates if op.nb < capped.block_width}
        trailing = {op.max_registers for op in updates if op.nb == capped.block_width}
        assert (inner, trailing) == ({128}, {trailing_cap})


def test_blocks_update_the_trailing_matrix_once_each() -> None:
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(2, 512), block_width=128, panel_width=32
    )
    plan = make_plan(640, 512, shape)
    assert plan is not None
    trailing = [op for op in plan.ops if isinstance(op, UpdateOp) and op.nb == 128]
    assert [op.c_start for op in trailing] == [128, 256, 384]
    assert sum(isinstance(op, TFactorOp) for op in plan.ops) == 4


def test_updates_inside_a_block_take_the_inner_tile_and_trailing_ones_the_update_tile() -> None:
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(640, 512),
        block_width=64,
        panel_width=16,
        update_block_m=64,
        update_block_n=64,
        update_warps=4,
        inner_update_block_m=128,
        inner_update_block_n=16,
        inner_update_warps=2,
    )
    plan = make_plan(640, 512, shape)
    assert plan is not None
    updates = [op for op in plan.ops if isinstance(op, UpdateOp)]
    inner = [op for op in updates if op.nb == 16]
    trailing = [op for op in updates if op.nb == 64]
    assert len(inner) == 8 * 3 and len(trailing) == 7
    assert {(op.block_m, op.block_n, op.warps) for op in inner} == {(128, 16, 2)}
    assert {(op.block_m, op.block_n, op.warps) for op in trailing} == {(64, 64, 4)}


def test_dumped_configs_read_back_unchanged(tmp_path: Path) -> None:
    config = load_config(DEFAULT_CONFIGS)
    path = tmp_path / "configs.toml"
    path.write_text(dump_config(config))
    again = load_config(path)
    assert again.space == config.space and again.shapes == config.shapes


def test_an_unknown_precision_or_path_is_refused_even_when_declared() -> None:
    for key, value in (("update_apply_precision", "fp8"), ("path", "magic")):
        raw = _shipped()
        raw["space"][key].append(value)
        raw["shape"][0][key] = value
        with pytest.raises(ConfigError, match=f"{key} = '{value}' is not one of"):
            parse_config(raw, Path("bad.toml"))


def test_fused_path_is_one_launch_where_a_panel_spans_every_row() -> None:
    shape = dataclasses.replace(load_config(DEFAULT_CONFIGS).for_shape(40, 352), path="fused")
    plan = make_plan(40, 352, shape)
    assert plan is not None and len(plan.ops) == 1 and isinstance(plan.ops[0], FusedOp)
    op = plan.ops[0]
    assert op.rows == (512, 256, 128) and op.kb % op.nb == 0
    assert plan.t_width >= op.kb
    too_tall = make_plan(2, 100_000, dataclasses.replace(shape, max_panel_elems=8192))
    assert too_tall is None or not any(isinstance(op, FusedOp) for op in too_tall.ops)


def test_row_split_gram_sizes_its_parts_buffer() -> None:
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(2, 4096), t_gram_rows=256, block_width=64
    )
    plan = make_plan(2, 4096, shape)
    assert plan is not None
    joins = [op for op in plan.ops if isinstance(op, TFactorOp)]
    assert joins and all(op.gram_rows % shape.update_block_m == 0 for op in joins if op.gram_rows)
    assert plan.g_slabs == -(-4096 // 256)
    assert joins[-1].gram_rows == 0 or 4096 - joins[-1].col > 256


def test_lookahead_merges_each_fused_update_with_the_next_panel_and_alternates_t_slots() -> None:
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(640, 512),
        block_width=64,
        panel_width=16,
        update_split_below=0,
        lookahead=True,
    )
    plan = make_plan(640, 512, shape)
    plain = make_plan(640, 512, dataclasses.replace(shape, lookahead=False))
    assert plan is not None and plain is not None
    merged = [op for op in plan.ops if isinstance(op, LookaheadOp)]
    assert len(merged) == len(plain.panels) - 1
    assert sum(isinstance(op, PanelOp) for op in plan.ops) == 1
    # The merged panels read H as the update leaves it; the plain ones (H by columns) a copy.
    plain_panels = [dataclasses.replace(p, mirrored=False) for p in plain.panels]
    assert [dataclasses.replace(p, t_slot=0) for p in plan.panels] == plain_panels
    assert plan.t_slots == 2
    for op in merged:
        assert op.update.c_start == op.panel.col and op.rest_start == op.panel.col + op.panel.nb
        first_of_block = op.panel.t_offset == 0
        assert (op.panel.t_slot != op.update.t_slot) == first_of_block
    split = make_plan(2, 512, dataclasses.replace(shape, update_split_below=65536))
    assert split is not None
    assert not any(isinstance(op, LookaheadOp) for op in split.ops)


@pytest.mark.parametrize(("batch", "n"), [(2, 4096), (8, 2048)])
def test_row_split_panels_take_every_panel_taller_than_a_slab(batch: int, n: int) -> None:
    """Only the slab and join tiles meet the register budget, so panels stay panel_width wide
    where one program holding all rows would have halved them."""
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(batch, n),
        panel_split_rows=256,
        panel_width=32,
        max_panel_elems=32768,
    )
    plan = make_plan(batch, n, shape)
    assert plan is not None
    panels = plan.panels
    assert all(p.nb == shape.panel_width for p in panels if n - p.col > 256)
    for panel in panels:
        rows = n - panel.col
        assert isinstance(panel, SplitPanelOp) == (rows > 256)
        if isinstance(panel, SplitPanelOp):
            assert panel.slabs == -(-rows // 256) and panel.slab_m == 256
            assert max(panel.slab_m, panel.stack_m) * panel.nb <= shape.max_panel_elems
            assert panel.stack_m >= panel.slabs * panel.nb
            assert panel.scratch <= plan.q_elems
    for panel, following in itertools.pairwise(panels):
        assert following.col == panel.col + panel.nb
    shipped = make_plan(batch, n, dataclasses.replace(shape, panel_split_rows=0))
    assert shipped is not None and shipped.q_elems == 0 and len(panels) < len(shipped.panels)


def test_a_row_split_whose_join_would_overflow_shared_memory_is_not_planned() -> None:
    """On an H200, huge.panel_split_rows = 32 at 1×4096 (128 slabs: a 2048×16 join tile) failed
    at launch, asking for 394 240 bytes of shared memory; such panels stay one program's."""
    shape = dataclasses.replace(
        load_config(DEFAULT_CONFIGS).for_shape(1, 4096), panel_split_rows=32
    )
    plan = make_plan(1, 4096, shape)
    assert plan is not None
    split = [p for p in plan.panels if isinstance(p, SplitPanelOp)]
    assert not isinstance(plan.panels[0], SplitPanelOp)
    assert split, "shorter panels, with fewer slabs, are still split"
    for panel in split:
        tile = max(panel.slab_m, panel.stack_m) * panel.nb
        assert tile * SPLIT_SHARED_BYTES_PER_ELEM <= SPLIT_SHARED_BYTES


def test_negative_panel_split_rows_is_refused() -> None:
    raw = _shipped()
    raw["space"]["panel_split_rows"].append(-1)
    raw["shape"][0]["panel_split_rows"] = -1
    with pytest.raises(ConfigError, match="panel_split_rows = -1 must be ≥ 0"):
        parse_config(raw, Path("bad.toml"))


def test_outer_blocks_keep_block_updates_inside_and_update_the_rest_once_each() -> None:
    """Two levels at 8×2048: 64-wide blocks update only their 256-wide outer block, whose T is
    joined from theirs, laid side by side on its diagonal; cuBLAS then updates the rest once."""
    shape = dataclasses.replace(load_config(DEFAULT_CONFIGS).for_shape(8, 2048), block_width=64)
    plan = make_plan(8, 2048, dataclasses.replace(shape, outer_block_width=256))
    assert plan is not None and plan.t_width >= 256
    joins = [op for op in plan.ops if isinstance(op, OuterJoinOp)]
    assert [op.col for op in joins] == list(range(0, 2048 - 256, 256))
    assert {op.starts for op in joins} == {(0, 64, 128, 192)}
    outer = [op for op in plan.ops if isinstance(op, UpdateOp) and op.nb == 256]
    assert [(op.c_start, op.c_end, op.library) for op in outer[:2]] == [
        (256, 2048, True),
        (512, 2048, True),
    ]
    blocks = [op for op in plan.ops if isinstance(op, UpdateOp) and op.nb == 64]
    assert all(op.c_end == (op.col // 256 + 1) * 256 for op in blocks)
    assert {op.t_offset for op in blocks} == {0, 64, 128}
    assert {op.t_offset for op in plan.ops if isinstance(op, TFactorOp)} <= {0, 64, 128, 192}
    for join in joins:
        after = plan.ops[plan.ops.index(join) + 1]
        assert isinstance(after, UpdateOp) and (after.col, after.nb) == (join.col, join.width)


def test_an_outer_block_no_wider_than_a_block_or_ending_the_matrix_changes_nothing() -> None:
    shape = dataclasses.replace(load_config(DEFAULT_CONFIGS).for_shape(8, 2048), block_width=64)
    plain = make_plan(8, 512, dataclasses.replace(shape, outer_block_width=0))
    for width in (64, 512):  # one block per outer block; one outer block for every column
        plan = make_plan(8, 512, dataclasses.replace(shape, outer_block_width=width))
        assert plan is not None and plain is not None
        assert (plan.ops, plan.t_width) == (plain.ops, plain.t_width)


@pytest.mark.parametrize("two_pass", [False, True])
def test_row_split_updates_zero_the_next_one_s_part_of_w_in_the_other_slot(two_pass: bool) -> None:
    """Under `update_w_handover`, at 60×1024 every row-split update but the first finds its part
    of W zeroed by the one before (52 fills → 1); two-pass updates, which store W without a
    fill, end such a chain. Without it each fills its own, in one W buffer."""
    shape = load_config(DEFAULT_CONFIGS).for_shape(60, 1024)
    knobs = dict(update_two_pass=two_pass)
    plain = make_plan(60, 1024, dataclasses.replace(shape, **knobs, update_w_handover=False))
    assert plain is not None and plain.w_slots == 1
    assert not any(isinstance(op, UpdateOp) and (op.w_zeroed or op.w_next) for op in plain.ops)
    plan = make_plan(60, 1024, dataclasses.replace(shape, **knobs, update_w_handover=True))
    assert plan is not None and plan.w_slots == 2
    users = [op for op in plan.ops if isinstance(op, UpdateOp) and op.passes_w]
    assert sum(op.two_pass for op in users) == (11 if two_pass else 0)
    chains = 0
    for before, op in zip([None, *users], users, strict=False):
        chained = before is not None and before.slab_rows > 0 and op.slab_rows > 0
        assert op.w_zeroed == chained
        if chained:
            assert before.w_next == (op.nb, op.c_start, op.c_end)
            assert op.w_slot == 1 - before.w_slot
        else:
            chains += op.slab_rows > 0
            assert before is None or before.w_next is None
    fills = sum(op.slab_rows > 0 and not op.w_zeroed for op in users)
    assert fills == chains == (12 if two_pass else 1)


def test_a_triton_outer_update_reads_another_t_slot_than_the_panel_merged_with_it() -> None:
    """Under look-ahead the outer update runs in one launch with the next outer block's first
    panel, which writes its T while the update programs still read the outer block's: outer
    blocks alternate T slots, as plain blocks do."""
    shape = load_config(DEFAULT_CONFIGS).for_shape(640, 512)
    knobs = dict(outer_block_width=128, outer_update_library="triton", lookahead=True)
    plan = make_plan(640, 512, dataclasses.replace(shape, **knobs, column_major=False))
    assert plan is not None and plan.t_slots == 2
    merged = [op for op in plan.ops if isinstance(op, LookaheadOp) and op.update.nb == 128]
    assert [(op.update.col, op.update.library) for op in merged] == [
        (0, False),
        (128, False),
        (256, False),
    ]
    assert all(op.update.t_slot != op.panel.t_slot for op in merged)
    joins = [op for op in plan.ops if isinstance(op, OuterJoinOp)]
    assert [(op.col, op.t_slot) for op in joins] == [(0, 0), (128, 1), (256, 0)]


def test_a_triton_outer_update_wider_than_one_program_s_t_is_refused() -> None:
    raw = _shipped()
    raw["shape"][0] |= {"outer_block_width": 256, "outer_update_library": "triton"}
    with pytest.raises(
        ConfigError, match='outer_block_width = 256 needs outer_update_library = "cublas"'
    ):
        parse_config(raw, Path("bad.toml"))


@pytest.mark.parametrize("width", [96, -64])
def test_an_outer_block_width_other_than_zero_or_a_power_of_two_is_refused(width: int) -> None:
    raw = _shipped()
    raw["space"]["outer_block_width"].append(width)
    raw["shape"][0]["outer_block_width"] = width
    message = f"outer_block_width = {width} must be 0 or a power of two"
    with pytest.raises(ConfigError, match=message):
        parse_config(raw, Path("bad.toml"))


def test_with_h_by_columns_each_update_stores_the_next_panels_columns_row_major_too() -> None:
    """A panel fed by a Triton update reads the copy that update stored (no copy launch); the
    first panel reads A, and one after a cuBLAS update still takes a copy."""
    shape = load_config(DEFAULT_CONFIGS).for_shape(640, 512)
    for library in ("triton", "cublas"):
        changed = dataclasses.replace(shape, column_major=True, update_library=library)
        plan = make_plan(640, 512, changed)
        assert plan is not None
        for before, op in itertools.pairwise(plan.ops):
            if isinstance(op, PanelOp):
                fed = isinstance(before, UpdateOp) and not before.library
                assert op.mirrored is fed
                assert not fed or (before.mirror, before.c_start) == (op.nb, op.col)
        panels = [op for op in plan.ops if isinstance(op, PanelOp)]
        assert (
            not panels[0].mirrored
            and sum(op.mirrored for op in panels)
            == {
                "triton": len(panels) - 1,
                "cublas": len(panels) - len(range(0, 512, shape.block_width)),
            }[library]
        )
    row_major = make_plan(640, 512, dataclasses.replace(shape, column_major=False))
    assert row_major is not None
    assert not any(
        getattr(op, "mirror", 0) or getattr(op, "mirrored", False) for op in row_major.ops
    )
