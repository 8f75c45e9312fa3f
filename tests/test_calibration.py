"""The referee's calibration, seen from a judge run's report: what an export adds to a cycle is
measured once per output shape, and every spec of that shape is judged against it."""

from __future__ import annotations

import pytest
from qrsup.kernels.suites import Spec, Suite

from tests.conftest import CANDIDATES, judge

SAME_SHAPE_TWICE = Suite(
    "same-shape",
    tests=(),
    benchmarks=(
        Spec(4, 16, 1, "dense", 1),
        Spec(4, 16, 0, "rankdef", 2),  # the dense spec's outputs' shape: its export is shared
        Spec(2, 24, 1, "dense", 3),
    ),
)


def test_specs_of_one_output_shape_share_one_measured_export():
    """On an H200 each 640×512 export cost about 0.6 s of calibration, four times per run."""
    report = judge(CANDIDATES / "blocked_wy.py", "bench", suite=SAME_SHAPE_TWICE)
    assert report.verdict == "pass", report.reason
    baselines = [spec["integrity"]["baseline"] for spec in report.specs]
    export = [b["export_cycle_ns"] - b["cycle_ns"] for b in baselines]
    assert export[1] == pytest.approx(export[0], rel=1e-12, abs=1.0)
    assert export[2] != export[0]  # measured on its own
    assert baselines[1]["cycle_ns"] != baselines[0]["cycle_ns"]  # each spec's cycle its own
