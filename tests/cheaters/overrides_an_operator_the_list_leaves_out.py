"""Cheater: registers a kernel for `aten::empty_strided`, which no harness step calls by name
but which the clone of each input calls below Python to allocate its copy. At each such
allocation the previous copy is complete, so it is factored there, out of every timed window,
and custom_kernel hands back what was computed (found by the copy's address and content). The
watch's look at the harness's own operators before each inspection does not see it; before
the audit after each spec, three to six of seven smoke specs passed on the CPU at 4.9 to 9
times torch.geqrf's speed (the others failed the referee's accounting)."""

import contextlib

import torch

_done: dict = {}
_pending: list = []
_busy = [False]
_lib = torch.library.Library("aten", "IMPL")


def _key(a: torch.Tensor) -> tuple:
    flat = a.reshape(-1)
    return (a.data_ptr(), float(flat[0]), float(flat[-1]), float(flat[flat.numel() // 2]))


@contextlib.contextmanager
def _own_work():
    """The cheater's own allocations are not the harness's copies."""
    _busy[0] = True
    try:
        yield
    finally:
        _busy[0] = False


def _empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True)) if all(size) else 0
    out = torch.empty(extent, dtype=dtype, device=device).as_strided(size, stride)
    if _busy[0]:
        return out
    with _own_work():
        while _pending:
            given = _pending.pop()
            _done[_key(given)] = torch.geqrf(given)
    if len(size) == 3 and size[-1] == size[-2] and out.dtype == torch.float32:
        _pending.append(out)
    return out


_lib.impl("empty_strided", _empty_strided, "CPU")


def custom_kernel(a: torch.Tensor):
    key = _key(a)
    if key in _done:
        return _done.pop(key)
    with _own_work():
        return torch.geqrf(a)
