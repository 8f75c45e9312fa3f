"""Where the parent's time goes, by stage, and which knobs move each stage.

The tuner mutates knobs of the stage that takes most of the parent's profiled time more often:
a panel-bound candidate gains nothing from a new trailing-update tile shape. Stages come from the
candidate's own phase marks (`qrsup.kernels.phases`) or, where marks cannot see them (under a
CUDA graph every kernel falls in the phase around the replay), from the kernels' names. A profile
is of one benchmark spec, so its shares speak for the knobs of that spec's shape class alone: on
the H200 a loop profiled 40×176, whose update is fused with the next panel, and then steered
every class's mutations as if all were panel-bound (2026-12-04).
"""

from __future__ import annotations

from collections.abc import Sequence

from qrsup.kernels.profiling.summary import ProfileSummary, profile_from_dict
from qrsup.kernels.schema import ProfileRecord

STAGES = ("panel", "T", "trailing")
_NAME_STAGES = (
    ("tfactor", "T"),
    ("gram", "T"),  # the row-split Gram of a T factor
    ("slab", "panel"),  # a row-split panel's slabs, join and rebuild
    ("panel", "panel"),
    ("update", "trailing"),
    ("lookahead", "trailing"),  # an update with the next panel fused in: mostly update
    ("gemm", "trailing"),  # cuBLAS's, for the library updates
    ("trailing", "trailing"),
)


def stage_shares(summary: ProfileSummary) -> dict[str, float]:
    """Each stage's share of the profiled time that is attributed to a stage (sums to 1, or {})."""
    figures = summary.figures
    shares = {stage: figures.phases.get(stage, 0.0) for stage in STAGES}
    if not any(shares.values()):
        shares = dict.fromkeys(STAGES, 0.0)
        for op in figures.top:
            stage = _stage_named(op.name.lower())
            if stage is not None:
                shares[stage] += op.self_us
    total = sum(shares.values())
    return {stage: share / total for stage, share in shares.items()} if total > 0 else {}


def latest_stage_shares(profiles: Sequence[ProfileRecord]) -> tuple[dict[str, float], int | None]:
    """The stage shares of a candidate's latest successful profile and the benchmark index it
    profiled; ({}, None) if none."""
    for record in reversed(profiles):
        summary = profile_from_dict(record.summary) if record.ok else None
        if isinstance(summary, ProfileSummary):
            return stage_shares(summary), record.spec_index
    return {}, None


def knob_stage(knob: str) -> str | None:
    """`medium.update_block_m` → trailing, `all.t_method` → T; None for knobs of every stage."""
    name = knob.split(".", 1)[-1]
    if name.startswith("t_"):
        return "T"
    return _stage_named(name)


def _stage_named(name: str) -> str | None:
    return next((stage for word, stage in _NAME_STAGES if word in name), None)
