"""Which specs a config-point candidate can change: those of the shape classes whose knobs
differ from its parent's.

A tuner candidate is its parent's source with some knobs changed, and each knob belongs to one
shape class (spaces.py), so specs of the other classes run the parent's kernels unchanged. Its
quick stage therefore looks at the affected specs alone: every one of them, where the standard
quick stage would time every other spec, mostly ones the change cannot move. Its full stage
times them too, and takes its parent's figures for the rest (evaluation.Inherited). A
candidate whose change cannot be traced this way gets the standard stages. The interleaved
re-timing against the incumbent looks at the specs the two differ on, by the same rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.spaces import FAMILIES, space_for
from qrsup.kernels.schema import Candidate
from qrsup.kernels.suites import Spec, Suite


@dataclass(frozen=True)
class AffectedSpecs:
    """Indices into the suite's tests and benchmarks."""

    tests: tuple[int, ...]
    benchmarks: tuple[int, ...]


def affected_specs(
    point: Mapping[str, object] | None,
    parent_point: Mapping[str, object] | None,
    suite: Suite,
    class_of: Callable[[Spec], str],
) -> AffectedSpecs | None:
    """None unless both points are known and share their knobs, and the change reaches some
    benchmark specs but not all (a change that reaches all is judged like any other)."""
    if point is None or parent_point is None or set(point) != set(parent_point):
        return None
    changed = {key.split(".", 1)[0] for key, value in point.items() if parent_point[key] != value}
    tests = tuple(i for i, spec in enumerate(suite.tests) if class_of(spec) in changed)
    benchmarks = tuple(i for i, spec in enumerate(suite.benchmarks) if class_of(spec) in changed)
    narrower = 0 < len(benchmarks) < len(suite.benchmarks)
    return AffectedSpecs(tests, benchmarks) if narrower else None


def focus_between(
    suite: Suite, repo_root: Path
) -> Callable[[Candidate, Candidate], AffectedSpecs | None]:
    """The specs on which two candidates of one family with a declared config space can differ:
    those of the classes whose knobs differ (a candidate against its parent, or against the
    incumbent when the two are re-timed)."""

    @functools.cache
    def class_of(family: str) -> Callable[[Spec], str]:
        """A spec's class, resolved once per family and spec: a space reads its configs file
        on every call."""
        return functools.cache(space_for(family, repo_root).class_of)

    def between(candidate: Candidate, reference: Candidate) -> AffectedSpecs | None:
        if reference.family != candidate.family or candidate.family not in FAMILIES:
            return None
        return affected_specs(candidate.params, reference.params, suite, class_of(candidate.family))

    return between


def focus_from_parent(
    parent_of: Callable[[str], Candidate | None], suite: Suite, repo_root: Path
) -> Callable[[Candidate], AffectedSpecs | None]:
    """The loop's view: a candidate's affected specs against its stored parent."""
    between = focus_between(suite, repo_root)

    def focus(candidate: Candidate) -> AffectedSpecs | None:
        parent = parent_of(candidate.parent_id) if candidate.parent_id else None
        return between(candidate, parent) if parent is not None else None

    return focus
