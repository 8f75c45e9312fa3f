"""The session's beam: role-typed slots instead of one lineage, and the rules for entering them.

- exploit: the fastest candidate of the incumbent's family, faster than the incumbent.
- near-miss: wins at least one spec against the incumbent while losing overall.
- structural: the fastest candidate of another family; a new entry is protected from being
  displaced by a third family for a number of iterations, so a young idea is not crowded out at
  once, while its own family's faster candidates (its line maturing) replace it.
- cleanup: as fast as the incumbent within noise, with shorter source.

A candidate displaces a slot's holder only when its gain exceeds the measured noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from qrsup.kernels.schema import ROLE_NAMES


@dataclass(frozen=True)
class Scored:
    """A candidate as the beam sees it: speed per spec and overall, family and size."""

    candidate_id: str
    family: str
    geomean_ns: float
    spec_means_ns: Mapping[int, float]
    source_lines: int


@dataclass(frozen=True)
class Slot:
    """A slot's holder and until which iteration it is protected (structural only)."""

    holder: Scored
    protected_until: int = 0


@dataclass(frozen=True)
class Placement:
    """Where a candidate lands (`role` None: nowhere) and why, for the records."""

    role: str | None
    reason: str


def source_lines(source: str) -> int:
    """Non-blank, non-comment lines: the cleanup role's measure of simplicity."""
    return sum(
        1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#")
    )


def place(
    candidate: Scored,
    beam: Mapping[str, Slot],
    incumbent: Scored,
    noise: float,
    iteration: int,
    preferred_role: str,
) -> Placement:
    """The first slot (the agent's own role first) the candidate earns; None if it earns none."""
    order = [preferred_role] + [r for r in ROLE_NAMES if r != preferred_role]
    reasons = []
    for role in order:
        verdict = _RULES[role](candidate, beam.get(role), incumbent, noise, iteration)
        if verdict is True:
            return Placement(role, f"enters the {role} slot")
        reasons.append(f"{role}: {verdict}")
    return Placement(None, "; ".join(reasons))


def _faster(a: float, b: float, noise: float) -> bool:
    return a < b * (1.0 - noise)


def _exploit(c: Scored, slot: Slot | None, inc: Scored, noise: float, it: int) -> bool | str:
    if c.family != inc.family:
        return "another family"
    best = min(inc.geomean_ns, slot.holder.geomean_ns) if slot is not None else inc.geomean_ns
    if not _faster(c.geomean_ns, best, noise):
        return "not faster than the incumbent and the holder beyond noise"
    return True


def _near_miss(c: Scored, slot: Slot | None, inc: Scored, noise: float, it: int) -> bool | str:
    if c.geomean_ns <= inc.geomean_ns:
        return "not losing overall"
    best = _best_win(c, inc, noise)
    if best is None:
        return "wins no spec against the incumbent"
    if slot is not None:
        held = _best_win(slot.holder, inc, noise)
        if held is not None and best >= held:
            return "its best win is no larger than the holder's"
    return True


def _structural(c: Scored, slot: Slot | None, inc: Scored, noise: float, it: int) -> bool | str:
    if c.family == inc.family:
        return "same family as the incumbent"
    if slot is None:
        return True
    if slot.protected_until > it and slot.holder.family != c.family:
        return f"holder protected until iteration {slot.protected_until}"
    if not _faster(c.geomean_ns, slot.holder.geomean_ns, noise):
        return "not faster than the holder beyond noise"
    return True


def _cleanup(c: Scored, slot: Slot | None, inc: Scored, noise: float, it: int) -> bool | str:
    if abs(c.geomean_ns / inc.geomean_ns - 1.0) > noise:
        return "not the incumbent's speed within noise"
    limit = slot.holder.source_lines if slot is not None else inc.source_lines
    if c.source_lines >= limit:
        return "not shorter"
    return True


def _best_win(c: Scored, inc: Scored, noise: float) -> float | None:
    """The smallest time ratio over the specs the candidate wins beyond noise."""
    ratios = [
        c.spec_means_ns[i] / inc.spec_means_ns[i]
        for i in c.spec_means_ns
        if i in inc.spec_means_ns and _faster(c.spec_means_ns[i], inc.spec_means_ns[i], noise)
    ]
    return min(ratios) if ratios else None


_RULES = {
    "exploit": _exploit,
    "near-miss": _near_miss,
    "structural": _structural,
    "cleanup": _cleanup,
}
