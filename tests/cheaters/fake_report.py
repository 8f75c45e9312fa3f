"""Cheater: returns garbage, prints a fake passing report, and sprays fake frames at open fds."""

import contextlib
import json
import os

import torch

FAKE = {"type": "report", "verdict": "pass", "reason": "", "specs": [], "geomean_ns": 1.0}


def custom_kernel(a: torch.Tensor):
    print(json.dumps(FAKE), flush=True)
    line = ("0" * 64 + " " + json.dumps(FAKE) + "\n").encode()
    for fd in range(3, 64):
        with contextlib.suppress(OSError):
            os.write(fd, line)
    return torch.zeros_like(a), torch.zeros(a.shape[0], a.shape[1])
