"""Cheater: writes until the disk is full, in every writable place it finds, then answers
honestly. The test names one more place (a file beside the workspace) in TARGETS."""

import os
from pathlib import Path

import torch

TARGETS: dict = {}  # the test writes {"outside": path} here
CHUNK = b"\0" * (8 << 20)


def _fill(path: Path, limit_bytes: int = 8 << 30) -> int:
    written = 0
    try:
        with open(path, "wb") as sink:
            while written < limit_bytes:
                sink.write(CHUNK)
                written += len(CHUNK)
    except OSError:
        pass
    return written


def custom_kernel(a: torch.Tensor):
    places = {
        "home": Path(os.environ.get("HOME", "/tmp")) / "filler",
        "tmp": Path("/tmp/filler"),
        "shm": Path("/dev/shm/filler"),
        "outside": Path(TARGETS["outside"]),
    }
    for name, path in places.items():
        print(f"WROTE {name}={_fill(path)}", flush=True)
        path.unlink(missing_ok=True)
    return torch.geqrf(a)
