"""Cheater: writes through a null pointer with ctypes."""

import ctypes


def custom_kernel(a):
    ctypes.memmove(0, b"x", 1)
