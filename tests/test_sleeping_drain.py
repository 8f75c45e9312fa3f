"""The timed window's drain sleeps while the device works, so a busy host's toll excused in the
window cannot cover work hidden on another queue (kernels/judge/sleeping_drain.py)."""

from __future__ import annotations

import ctypes.util
import time

import pytest
from qrsup.kernels.judge.sleeping_drain import SleepingDrain


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="a CUDA driver is here")
def test_without_a_driver_the_drain_says_it_spins_and_still_waits():
    waits: list[str] = []
    drain = SleepingDrain(lambda: waits.append("synchronize"))
    drain()
    assert drain.sleeps is False
    assert waits == ["synchronize"]


@pytest.mark.gpu
def test_on_a_gpu_the_drain_sleeps_through_queued_work_and_restores_the_flags():
    import torch

    torch.cuda.synchronize()
    drain = SleepingDrain(torch.cuda.synchronize)
    assert drain.sleeps
    before = drain._flags()
    torch.cuda._sleep(400_000_000)  # about 200 ms on the device
    cpu, wall = time.thread_time(), time.perf_counter()
    drain()
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    assert wall > 0.1, f"the drain returned after {wall:.3f} s: nothing was queued"
    assert cpu < 0.25 * wall, f"the drain spun: {cpu:.3f} s on a CPU over {wall:.3f} s"
    assert drain._flags() == before
