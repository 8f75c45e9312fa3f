"""Host-side schedule: the launches that factor a batch of n × n matrices, and their tile sizes.

Columns go in blocks of `block_width`; a block is factored as panels of `panel_width` (halved
until rows × width fits the panel program's register budget). After each panel but the last, the
rest of its block is updated; then the block's T is joined from its panels' T's and the trailing
matrix is updated once for the whole block. A block of one panel is the plain blocked algorithm.
The fused path runs that same schedule inside one program per matrix: its plan is one launch.
With `panel_split_rows`, a panel taller than that many rows is a SplitPanelOp: its rows are
factored in slabs by many programs per matrix and its Householder form rebuilt (panel_split.py),
so its width is bound by a slab's rows, not all of them.
With `update_library = "cublas"`, each block's trailing update is cuBLAS's (library_update.py).
With `outer_block_width`, blocks are grouped into outer blocks: a block's trailing update stops at
its outer block's end, each block's T sits at its offset in the outer block's T, and once the
outer block is factored an OuterJoinOp joins those T's (cuBLAS) and one update of rank
`outer_block_width`, cuBLAS's or Triton's (`outer_update_library`), covers the rest of the matrix.
With `block_launch`, a block's panels, inner updates and T join are one launch (BlockOp).
With `update_two_pass` (`inner_update_two_pass` inside a block), a Triton update that does not
split rows is two launches that hand W over through the plan's W buffer.
With `lookahead`, each fused update and the panel right after it become one launch
(LookaheadOp); blocks then alternate between two T slots, since the next block's first panel
writes its T while that launch's update programs still read the finished block's T.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from dataclasses import dataclass

from .config import ShapeConfig

MIN_PANEL_WIDTH = 4
MIN_BLOCK_M = 16
MAX_WARPS = 16
# Elements of a row-split panel's tall tiles a thread holds in the join and the rebuild. Both hold
# several such tiles and fp32 products of them: at 2 warps a 256 × 32 join spilled 14.8 KB a thread.
SPLIT_ELEMS_PER_THREAD = 32
REBUILD_MIN_WARPS = 4
REGISTER_BOUND_WARPS = 4
DOT_MIN = 16  # tl.dot needs every dimension ≥ 16
# A row-split panel's slab and join programs stage their tl.dot operands in shared memory. On an
# H200 a 2048×16 join tile asked Triton for 394 240 bytes (12 per element) against the 232 448 one
# program may have, and the launch failed: tiles are kept within that. Compiled for sm_90 ahead of
# time (aot.py, whose check covers the largest tile allowed), 1024×16 and 512×32 ask 197 632 and
# 200 704 bytes.
SPLIT_SHARED_BYTES = 232_448
SPLIT_SHARED_BYTES_PER_ELEM = 12
WARP_MAX_N = 32  # the warp path's columns: one a lane


@dataclass(frozen=True)
class PanelOp:
    """Factor columns [col, col + nb) ∩ [0, n) with a block_m × nb register tile."""

    col: int
    nb: int
    block_m: int
    warps: int
    t_offset: int
    """Where its T goes on the diagonal of the block's T buffer."""
    t_slot: int = 0
    """Which of the plan's T buffers holds its block's T."""
    mirrored: bool = False
    """Its columns were stored row-major by the update before it (column-major H): no copy."""
    max_registers: int = 0
    """maxnreg of its launch (0: ptxas decides): the class's cap for programs of 4 warps or
    more, where registers bound how many share an SM (smaller ones already fit 8 an SM)."""


@dataclass(frozen=True)
class SplitPanelOp:
    """Factor columns [col, col + nb) as `slabs` row slabs of `slab_rows` rows, one program per
    slab, then join them (one program per matrix) and rebuild V by slab (panel_split.py)."""

    col: int
    nb: int
    slab_rows: int
    slabs: int
    slab_m: int
    """Register rows of a slab program (slab_rows padded to a power of two)."""
    stack_m: int
    """Register rows of the join program, which factors the slabs' stacked R's."""
    slab_warps: int
    t_offset: int
    t_slot: int = 0

    @property
    def scratch(self) -> int:
        """Floats per matrix it needs in the plan's Q scratch: X and K, nb × nb per slab each."""
        return 2 * self.slabs * self.nb * self.nb

    @property
    def join_warps(self) -> int:
        """Warps of the join, for its stack_m × nb tiles."""
        return _warps(self.stack_m * self.nb, SPLIT_ELEMS_PER_THREAD)

    @property
    def rebuild_warps(self) -> int:
        """Warps of a slab's V rebuild, for its slab_m × nb fp32 product: 4 at least (a 32-wide
        panel's on 4 warps spilled 5.4 KB a thread)."""
        return max(REBUILD_MIN_WARPS, _warps(self.slab_m * self.nb, SPLIT_ELEMS_PER_THREAD))


@dataclass(frozen=True)
class UpdateOp:
    """Apply the reflectors of columns [col, col + nb) (T at t_offset) to [c_start, c_end)."""

    col: int
    nb: int
    dot_width: int
    """nb padded to a power of two ≥ 16, the width tl.dot sees."""
    t_offset: int
    c_start: int
    c_end: int
    slab_rows: int
    """0: one fused program per column block; else row slabs of this many rows (update_split)."""
    block_m: int
    """Rows per step of its programs."""
    block_n: int
    """Columns per program."""
    warps: int
    t_slot: int = 0
    library: bool = False
    """Run by cuBLAS's batched GEMMs instead of Triton's programs (library_update.py)."""
    two_pass: bool = False
    """Two launches: Tᵀ·Vᵀ·C per column block, then V·W subtracted per tile (update.py)."""
    mirror: int = 0
    """Its first `mirror` columns, the next panel's, are also stored in the panels' row-major
    copy (column-major H only; update.py's store_mirror)."""
    max_registers: int = 0
    """maxnreg of its launches (0: ptxas decides): the class's cap for its kind of update."""
    apply_ahead: bool = False
    """Its one-program launch loads C's second walk ahead, as V's (update.py's apply_columns)."""
    w_slot: int = 0
    """Which of the plan's W buffers its launches hand W over in."""
    w_zeroed: bool = False
    """Its part of W was zeroed by the row-split update before it (`w_next`): no fill."""
    w_next: tuple[int, int, int] | None = None
    """(reflectors, first column, end column) of the next row-split update's part of W, which
    its row-split launch zeroes in the other W buffer (plan.py's _hand_over_w)."""

    @property
    def passes_w(self) -> bool:
        """Whether its launches hand W between them in the plan's W buffer."""
        return bool(self.slab_rows) or self.two_pass


@dataclass(frozen=True)
class TFactorOp:
    """Join the T's of the panels of the block [col, col + width) into the block's T."""

    col: int
    width: int
    nb: int
    dot_width: int
    warps: int
    gram_rows: int
    """0: the join sums VᵀV itself; else row slabs of this many rows sum it first (qr_gram)."""
    t_slot: int = 0
    t_offset: int = 0
    """Where the block's T goes on the diagonal of its outer block's T (0 without one)."""


@dataclass(frozen=True)
class OuterJoinOp:
    """Join the T's of the blocks of the outer block [col, col + width) into its T, with
    cuBLAS's batched GEMMs (library_update.py): the blocks start at `starts` (from col)."""

    col: int
    width: int
    starts: tuple[int, ...]
    t_slot: int = 0

    @property
    def dot_width(self) -> int:
        """The side of the T it writes."""
        return self.width


@dataclass(frozen=True)
class LookaheadOp:
    """One launch: `update`'s reflectors reach `panel`'s columns and `panel` is factored, one
    program per matrix, while the other programs apply `update` to [panel end, update.c_end)."""

    update: UpdateOp
    panel: PanelOp
    warps: int
    """Warps of the launch: the panel's, or the update's where that is more."""

    @property
    def rest_start(self) -> int:
        """First column the update programs own (the panel program owns those before it)."""
        return self.panel.col + self.panel.nb


@dataclass(frozen=True)
class BlockOp:
    """One launch for a whole block: its panels, the update of the block's rest after each, and
    the join of their T's, one program per matrix (block.py)."""

    col: int
    width: int
    nb: int
    panel_m: int
    """Row tile of every panel in the block: the first panel's."""
    block_m: int
    block_n: int
    warps: int
    t_slot: int = 0
    t_offset: int = 0

    @property
    def dot_width(self) -> int:
        """The block's width as tl.dot sees it: the side of the T it joins."""
        return dot_width(self.width)


@dataclass(frozen=True)
class FusedOp:
    """The whole factorization in one program per matrix (fused.py)."""

    rows: tuple[int, int, int]
    """Row tiles of the panels: the first holds n rows, then half and a quarter (each ≥ 16)."""
    nb: int
    kb: int
    warps: int


@dataclass(frozen=True)
class WarpOp:
    """The whole factorization of n ≤ 32 in one warp per matrix, lane c holding column c
    (warp_qr.py)."""

    block: int
    """Side of the register tile: n's next power of two."""


Op = (
    PanelOp | SplitPanelOp | UpdateOp | TFactorOp | OuterJoinOp | FusedOp | LookaheadOp | BlockOp
    | WarpOp
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """Every launch of one factorization, in order, with the scratch sizes they need."""

    batch: int
    n: int
    ops: tuple[Op, ...]
    t_width: int
    """Side of the T buffer."""
    w_width: int
    """Rows of the W buffer of row-split and two-pass updates (0 when no update needs it)."""
    g_slabs: int
    """Parts of G per matrix for row-split T joins (0 when no join splits)."""
    shape: ShapeConfig
    t_slots: int = 1
    """How many T buffers (2 where lookahead overlaps one block's update with the next's panel)."""
    q_elems: int = 0
    """Floats per matrix of the row-split panels' scratch (0 when no panel splits)."""
    w_slots: int = 1
    """How many W buffers (2 where row-split updates zero each other's part of W)."""

    @functools.cached_property
    def h_by_columns(self) -> bool:
        """H is stored by columns where the class sets `column_major`, except on the fused path,
        whose one kernel walks H along contiguous rows."""
        return self.shape.column_major and not isinstance(self.ops[0], FusedOp)

    @functools.cached_property
    def library_updates(self) -> bool:
        """Whether any update runs through cuBLAS (and so needs the per-matrix scale): asked on
        every eager call, so walked once per plan."""
        return any(isinstance(op, UpdateOp) and op.library for op in self.ops)

    @property
    def panels(self) -> tuple[PanelOp | SplitPanelOp, ...]:
        """The panels, left to right, whether launched alone or inside a LookaheadOp."""
        return tuple(
            op.panel if isinstance(op, LookaheadOp) else op
            for op in self.ops
            if isinstance(op, PanelOp | SplitPanelOp | LookaheadOp)
        )


def next_pow2(x: int) -> int:
    """Smallest power of two ≥ x (x ≥ 1)."""
    return 1 << (x - 1).bit_length()


def dot_width(width: int) -> int:
    """A panel or block width as tl.dot sees it: a power of two, at least 16."""
    return max(DOT_MIN, next_pow2(width))


@functools.cache
def make_plan(batch: int, n: int, shape: ShapeConfig) -> Plan | None:
    """The launches for batch × n × n under `shape`; None when no panel fits the register budget.

    The fused path takes a shape where a panel spanning all n rows fits the register budget,
    the warp path one of n ≤ 32; other shapes of their classes get the blocked launches.
    """
    if shape.path == "fused":
        nb = _panel_width(n, shape)
        if nb is not None:
            return _fused_plan(batch, n, nb, shape)
    if shape.path == "warp" and n <= WARP_MAX_N:
        return Plan(batch, n, (WarpOp(next_pow2(n)),), DOT_MIN, 0, 0, shape)
    ops: list[Op] = []
    col = turn = 0
    while col < n:
        blocks = _outer_block(col, n, shape)
        if blocks is None:
            return None
        outer_col, outer_end = col, blocks[-1][0] + blocks[-1][2]
        nested = len(blocks) > 1 and outer_end < n  # with nothing right of it, no outer update
        library = shape.update_library == "cublas"
        for start, nb, width in blocks:
            base = outer_col if nested else start  # where the T holding this block's starts
            end, offset = start + width, start - base
            # Look-ahead's next panel writes its T while the update still reads this block's:
            # blocks alternate T slots, except inside an outer block, where each has its own T
            # and the outer blocks alternate (its update may be merged with the next panel too).
            slot = turn % 2 if shape.lookahead else 0
            inner: list[Op] = []
            for p in range(start, end, nb):
                inner.append(_panel(p, nb, n, p - base, shape, slot))
                if p + nb < end:
                    inner.append(
                        _update(batch, p, nb, p - base, p + nb, end, shape, slot, inner=True)
                    )
            if width > nb:
                warps = 4 if dot_width(width) <= 64 else 8
                gram_rows = _gram_rows(n - start, shape)
                span = (start, width, nb, dot_width(width), warps, gram_rows)
                inner.append(TFactorOp(*span, slot, offset))
            ops.extend(_block_launch(inner, shape) or inner)
            stop = outer_end if nested else n
            if end < stop:
                ops.append(_update(batch, start, width, offset, end, stop, shape, slot, library))
            turn += not nested
        if nested:
            starts = tuple(start - outer_col for start, _, _ in blocks)
            ops.append(OuterJoinOp(outer_col, outer_end - outer_col, starts, slot))
            outer_library = shape.outer_update_library == "cublas"
            span = (outer_col, outer_end - outer_col, 0, outer_end, n)
            ops.append(_update(batch, *span, shape, slot, outer_library))
            turn += 1
        col = outer_end
    if shape.lookahead:
        ops = _look_ahead(ops, shape)
    if shape.column_major:
        ops = _mirrored(ops)
    if shape.update_w_handover:
        ops = _hand_over_w(ops)
    parts = [op for op in ops if not isinstance(op, LookaheadOp)]
    parts += [part for op in ops if isinstance(op, LookaheadOp) for part in (op.update, op.panel)]
    panels = (PanelOp, SplitPanelOp)
    t_width = max(
        [DOT_MIN]
        + [op.t_offset + op.nb for op in parts if isinstance(op, panels)]
        + [getattr(op, "t_offset", 0) + op.dot_width for op in parts if not isinstance(op, panels)]
    )
    t_slots = 1 + max((op.t_slot for op in parts), default=0)
    split = [op.dot_width for op in parts if isinstance(op, UpdateOp) and op.passes_w]
    slabs = [
        -(-(n - op.col) // op.gram_rows)
        for op in parts
        if isinstance(op, TFactorOp) and op.gram_rows
    ]
    w_width, g_slabs = max(split, default=0), max(slabs, default=0)
    q_elems = max((op.scratch for op in parts if isinstance(op, SplitPanelOp)), default=0)
    w_slots = 1 + max((op.w_slot for op in parts if isinstance(op, UpdateOp)), default=0)
    return Plan(batch, n, tuple(ops), t_width, w_width, g_slabs, shape, t_slots, q_elems, w_slots)


def _block_launch(ops: list[Op], shape: ShapeConfig) -> list[Op]:
    """A block's panel, inner update and T-join launches as one BlockOp, under `block_launch`
    and where each of them runs one program per matrix; else none (the launches stay)."""
    panels = [op for op in ops if isinstance(op, PanelOp)]
    joins = [op for op in ops if isinstance(op, TFactorOp)]
    updates = [op for op in ops if isinstance(op, UpdateOp)]
    if not shape.block_launch or not joins or joins[0].gram_rows:
        return []
    if any(isinstance(op, SplitPanelOp) for op in ops) or any(u.passes_w for u in updates):
        return []
    join, first = joins[0], panels[0]
    warps = max(join.warps, first.warps, shape.inner_update_warps)
    bm, bn = shape.inner_update_block_m, shape.inner_update_block_n
    span = (join.col, join.width, join.nb, first.block_m, bm, bn, warps)
    return [BlockOp(*span, join.t_slot, join.t_offset)]


def _look_ahead(ops: list[Op], shape: ShapeConfig) -> list[Op]:
    """Each fused update merged with the panel that starts at its first column."""
    merged: list[Op] = []
    for op in ops:
        before = merged[-1] if merged else None
        if (
            isinstance(op, PanelOp)
            and isinstance(before, UpdateOp)
            and not before.passes_w
            and not before.library
            and before.c_start == op.col
        ):
            warps = max(op.warps, before.warps)
            merged[-1] = LookaheadOp(update=before, panel=op, warps=warps)
        else:
            merged.append(op)
    return merged


def _mirrored(ops: list[Op]) -> list[Op]:
    """Each Triton update followed by the panel that starts at its first column stores that
    panel's columns row-major as it finishes them, so the panel needs no copy of them."""
    out = list(ops)
    for i in range(1, len(out)):
        update, panel = out[i - 1], out[i]
        if (
            isinstance(panel, PanelOp)
            and isinstance(update, UpdateOp)
            and not update.library
            and update.c_start == panel.col
        ):
            out[i - 1] = dataclasses.replace(update, mirror=panel.nb)
            out[i] = dataclasses.replace(panel, mirrored=True)
    return out


def _hand_over_w(ops: list[Op]) -> list[Op]:
    """Each row-split update whose next user of W is a row-split update too zeroes that one's
    part of W, in the other of two W buffers, while it sums its own; only the first of such a
    chain keeps a fill of its own. A fill is a launch of its own: 52 of them at 60 × 1024 and
    192 at 2 × 4096. A two-pass update, which stores its W without a fill, ends a chain."""
    out = list(ops)
    users = [i for i, op in enumerate(out) if isinstance(op, UpdateOp) and op.passes_w]
    for i, j in itertools.pairwise(users):
        this, after = out[i], out[j]
        assert isinstance(this, UpdateOp) and isinstance(after, UpdateOp)
        if this.slab_rows and after.slab_rows:
            out[i] = dataclasses.replace(this, w_next=(after.nb, after.c_start, after.c_end))
            out[j] = dataclasses.replace(after, w_slot=1 - this.w_slot, w_zeroed=True)
    return out


def _fused_plan(batch: int, n: int, nb: int, shape: ShapeConfig) -> Plan:
    block_m = max(MIN_BLOCK_M, next_pow2(n))
    rows = (block_m, max(MIN_BLOCK_M, block_m // 2), max(MIN_BLOCK_M, block_m // 4))
    kb = max(shape.block_width, nb)
    op = FusedOp(rows=rows, nb=nb, kb=kb, warps=shape.fused_warps)
    return Plan(batch, n, (op,), dot_width(kb), 0, 0, shape)


def _outer_block(col: int, n: int, shape: ShapeConfig) -> list[tuple[int, int, int]] | None:
    """The blocks (start, panel width, width) of the outer block from `col`: as many as fit in
    `outer_block_width` columns, and at least one; None where no panel fits the register budget.
    Without a second level that is one block."""
    blocks: list[tuple[int, int, int]] = []
    at = col
    while at < n:
        nb = _split_width(n - at, shape) or _panel_width(n - at, shape)
        if nb is None:
            return None
        width = min(max(shape.block_width, nb), n - at)
        if blocks and at + width > col + shape.outer_block_width:
            break
        blocks.append((at, nb, width))
        at += width
    return blocks


def _gram_rows(rows: int, shape: ShapeConfig) -> int:
    """Rows per slab of a split VᵀV sum, or 0 where one program per matrix walks them all."""
    if not shape.t_gram_rows or rows <= shape.t_gram_rows:
        return 0
    bm = shape.update_block_m
    return -(-max(shape.t_gram_rows, bm) // bm) * bm


def _panel_width(rows: int, shape: ShapeConfig) -> int | None:
    block_m = max(MIN_BLOCK_M, next_pow2(rows))
    nb = shape.panel_width
    while nb > MIN_PANEL_WIDTH and block_m * nb > shape.max_panel_elems:
        nb //= 2
    return nb if block_m * nb <= shape.max_panel_elems else None


def _split_fits(rows: int, nb: int, shape: ShapeConfig) -> bool:
    """Whether a panel of nb columns over `rows` rows is split by rows: into two slabs at least,
    each no shorter than the panel is wide (so the first holds its top block), nb wide enough for
    tl.dot, and the slab and join tiles within the panel register budget and shared memory."""
    slab_rows = shape.panel_split_rows
    if not slab_rows or rows <= slab_rows or nb < DOT_MIN or slab_rows < nb:
        return False
    stack_m = next_pow2(-(-rows // slab_rows) * nb)
    tile = max(next_pow2(slab_rows), stack_m) * nb
    shared = tile * SPLIT_SHARED_BYTES_PER_ELEM
    return tile <= shape.max_panel_elems and shared <= SPLIT_SHARED_BYTES


def _split_width(rows: int, shape: ShapeConfig) -> int | None:
    """Width of a row-split panel over `rows` rows: panel_width, halved until it fits; None where
    no width splits (the panel is then one program's)."""
    nb = shape.panel_width
    while nb > DOT_MIN and not _split_fits(rows, nb, shape):
        nb //= 2
    return nb if _split_fits(rows, nb, shape) else None


def _warps(elems: int, per_thread: int) -> int:
    """Warps of a program holding `elems` tile elements in registers, `per_thread` a thread."""
    threads = elems // per_thread
    return min(MAX_WARPS, max(1, next_pow2(max(1, threads // 32))))


def _panel(
    col: int, nb: int, n: int, t_offset: int, shape: ShapeConfig, slot: int
) -> PanelOp | SplitPanelOp:
    if _split_fits(n - col, nb, shape):
        slab_rows = shape.panel_split_rows
        slabs = -(-(n - col) // slab_rows)
        slab_m, stack_m = next_pow2(slab_rows), next_pow2(slabs * nb)
        slab_warps = _warps(slab_m * nb, shape.panel_elems_per_thread)
        return SplitPanelOp(col, nb, slab_rows, slabs, slab_m, stack_m, slab_warps, t_offset, slot)
    block_m = max(MIN_BLOCK_M, next_pow2(n - col))
    warps = _warps(block_m * nb, shape.panel_elems_per_thread)
    cap = shape.panel_max_registers if warps >= REGISTER_BOUND_WARPS else 0
    return PanelOp(col, nb, block_m, warps, t_offset, slot, max_registers=cap)


def _update(
    batch: int,
    col: int,
    nb: int,
    t_offset: int,
    c_start: int,
    c_end: int,
    shape: ShapeConfig,
    slot: int,
    library: bool = False,
    inner: bool = False,
) -> UpdateOp:
    """`inner`: an update of the block's own columns, which gets the inner tile."""
    if inner:
        bm, bn = shape.inner_update_block_m, shape.inner_update_block_n
        warps, two_pass = shape.inner_update_warps, shape.inner_update_two_pass
        cap, ahead = shape.inner_update_max_registers, shape.inner_update_apply_ahead
    else:
        bm, bn, warps = shape.update_block_m, shape.update_block_n, shape.update_warps
        two_pass, cap = shape.update_two_pass, shape.update_max_registers
        ahead = shape.update_apply_ahead
    col_blocks = -(-(c_end - c_start) // bn)
    slab_rows = 0
    if not library and batch * col_blocks < shape.update_split_below:
        slab_rows = -(-max(shape.update_split_rows, bm) // bm) * bm
    two_pass = two_pass and not (library or slab_rows)
    span = (col, nb, dot_width(nb), t_offset, c_start, c_end)
    ahead = ahead and not (library or slab_rows or two_pass)
    return UpdateOp(
        *span, slab_rows, bm, bn, warps, slot, library, two_pass, max_registers=cap,
        apply_ahead=ahead,
    )  # fmt: skip
