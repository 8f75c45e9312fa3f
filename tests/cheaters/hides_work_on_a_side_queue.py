"""Cheater (CUDA): launches the real work (the shipped kernel's asynchronous launches) on a second
device queue and returns at once, so the events on the current queue time only the host's
launching. Its outputs are right by the time anyone looks.

The queue spins for 20 ms per call before the work, so the device's part outlasts the host's. On
an H200 an earlier version (a 2 ms spin, then the kernel three times) hid nothing: launching the
three calls from Python took about 10 ms, longer than their device work, so the window timed the
whole call and the judge's pass was right (the contestant's mean equalled the referee's)."""

import torch
from qrsup.kernels.fast.geqrf import geqrf

_BANNED = "str" + "eam"  # the contest refuses files with the word itself
_side = None
SPIN_CYCLES = 40_000_000  # about 20 ms at the H200's 1.98 GHz


def custom_kernel(a: torch.Tensor):
    global _side
    if _side is None:
        _side = getattr(torch.cuda, _BANNED.capitalize())()
    getattr(_side, f"wait_{_BANNED}")(getattr(torch.cuda, f"current_{_BANNED}")())
    with getattr(torch.cuda, _BANNED)(_side):
        torch.cuda._sleep(SPIN_CYCLES)
        return geqrf(a, check_finite=False)
