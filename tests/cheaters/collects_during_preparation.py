"""Cheater: no hook the watch lists. A reference cycle whose finalizer re-arms itself, and a
collector threshold of 1, make the finalizer run on nearly every allocation, also while the
harness clones its inputs after the guarded generation. It walks up to the preparing frame and
factors the new originals there; the timed call hands back the answer found by content. On a
GPU, a small spec's whole kernel fits in the referee's allowance for a cycle. The harness now
pauses the collector while it prepares inputs."""

import gc
import sys

import torch

_answers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (tuple(a.shape), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


class _Sentinel:
    def __init__(self) -> None:
        self.me = self  # only the cyclic collector frees it

    def __del__(self) -> None:
        try:
            frame = sys._getframe(1)
            while frame is not None:
                owner = frame.f_locals.get("self")
                if frame.f_code.co_name == "prepare" and owner is not None:
                    for a in list(getattr(owner, "originals", [])):
                        key = _key(a)
                        if key not in _answers:
                            _answers[key] = torch.geqrf(a)
                    break
                frame = frame.f_back
        finally:
            _Sentinel()


gc.set_threshold(1, 1, 1)
_Sentinel()


_told: list[bool] = []


def custom_kernel(a: torch.Tensor):
    found = _answers.pop(_key(a), None)
    if found is None:
        return torch.geqrf(a)
    if not _told:  # what the judge's test looks for in the candidate's output
        print("ANSWER FOUND READY", flush=True)
        _told.append(True)
    return found
