"""The shared memory through which the contestant hands its outputs back to the referee.

One anonymous in-memory file (memfd), sized by the referee for the run's largest export and mapped
by both processes. The contestant copies its factors straight into the mapping; on a GPU the part
in use is registered with the driver, so the device writes it by DMA. An export used to pass
through a pinned staging buffer and then a file write: on an H200 a 640×512 batch's export cycle
cost 190 ms, almost all of it the write, and the exported cycles' timing allowance grew with it;
the copy into the pinned area takes 12 ms.
The referee reads the same pages, registered on its side too, so its checks copy them to the
device at the same speed.

Each side registers the whole area once, as it opens it, before any candidate code runs. A warm
judge opens it while it waits for its run. Registered as the exports grew, it cost calibration's
exports on an H200 0.32 s of qr_v2's 12 benchmarks (0.53 → 0.21 s); a run now pays for the
whole area's release as its contestant closes instead, 0.1-0.2 s more for a run of small specs.
"""

from __future__ import annotations

import ctypes
import mmap
import os

import torch

CUDA_SUCCESS = 0


class ExportArea:
    """A float32 window onto the shared file, pinned for DMA once `pin` is called."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.nbytes = os.fstat(fd).st_size
        self._map = mmap.mmap(fd, self.nbytes, access=mmap.ACCESS_WRITE) if self.nbytes else None
        self._pinned = False

    @classmethod
    def create(cls, nbytes: int) -> ExportArea:
        """A new, empty area of `nbytes` (its pages are allocated as they are written or
        pinned)."""
        fd = os.memfd_create("qrsup-export", os.MFD_CLOEXEC)
        os.ftruncate(fd, nbytes)
        return cls(fd)

    def floats(self, count: int) -> torch.Tensor:
        """The area's first `count` float32 values, as a CPU tensor over the shared pages."""
        if count * 4 > self.nbytes or self._map is None:
            raise ValueError(
                f"an export of {count * 4} bytes does not fit the {self.nbytes}-byte export area"
            )
        return torch.frombuffer(self._map, dtype=torch.float32, count=count)

    def pin(self) -> None:
        """Register the whole area with the CUDA driver, once; where it refuses, copies still
        work, through the driver's staging, only slower. The driver's API, not the runtime's:
        a refused registration would stay in the runtime's last error and surface at the next
        kernel launch, blamed on the candidate."""
        if self._pinned or self._map is None:
            return
        torch.cuda.synchronize()  # the device's primary context is current on this thread
        size, flags = ctypes.c_size_t(self.nbytes), ctypes.c_uint(0)
        self._pinned = _driver().cuMemHostRegister_v2(self._address(), size, flags) == CUDA_SUCCESS

    def _address(self) -> ctypes.c_void_p:
        view = torch.frombuffer(self._map, dtype=torch.uint8, count=1)
        return ctypes.c_void_p(view.data_ptr())

    def close(self) -> None:
        """Unpin, and let go of the mapping and its descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._map is None:
            return
        if self._pinned:
            _driver().cuMemHostUnregister(self._address())
            self._pinned = False
        # Not closed here: a tensor over it holds the mapping but no buffer export, so a close
        # would unmap pages a view still points at. It is unmapped with its last view.
        self._map = None


def _driver() -> ctypes.CDLL:
    """The CUDA driver library torch has already loaded."""
    return ctypes.CDLL("libcuda.so.1")
