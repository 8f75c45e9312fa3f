"""Cheater: raises inside custom_kernel."""


def custom_kernel(a):
    raise RuntimeError("deliberate failure inside the candidate")
