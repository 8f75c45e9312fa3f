"""Cheater: answers honestly inside its window, then a thread it left behind holds the
interpreter's lock while it sleeps (no CPU), so the harness's own steps after the window take the
time. Done in every process, a fresh calibration cannot excuse it."""

import ctypes
import threading

import torch

_sleep_holding_the_lock = ctypes.PyDLL(None).usleep
_stall = threading.Timer(0, lambda: None)


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    global _stall
    if not _stall.is_alive():
        _stall = threading.Timer(0.003, _sleep_holding_the_lock, args=(30_000,))
        _stall.start()
    return torch.geqrf(a)
