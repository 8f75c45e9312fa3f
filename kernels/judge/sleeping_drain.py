"""Wait for the device to drain while asleep, not spinning.

The referee excuses a busy host's toll in the timed window: time the contestant's main thread
spent runnable but waiting for a CPU. CUDA's default wait for the device spins on a CPU, so work a
candidate hid on a side queue keeps the harness's drain runnable, and on a loaded host much of it
then reads as that toll (on an H200 beside one busy loop per core, a side-queue cheater hiding 20
ms per call passed). With the context's blocking-sync flag the drain sleeps until the device
signals: hidden work costs wall time and no run delay, so nothing of it is excused.

The flag is set for the drain alone and put back after, so a candidate's own waits inside its call
behave as they do under the contest's harness (CUDA's default). Changing a live context's flags
needs `cuCtxSetFlags` (CUDA 12.1); where the driver lacks it, the drain spins and says so, and the
referee then excuses none of the contestant's wait in the window.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

SCHEDULE_MASK = 0x07  # CU_CTX_SCHED_MASK
BLOCKING_SYNC = 0x04  # CU_CTX_SCHED_BLOCKING_SYNC
CUDA_SUCCESS = 0


class SleepingDrain:
    """Calling it waits for all the device's work; `sleeps` says whether it sleeps meanwhile."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        """`synchronize` is the device-wide wait (torch.cuda.synchronize, captured before any
        candidate code ran); call this with the context already current on this thread."""
        self._synchronize = synchronize
        self._get_flags, self._set_flags = _context_flag_calls()
        flags = self._flags()
        self.sleeps = flags is not None and self._set_flags(flags) == CUDA_SUCCESS

    def _flags(self) -> int | None:
        flags = ctypes.c_uint()
        if self._get_flags is None or self._get_flags(ctypes.byref(flags)) != CUDA_SUCCESS:
            return None
        return flags.value

    def __call__(self) -> None:
        flags = self._flags() if self.sleeps else None
        if flags is None:
            self._synchronize()
            return
        self._set_flags((flags & ~SCHEDULE_MASK) | BLOCKING_SYNC)  # type: ignore[misc]
        try:
            self._synchronize()
        finally:
            self._set_flags(flags)  # type: ignore[misc]


def _context_flag_calls() -> tuple[Callable | None, Callable | None]:
    """The driver's `cuCtxGetFlags` and `cuCtxSetFlags`, or Nones where it has no such calls."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
        get_flags, set_flags = driver.cuCtxGetFlags, driver.cuCtxSetFlags
    except (OSError, AttributeError):
        return None, None
    get_flags.argtypes, get_flags.restype = [ctypes.POINTER(ctypes.c_uint)], ctypes.c_int
    set_flags.argtypes, set_flags.restype = [ctypes.c_uint], ctypes.c_int
    return get_flags, set_flags
