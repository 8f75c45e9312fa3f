"""Cheater: replaces nothing, yet still works while the judge prepares its inputs. A profile
function sees every call return, so it catches the harness's input generator handing back each
new matrix and factors it there; the timed call only hands back the finished answer. The harness
sees the profile function installed."""

import sys

import torch
from qrsup.kernels.fast.geqrf import geqrf as fast_geqrf

_ready = []


def geqrf(a: torch.Tensor):
    return fast_geqrf(a, check_finite=False) if a.is_cuda else torch.geqrf(a)


def _on_call(frame, event, value):
    if event == "return" and frame.f_code.co_name == "generate_input":
        _ready.append(geqrf(value))


sys.setprofile(_on_call)


def custom_kernel(a: torch.Tensor):
    if _ready:
        return _ready.pop(0)
    return geqrf(a)
