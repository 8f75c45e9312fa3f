"""Goals parse from text into checkable targets; anything else is a clear error."""

from __future__ import annotations

import pytest
from qrsup.agents.goals import GoalError, parse_goal
from qrsup.agents.session import AgentSpec
from qrsup.agents.steering import current_goal
from qrsup.agents.store import Store
from qrsup.kernels.suites import QR_V2

SPECS = QR_V2.benchmarks
INCUMBENT = {i: 10e6 for i in range(len(SPECS))}


def test_absolute_geomean_goal():
    goal = parse_goal("geomean < 2.0ms")
    assert goal.absolute_ns == 2e6 and goal.scope == "geomean"
    assert goal.evaluate({i: 1e6 for i in range(12)}, INCUMBENT, SPECS).met
    assert not goal.evaluate({i: 3e6 for i in range(12)}, INCUMBENT, SPECS).met


def test_size_class_against_incumbent():
    goal = parse_goal("n512 < 0.9 * incumbent")
    means = dict(INCUMBENT)
    for i, spec in enumerate(SPECS):
        if spec.n == 512:
            means[i] = 8.5e6
    status = goal.evaluate(means, INCUMBENT, SPECS)
    assert status.met and status.target_ns == pytest.approx(9e6)


def test_beat_incumbent_on_one_spec():
    goal = parse_goal("beat incumbent by 3% on spec 3")
    assert goal.scope == "spec 3" and goal.factor == pytest.approx(0.97)
    means = dict(INCUMBENT)
    means[3] = 9.8e6
    assert not goal.evaluate(means, INCUMBENT, SPECS).met
    means[3] = 9.6e6
    assert goal.evaluate(means, INCUMBENT, SPECS).met


def test_missing_data_is_not_met():
    assert not parse_goal("spec 3 < 1ms").evaluate({}, INCUMBENT, SPECS).met


@pytest.mark.parametrize(
    "text", ["faster please", "geomean > 2ms", "spec x < 1ms", "geomean < 2 parsecs"]
)
def test_unparseable_goal_names_the_grammar(text):
    with pytest.raises(GoalError, match=r"geomean < 2\.0ms"):
        parse_goal(text)


def test_a_persons_goal_outlives_a_restart_and_one_that_does_not_parse_is_passed_over(tmp_path):
    """An agent starts from the last goal a person sent it (kept in the store as it was taken),
    not from its spec's: a restart once went back to the session's goal."""
    store = Store(tmp_path / "store.sqlite")
    spec = AgentSpec("a1", goal="beat incumbent by 5%")
    try:
        assert current_goal(spec, store).text == "beat incumbent by 5%"
        store.consume_steering("m1", "a1", "goal", "geomean < 15ms", 3)
        store.consume_steering("m2", "a1", "goal", "faster please", 4)  # refused when taken
        store.consume_steering("m3", "a2", "goal", "geomean < 1ms", 4)  # another agent's
        assert current_goal(spec, store).text == "geomean < 15ms"
    finally:
        store.close()
