"""Quantitative, checkable goals parsed from text, e.g. `geomean < 2.0ms`.

Grammar (case-insensitive, spaces optional):
    geomean < 2.0ms                   the suite's geomean under an absolute time
    n512 < 0.9 * incumbent            the geomean over n=512 specs against the incumbent's
    spec 3 < 250us                    one benchmark spec against an absolute time
    beat incumbent by 3% on spec 3    one spec (or `geomean`, or `n1024`) 3% under the incumbent
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qrsup.kernels.suites import Spec
from qrsup.kernels.timing import geomean

UNITS_NS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


class GoalError(ValueError):
    """A goal text that does not parse, with the grammar in the message."""


@dataclass(frozen=True)
class GoalStatus:
    """Where a candidate stands against the goal."""

    met: bool
    value_ns: float | None
    target_ns: float | None
    text: str


@dataclass(frozen=True)
class Goal:
    """`scope` (geomean, nN or spec K) must come under `absolute_ns` or `factor` × incumbent."""

    text: str
    scope: str  # "geomean", "n<size>" or "spec <index>"
    absolute_ns: float | None = None
    factor: float | None = None

    def evaluate(
        self,
        means_ns: Mapping[int, float],
        incumbent_means_ns: Mapping[int, float],
        specs: Sequence[Spec],
    ) -> GoalStatus:
        """Compare a candidate's per-benchmark means with the target; unmet if data is missing."""
        value = _scope_value(self.scope, means_ns, specs)
        if self.absolute_ns is not None:
            target = self.absolute_ns
        else:
            reference = _scope_value(self.scope, incumbent_means_ns, specs)
            target = None if reference is None else reference * (self.factor or 1.0)
        met = value is not None and target is not None and value < target
        return GoalStatus(met, value, target, self.text)


_TIME = r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>ns|us|µs|ms|s)"
_SCOPE = r"(?P<scope>geomean|n\d+|spec\s*\d+)"
_ABSOLUTE = re.compile(rf"^{_SCOPE}\s*<\s*{_TIME}$")
_RELATIVE = re.compile(rf"^{_SCOPE}\s*<\s*(?P<factor>\d+(?:\.\d+)?)\s*\*\s*incumbent$")
_BEAT = re.compile(rf"^beat\s+incumbent\s+by\s+(?P<pct>\d+(?:\.\d+)?)\s*%(?:\s+on\s+{_SCOPE})?$")

GRAMMAR = (
    "'geomean < 2.0ms', 'n512 < 0.9 * incumbent', 'spec 3 < 250us', "
    "or 'beat incumbent by 3% on spec 3'"
)


def parse_goal(text: str) -> Goal:
    """Parse a goal; a GoalError names the accepted forms."""
    clean = " ".join(text.strip().lower().split())
    if match := _ABSOLUTE.match(clean):
        absolute = float(match["num"]) * UNITS_NS[match["unit"]]
        return Goal(text.strip(), _normal_scope(match["scope"]), absolute_ns=absolute)
    if match := _RELATIVE.match(clean):
        factor = float(match["factor"])
        return Goal(text.strip(), _normal_scope(match["scope"]), factor=factor)
    if match := _BEAT.match(clean):
        factor = 1.0 - float(match["pct"]) / 100.0
        scope = _normal_scope(match["scope"] or "geomean")
        return Goal(text.strip(), scope, factor=factor)
    raise GoalError(f"cannot parse goal {text!r}; use {GRAMMAR}")


def _normal_scope(scope: str) -> str:
    if scope.startswith("spec"):
        return f"spec {int(scope[4:].strip())}"
    return scope


def _scope_value(scope: str, means: Mapping[int, float], specs: Sequence[Spec]) -> float | None:
    if scope == "geomean":
        indices = list(range(len(specs)))
    elif scope.startswith("spec "):
        indices = [int(scope[5:])]
    else:
        size = int(scope[1:])
        indices = [i for i, spec in enumerate(specs) if spec.n == size]
    if not indices or any(i not in means for i in indices):
        return None
    return geomean([means[i] for i in indices])
