"""A tuner candidate's quick stage looks at the specs its change can reach."""

from __future__ import annotations

from qrsup.agents.affected_specs import affected_specs
from qrsup.agents.incumbent import REPO_ROOT
from qrsup.agents.spaces import space_for
from qrsup.kernels.suites import get_suite

SUITE = get_suite("qr_v2")
SPACE = space_for("fast", REPO_ROOT)


def _changed(**knobs: object) -> dict[str, object]:
    point = SPACE.default_point()
    return {**point, **{key.replace("__", "."): value for key, value in knobs.items()}}


def test_a_change_in_one_class_reaches_that_classs_specs_alone():
    parent = SPACE.default_point()
    assert parent["medium.update_block_n"] != 32
    focus = affected_specs(_changed(medium__update_block_n=32), parent, SUITE, SPACE.class_of)
    assert focus is not None
    benchmarks = [SUITE.benchmarks[i] for i in focus.benchmarks]
    tests = [SUITE.tests[i] for i in focus.tests]
    assert benchmarks and all(SPACE.class_of(s) == "medium" for s in benchmarks)
    assert {(s.batch, s.n) for s in benchmarks} == {(640, 512)}
    others = [s for s in SUITE.benchmarks if s not in benchmarks]
    assert others and all(SPACE.class_of(s) != "medium" for s in others)
    assert tests and all(SPACE.class_of(s) == "medium" for s in tests)


def test_changes_it_cannot_trace_or_that_reach_everything_get_the_standard_quick_stage():
    parent = SPACE.default_point()
    assert affected_specs(None, parent, SUITE, SPACE.class_of) is None  # a written candidate
    assert affected_specs(parent, parent, SUITE, SPACE.class_of) is None  # nothing changed
    fewer = {k: v for k, v in parent.items() if not k.startswith("medium.")}
    assert affected_specs(fewer, parent, SUITE, SPACE.class_of) is None  # another space
    wy = space_for("blocked_wy", REPO_ROOT)  # one class for every spec
    point = wy.default_point()
    key = next(k for k, values in wy.choices().items() if len(values) > 1)
    other = next(v for v in wy.choices()[key] if v != point[key])
    assert affected_specs({**point, key: other}, point, SUITE, wy.class_of) is None
