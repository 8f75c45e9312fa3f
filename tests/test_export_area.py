"""The memory the contestant's exports pass through: shared, bounded, and gone when closed."""

from __future__ import annotations

import math
import os

import pytest
import torch
from qrsup.kernels.judge.export_area import ExportArea
from qrsup.kernels.judge.referee import take_export
from qrsup.kernels.suites import Spec


def test_what_one_side_writes_the_other_reads_through_its_own_mapping():
    referee = ExportArea.create(4096)
    contestant = ExportArea(os.dup(referee.fd))
    contestant.floats(6).copy_(torch.arange(6, dtype=torch.float32))
    assert referee.floats(6).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    contestant.close()
    referee.close()


def test_an_export_larger_than_the_area_is_refused_with_both_sizes():
    area = ExportArea.create(64)
    assert area.floats(16).numel() == 16
    with pytest.raises(ValueError, match="an export of 68 bytes does not fit the 64-byte"):
        area.floats(17)
    area.close()


def test_a_closed_area_gives_back_its_descriptor():
    area = ExportArea.create(64)
    fd = area.fd
    area.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    area.close()  # a second close is harmless


def test_closing_while_a_view_is_alive_leaves_the_view_readable():
    area = ExportArea.create(64)
    view = area.floats(4)
    view.fill_(2.0)
    area.close()
    assert view.tolist() == [2.0, 2.0, 2.0, 2.0]


@pytest.mark.gpu
def test_a_pinned_area_takes_a_device_copy_and_the_other_side_reads_it():
    torch.cuda.init()
    referee = ExportArea.create(1 << 20)
    contestant = ExportArea(os.dup(referee.fd))
    referee.pin()
    contestant.pin()
    assert referee._pinned and contestant._pinned  # the driver took the whole area
    values = torch.arange(1024, dtype=torch.float32, device="cuda")
    contestant.floats(1024).copy_(values, non_blocking=True)
    torch.cuda.synchronize()
    assert torch.equal(referee.floats(1024), values.cpu())
    contestant.close()
    referee.close()
    assert not referee._pinned


def test_the_referee_checks_the_export_as_it_was_when_the_contestant_answered():
    """On the CPU a tensor's `.to(device)` is the same memory: the referee once checked the
    shared pages themselves, which the contestant's threads can still write after answering."""
    spec = Spec(batch=2, n=3, cond=0, case="dense", seed=0)  # H: 18 values, τ: 6, per call
    referee = ExportArea.create(4096)
    contestant = ExportArea(os.dup(referee.fd))
    contestant.floats(spec.export_floats(2)).fill_(1.0)
    taken = take_export(referee, spec, 2, torch.device("cpu"))
    contestant.floats(spec.export_floats(2)).fill_(7.0)  # a late write, after the answer
    assert taken.tolist() == [1.0] * 48
    # The τ parts left behind are poisoned, so a later export that writes nothing fails.
    left = take_export(ExportArea(os.dup(referee.fd)), spec, 2, torch.device("cpu"))
    assert left.tolist()[18:24] == [7.0] * 6
    contestant.floats(spec.export_floats(2)).fill_(1.0)
    take_export(referee, spec, 2, torch.device("cpu"))
    values = referee.floats(spec.export_floats(2)).tolist()
    assert [math.isnan(v) for v in values] == ([False] * 18 + [True] * 6) * 2
    contestant.close()
    referee.close()
