"""The offline proposer: an evolutionary search over a family's declared config space.

Each proposal starts from the parent's config point and either mutates one or two knobs of one
class, choosing the class by how far the parent trails the best time seen on that class's specs
and, within it, favouring knobs of the stage where the parent's profile spends its time, or
recombines the parent with another strong point. Points already evaluated are never proposed
again, nor is a knob value that every evaluated point holding it (two at least) failed with,
unless the parent holds it already: on the H200 a 15-minute loop spent 7 of its 77 evaluations
on plain-TF32 settings that failed the factor gate, the same ones again and again
(docs/benchmarks.md, 2026-12-02). Nor is a knob value whose every point kept the loop waiting
over COSTLY_COMPILE_S for its kernels to compile, none of them the fastest seen: in a 7.5-minute
loop on the H200 one proposal (`large.panel_split_rows: 0 → 32`) took 82 s to compile, 18% of
the loop, for a candidate 12 times slower (2026-12-04). Steering text may pin knobs
(`panel_width=64`, `medium.update_warps=8`) or name a class to focus on (tuner_steering.py); the
parent with the pins alone is proposed first, and the proposal's transcript says what the tuner
took from the text. No network, no key.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from qrsup.agents.phase_focus import STAGES, knob_stage
from qrsup.agents.proposal import Proposal, ProposalContext, ProposalFailure
from qrsup.agents.spaces import ConfigSpace, Point
from qrsup.agents.tuner_steering import read_steering
from qrsup.kernels.suites import Spec

MAX_TRIES = 200
CROSSOVER_PROBABILITY = 0.3
JUMP_PROBABILITY = 0.2
TOURNAMENT_SIZE = 3
MIN_FAILURES = 2  # evaluated points that failed with a knob value before it is left alone
# A wait this long costs the loop about ten judge runs on an H200 (631 an hour in a 2026-12-04
# loop): one such point is enough to leave its values alone.
COSTLY_COMPILE_S = 60.0
STAGE_WEIGHT = 3.0  # a knob's pick weight is 1 + STAGE_WEIGHT x its stage's share of the time


@dataclass(frozen=True)
class Sample:
    """An evaluated point of this family: its per-spec means and geomean (None if it failed)."""

    point: Point
    geomean_ns: float | None
    spec_means_ns: Mapping[int, float]
    compile_wait_s: float | None = None  # the loop's wait for its kernels; None: not known
    compile_overran: bool = False  # set aside unjudged: still compiling when the loop gave up


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


class TunerProposer:
    """Proposes unseen config points of one space, guided by the per-spec results so far."""

    name = "tuner"
    free = True

    def __init__(
        self,
        space: ConfigSpace,
        specs: Sequence[Spec],
        history: Callable[[], list[Sample]],
        seen: Callable[[str], bool],
        rng: random.Random | None = None,
    ) -> None:
        self.space = space
        self.specs = specs
        self.history = history
        self.seen = seen
        self.rng = rng or random.Random()

    def propose(self, context: ProposalContext) -> Proposal | ProposalFailure:
        choices = self.space.choices()
        read = self.space.read(context.parent.source)
        parent = read
        if parent is None or set(parent) != set(choices):
            parent = {**self.space.default_point(), **(parent or {})}
            parent = {k: v for k, v in parent.items() if k in choices}
        # The parent as recorded: a parent of another family comes without its source.
        start = start_changes(read or context.parent.params or {}, parent, self.space.family)
        history = self.history()
        samples = [s for s in history if s.geomean_ns is not None]
        shunned = failing_values(history) | costly_values(history)
        failing = {(k, v) for k, v in shunned if parent.get(k) != v}
        steered = read_steering(context.steering, context.advisor_ideas, choices)
        weights = self._class_weights(parent, samples, choices, steered.focus)
        profiled = self._profiled(context)
        points = self._points(parent, steered.pins, failing, samples, choices, weights, profiled)
        for point, hypothesis in points:
            source = self.space.render(point)
            if not self.seen(source_hash(source)):
                return Proposal(
                    source,
                    "; ".join([*start, hypothesis]),
                    self.space.family,
                    params=dict(point),
                    transcript=steered.transcript,
                )
        return ProposalFailure(
            "exhausted",
            f"no unseen point near the parent after {MAX_TRIES} tries; the neighbourhood of "
            f"{context.parent.candidate_id} is explored",
            transcript=steered.transcript,
        )

    def _points(
        self,
        parent: Point,
        pins: Point,
        failing: set[tuple[str, object]],
        samples: list[Sample],
        choices: dict[str, tuple[object, ...]],
        weights: dict[str, float],
        shares: Mapping[str, Mapping[str, float]],
    ) -> Iterator[tuple[Point, str]]:
        """Points to try in order, each with its hypothesis: the parent with the pins alone
        first, so that a steer's effect is not mixed with a random mutation's, then MAX_TRIES
        offspring with the pins applied, none holding a failing value."""
        changes = [f"{k}: {parent[k]} → {v}" for k, v in pins.items() if parent[k] != v]
        if changes:
            yield {**parent, **pins}, "; ".join(changes) + " (steered)"
        for _ in range(MAX_TRIES):
            point, hypothesis = self._offspring(parent, samples, choices, weights, shares)
            if any(point.get(k) == v for k, v in failing):
                continue
            if pins:
                point.update(pins)
                hypothesis += f" (steered: {', '.join(f'{k}={v}' for k, v in pins.items())})"
            yield point, hypothesis

    def _offspring(
        self,
        parent: Point,
        samples: list[Sample],
        choices: dict[str, tuple[object, ...]],
        weights: dict[str, float],
        shares: Mapping[str, Mapping[str, float]],
    ) -> tuple[Point, str]:
        if len(samples) >= 2 and self.rng.random() < CROSSOVER_PROBABILITY:
            mate = self._tournament(samples)
            child = {
                k: (mate.point.get(k, v) if self.rng.random() < 0.5 else v)
                for k, v in parent.items()
            }
            changed = [k for k in child if child[k] != parent[k]]
            if changed:
                return child, f"recombine with a strong point ({', '.join(changed)})"
        return self._mutate(parent, choices, weights, shares)

    def _mutate(
        self,
        parent: Point,
        choices: dict[str, tuple[object, ...]],
        weights: dict[str, float],
        shares_by_class: Mapping[str, Mapping[str, float]],
    ) -> tuple[Point, str]:
        classes = list(weights)
        chosen_class = self.rng.choices(classes, weights=[weights[c] for c in classes])[0]
        shares = shares_by_class.get(chosen_class, {})
        knobs = [k for k in choices if k.split(".", 1)[0] == chosen_class and len(choices[k]) > 1]
        child = dict(parent)
        changes = []
        for knob in self._pick_knobs(knobs, shares, self.rng.choice((1, 1, 2))):
            values = choices[knob]
            old = parent[knob]
            index = values.index(old) if old in values else len(values) // 2
            if _ordered(values) and self.rng.random() > JUMP_PROBABILITY:
                step = self.rng.choice((-1, 1))
                new_index = min(len(values) - 1, max(0, index + step))
                if new_index == index:
                    new_index = index - step
            else:
                new_index = self.rng.choice([i for i in range(len(values)) if i != index])
            child[knob] = values[new_index]
            changes.append(f"{knob}: {old} → {values[new_index]}")
        hypothesis = "; ".join(changes)
        if shares:
            stage = max(shares, key=shares.__getitem__)
            hypothesis += f" (the parent's profile: {stage} {shares[stage]:.0%})"
        return child, hypothesis

    def _profiled(self, context: ProposalContext) -> dict[str, Mapping[str, float]]:
        """The parent's stage shares, keyed by the class of the spec they were profiled on."""
        index = context.stage_spec
        if not context.stage_shares or index is None or not 0 <= index < len(self.specs):
            return {}
        return {self.space.class_of(self.specs[index]): context.stage_shares}

    def _pick_knobs(self, knobs: list[str], shares: Mapping[str, float], count: int) -> list[str]:
        """`count` distinct knobs, those of the stages that take the parent's time first."""
        neutral = 1.0 / len(STAGES)  # a knob of every stage counts as an average one
        pool = {
            k: 1.0 + STAGE_WEIGHT * (shares.get(knob_stage(k) or "", neutral) if shares else 0.0)
            for k in knobs
        }
        picked = []
        for _ in range(min(count, len(pool))):
            knob = self.rng.choices(list(pool), weights=list(pool.values()))[0]
            picked.append(knob)
            del pool[knob]
        return picked

    def _tournament(self, samples: list[Sample]) -> Sample:
        entrants = self.rng.sample(samples, k=min(TOURNAMENT_SIZE, len(samples)))
        return min(entrants, key=lambda s: s.geomean_ns or math.inf)

    def _class_weights(
        self,
        parent: Point,
        samples: list[Sample],
        choices: dict[str, tuple[object, ...]],
        focus: frozenset[str],
    ) -> dict[str, float]:
        """How much each class trails the best seen per spec: log time ratios, summed."""
        classes = sorted({k.split(".", 1)[0] for k in choices})
        weights = dict.fromkeys(classes, 0.1)
        parent_sample = next((s for s in samples if s.point == parent), None)
        if parent_sample is not None:
            for index, spec in enumerate(self.specs):
                mine = parent_sample.spec_means_ns.get(index)
                best = min(
                    (s.spec_means_ns[index] for s in samples if index in s.spec_means_ns),
                    default=None,
                )
                cls = self.space.class_of(spec)
                if mine and best and cls in weights:
                    weights[cls] += math.log(mine / best) + 0.05
        for cls in focus:
            weights[cls] = weights.get(cls, 0.1) + 10.0
        return weights


def start_changes(stated: Mapping[str, object], start: Point, family: str) -> list[str]:
    """What the search's starting point changes in the parent as it stated its knobs, named in
    every hypothesis: a parent of another family starts from this family's defaults (a
    recursive_wy agent's first candidate changed `panel_impl` under a hypothesis naming one
    other knob), and one without any shared knob starts from them whole."""
    shared = [knob for knob in start if knob in stated]
    if not shared:
        return [f"from the {family} defaults"]
    return [
        f"{knob}: {stated[knob]} → {start[knob]}" for knob in shared if stated[knob] != start[knob]
    ]


def failing_values(samples: Sequence[Sample]) -> set[tuple[str, object]]:
    """(knob, value) pairs held only by points that failed, by two at least."""
    held: dict[tuple[str, object], list[bool]] = {}
    for sample in samples:
        for knob, value in sample.point.items():
            held.setdefault((knob, value), []).append(sample.geomean_ns is None)
    return {pair for pair, failed in held.items() if len(failed) >= MIN_FAILURES and all(failed)}


def costly_values(samples: Sequence[Sample]) -> set[tuple[str, object]]:
    """(knob, value) pairs held only by points whose compile kept the loop waiting over
    COSTLY_COMPILE_S, or outlasted its patience, none of them the fastest passing point."""
    best = min((s.geomean_ns for s in samples if s.geomean_ns is not None), default=None)
    held: dict[tuple[str, object], list[bool]] = {}
    for sample in samples:
        slow = sample.compile_overran or (sample.compile_wait_s or 0.0) > COSTLY_COMPILE_S
        costly = slow and (sample.geomean_ns is None or sample.geomean_ns != best)
        for knob, value in sample.point.items():
            held.setdefault((knob, value), []).append(costly)
    return {pair for pair, costly in held.items() if all(costly)}


def _ordered(values: tuple[object, ...]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
