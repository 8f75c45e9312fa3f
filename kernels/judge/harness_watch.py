"""Does the candidate reach into the harness that prepares its inputs?

The contestant generates each repetition's inputs in its own process, where the candidate's code
also lives. A candidate that replaces the generator (or a torch function it calls), or that
installs a tracer, a profiler or a torch mode, can do its work while the inputs are made, where
no timed window sees it. The referee's clock over the whole cycle catches that only for work
larger than the harness's own noise: a small spec's whole kernel fits inside it.

So the harness watches its own tools. Before the candidate is imported, it notes the objects
behind the names its input generation uses, the interpreter's hooks, the methods of the
harness's own classes, and the attributes of the harness's own objects that nothing but the
harness sets (its clock, its export area, its watch); before and after every preparation, and
before the outputs are inspected, each must still be the same. A class method or an object's
attribute is how a candidate reaches the clock without touching a module name: patching
`DeviceClock.time_ns` once claimed 1/50 of the real time on the CPU and passed, and replacing the
contestant's clock or its export method went unseen too.

This is not a wall: code that swaps a tool only while the harness is not looking, or patches C
functions or the CUDA driver, goes unseen here and is left to the referee's clock (the README
says so).
"""

from __future__ import annotations

import ast
import gc
import inspect
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType

import torch
from torch.utils._device import DeviceContext

MONITORING_TOOLS = range(6)  # sys.monitoring's tool ids (Python 3.12+)
_MISSING = object()  # what a removed attribute reads as


def _callables(namespace: object, names: set[str] | None = None) -> dict[str, object]:
    """The namespace's callable attributes (those of `names` only, if given), as they are now."""
    return {
        name: value
        for name, value in vars(namespace).items()
        if callable(value) and (names is None or name in names)
    }


def torch_names(module: ModuleType) -> set[str]:
    """The `torch.X` and `torch.linalg.X` names a module's source calls, as `X`. (Torch rebinds
    a few of its own functions when a candidate first compiles with it, torch.manual_seed among
    them: only the ones the harness calls are watched.)"""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):  # no source shipped: its own functions are still watched
        return set()
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if owner in ("torch", "torch.linalg"):
                found.add(node.attr)
    return found


def _own_classes(module: ModuleType) -> list[type]:
    """The classes `module` defines (not those it imports)."""
    name = module.__name__
    return [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == name]


def _settled(obj: object, changing: frozenset[str]) -> dict[str, object]:
    """`obj`'s own attributes but those the harness changes as it runs."""
    return {name: value for name, value in vars(obj).items() if name not in changing}


def _differing(before: dict[str, object], now: dict[str, object]) -> list[str]:
    """Names bound to another object than before, added or removed, in order."""
    changed = [name for name, value in before.items() if now.get(name, _MISSING) is not value]
    return changed + [name for name in now if name not in before]


def _name(module: ModuleType) -> str:
    """The module's import name, also when it runs as `__main__` (`python -m`)."""
    spec = getattr(module, "__spec__", None)
    return spec.name if spec is not None else module.__name__


def _function_modes() -> int:
    """Torch function modes on the stack, but for the one `torch.set_default_device` installs
    (an honest candidate may call it; the generator names its device)."""
    modes = torch.overrides._get_current_function_mode_stack()
    return sum(type(mode) is not DeviceContext for mode in modes)


def _hooks() -> dict[str, object]:
    """The interpreter's and torch's hooks into every call, as they are now."""
    monitoring = getattr(sys, "monitoring", None)
    tools = tuple(monitoring.get_tool(i) for i in MONITORING_TOOLS) if monitoring else ()
    return {
        "a trace function (sys.settrace)": sys.gettrace(),
        "a profile function (sys.setprofile)": sys.getprofile(),
        "a trace function for threads (threading.settrace)": threading.gettrace(),
        "a profile function for threads (threading.setprofile)": threading.getprofile(),
        "a sys.monitoring tool": tools,
        "a torch function mode": _function_modes(),
        "a torch dispatch mode": torch._C._len_torch_dispatch_stack(),
        "a garbage-collector callback": tuple(gc.callbacks),
    }


class HarnessWatch:
    """The harness's tools as they were before the candidate loaded."""

    def __init__(self, modules: Iterable[ModuleType]) -> None:
        """Watch every callable of `modules` (the harness's own) and every attribute of the
        classes they define, the torch functions their source calls, and every tensor method:
        the class's own dictionary only grows when code patches a method of its C base."""
        modules = list(modules)
        used = set().union(*(torch_names(m) for m in modules))
        self._names = {_name(m): (m, _callables(m)) for m in modules}
        self._names["torch"] = (torch, _callables(torch, used))
        self._names["torch.linalg"] = (torch.linalg, _callables(torch.linalg, used))
        self._classes = {
            f"{_name(m)}.{cls.__name__}": (cls, dict(vars(cls)))
            for m in modules
            for cls in _own_classes(m)
        }
        self._objects: dict[str, tuple[object, frozenset[str], dict[str, object]]] = {}
        self._tensor_methods = _callables(torch.Tensor)
        self._hooks = _hooks()

    def add_objects(self, objects: Mapping[str, tuple[object, Iterable[str]]]) -> None:
        """Watch harness objects, once they are whole (this watch may be one of their
        attributes): label → (object, the attributes the harness itself changes as it runs).
        Every other attribute must stay bound to what it is now, and none be added: an
        instance attribute named like a method hides the method."""
        for label, (obj, changing) in objects.items():
            kept = frozenset(changing)
            self._objects[label] = (obj, kept, _settled(obj, kept))

    def changes(self) -> list[str]:
        """What the candidate replaced or installed since, in words; empty when nothing."""
        found = [
            f"{label}.{name}"
            for label, (space, before) in self._names.items()
            for name, value in before.items()
            if vars(space).get(name) is not value
        ]
        found += [
            f"{label}.{name}"
            for label, (cls, before) in self._classes.items()
            for name in _differing(before, dict(vars(cls)))
        ]
        found += [
            f"the {label}'s {name}"
            for label, (obj, changing, before) in self._objects.items()
            for name in _differing(before, _settled(obj, changing))
        ]
        methods = _callables(torch.Tensor)
        found += [f"torch.Tensor.{name}" for name in methods.keys() - self._tensor_methods.keys()]
        found += [
            f"torch.Tensor.{name}"
            for name, value in self._tensor_methods.items()
            if methods.get(name) is not value
        ]
        now = _hooks()
        installed = [f"installed {hook}" for hook, was in self._hooks.items() if now[hook] != was]
        return ([f"replaced {', '.join(found[:5])}"] if found else []) + installed

    def seen(self) -> str:
        """What changed, in one line, or ""."""
        return "; ".join(self.changes())

    def guard(self, body: Callable[[], None]) -> str:
        """Run `body` (a preparation) between two looks; what changed, or ""."""
        if changed := self.seen():
            return changed
        body()
        return self.seen()
