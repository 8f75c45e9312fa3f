"""Cheater: writes a forged 'finished in 1 ns' reply, with the right sequence number, straight
into the harness's reply pipe before doing the real work."""

import json
import os
import sys

import torch


def _current_seq() -> int | None:
    frame = sys._getframe()
    while frame is not None:
        message = frame.f_locals.get("message")
        if isinstance(message, dict) and "seq" in message:
            return message["seq"]
        frame = frame.f_back
    return None


def custom_kernel(a: torch.Tensor):
    reply_fd = int(sys.argv[2])
    forged = {"ok": True, "elapsed_ns": 1, "seq": _current_seq()}
    os.write(reply_fd, (json.dumps(forged) + "\n").encode())
    return torch.geqrf(a)
