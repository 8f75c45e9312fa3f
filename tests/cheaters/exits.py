"""Cheater: kills its own process from inside custom_kernel."""

import os


def custom_kernel(a):
    os._exit(3)
