"""The shared memory through which the contestant hands its outputs back to the referee.

One anonymous in-memory file (memfd), sized by the referee for the run's largest export and mapped
by both processes. The contestant copies its factors straight into the mapping; on a GPU the part
in use is registered with the driver, so the device writes it by DMA. An export used to pass
through a pinned staging buffer and then a file write: on an H200 a 640×512 batch's export cycle
cost 190 ms, almost all of it the write, and the exported cycles' timing allowance grew with it;
the copy into the pinned area takes 12 ms.
The referee reads the same pages, registered on its side too, so its checks copy them to the
device at the same speed.
"""

from __future__ import annotations

import ctypes
import mmap
import os

import torch

CUDA_SUCCESS = 0


class ExportArea:
    """A float32 window onto the shared file, its prefix pinned for DMA where `pin` is set."""

    def __init__(self, fd: int, pin: bool) -> None:
        self.fd = fd
        self.nbytes = os.fstat(fd).st_size
        self._map = mmap.mmap(fd, self.nbytes, access=mmap.ACCESS_WRITE) if self.nbytes else None
        self._pin = pin
        self._pinned_bytes = 0

    @classmethod
    def create(cls, nbytes: int, pin: bool) -> ExportArea:
        """A new, empty area of `nbytes` (its pages are allocated only as they are written)."""
        fd = os.memfd_create("qrsup-export", os.MFD_CLOEXEC)
        os.ftruncate(fd, nbytes)
        return cls(fd, pin)

    def floats(self, count: int) -> torch.Tensor:
        """The area's first `count` float32 values, as a CPU tensor over the shared pages."""
        if count * 4 > self.nbytes or self._map is None:
            raise ValueError(
                f"an export of {count * 4} bytes does not fit the {self.nbytes}-byte export area"
            )
        view = torch.frombuffer(self._map, dtype=torch.float32, count=count)
        if self._pin and count * 4 > self._pinned_bytes:
            self._register(view, count * 4)
        return view

    def _register(self, view: torch.Tensor, nbytes: int) -> None:
        """Pin the first `nbytes` with the CUDA driver (one registration, grown as exports
        grow). Without it a copy still works, through the driver's staging, only slower. The
        driver's API, not the runtime's: a refused registration would stay in the runtime's
        last error and surface at the next kernel launch, blamed on the candidate."""
        driver = _driver()
        torch.cuda.synchronize()  # the device's primary context is current on this thread
        if self._pinned_bytes:
            driver.cuMemHostUnregister(ctypes.c_void_p(view.data_ptr()))
            self._pinned_bytes = 0
        address, size = ctypes.c_void_p(view.data_ptr()), ctypes.c_size_t(nbytes)
        if driver.cuMemHostRegister_v2(address, size, ctypes.c_uint(0)) == CUDA_SUCCESS:
            self._pinned_bytes = nbytes
        else:
            self._pin = False

    def close(self) -> None:
        """Unpin, and let go of the mapping and its descriptor."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self._map is None:
            return
        if self._pinned_bytes:
            view = torch.frombuffer(self._map, dtype=torch.float32, count=1)
            _driver().cuMemHostUnregister(ctypes.c_void_p(view.data_ptr()))
            del view
            self._pinned_bytes = 0
        # Not closed here: a tensor over it holds the mapping but no buffer export, so a close
        # would unmap pages a view still points at. It is unmapped with its last view.
        self._map = None


def _driver() -> ctypes.CDLL:
    """The CUDA driver library torch has already loaded."""
    return ctypes.CDLL("libcuda.so.1")
