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
before the outputs are inspected, each must still be the same object, a function with the same
code, defaults and closure, an object of the same class. A class method or an object's
attribute is how a candidate reaches the clock without touching a module name: patching
`DeviceClock.time_ns` once claimed 1/50 of the real time on the CPU and passed, and replacing the
contestant's clock or its export method went unseen too.

The harness's data is watched like its functions: a module's tables (the generator's builders
by case) must hold the same entries. Below Python, the dispatcher decides which kernel an
operator runs, and `torch.library` lets any code register one: before each preparation and
before outputs are inspected, the kernels of the operators the harness runs must still be where
they were registered when it started, and after benchmark specs are timed (`audit`, 45–90
ms, outside every cycle) so must those of every aten operator that existed then, since the
listed ones call others below Python.

This is not a wall: it runs in the candidate's process, so code that aims at it gets past it
(it can replace the watch's own methods, or swap a tool only while the harness is not
looking), and patches of C functions or the CUDA driver go unseen. That is left to the
referee's clock (the README says so); the watch makes the easy patches fail with a clear
verdict.
"""

from __future__ import annotations

import ast
import builtins
import gc
import inspect
import itertools
import operator
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from types import FunctionType, MethodType, ModuleType

import torch
from qrsup.kernels.judge import audit_guard
from torch.utils._device import DeviceContext

MONITORING_TOOLS = range(6)  # sys.monitoring's tool ids (Python 3.12+)
_MISSING = object()  # what a removed attribute reads as
# A Python signal handler runs between the harness's bytecodes with the frame it interrupted: at
# a timer's half-millisecond tick one found each preparation's seeds and factored its inputs.
# (Timers themselves are not watched: without a handler their signal ends the process.)
SIGNALS = tuple(signal.valid_signals())
TABLES = (dict, list)  # mutable data whose entries are watched (an empty one may fill)


def _functions(value: object) -> list[FunctionType]:
    """The Python functions behind a value: itself, or what a method, staticmethod, classmethod
    or property wraps."""
    if type(value) is FunctionType:
        return [value]
    if isinstance(value, (MethodType, staticmethod, classmethod)):
        return _functions(value.__func__)
    if isinstance(value, property):
        return [f for part in (value.fget, value.fset, value.fdel) for f in _functions(part)]
    return []


def _cell(cell: object) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled
        return _MISSING


def _insides(value: object) -> tuple[object, ...]:
    """What a patch can change behind a value that stays the same object: its functions' code,
    defaults and closure cells, or a table's entries (empty for a value with neither). Swapping
    `DeviceClock.time_ns.__code__` in place kept the function object and passed with a fiftieth
    of the real time on the CPU; so did a builder swapped in `generators.BUILDERS`."""
    if type(value) is dict:
        return tuple(itertools.chain.from_iterable(value.items()))
    if type(value) is list:
        return tuple(value)
    parts: tuple[object, ...] = ()
    for function in _functions(value):
        kwdefaults = function.__kwdefaults__
        parts += (function.__code__, function.__defaults__, kwdefaults)
        if kwdefaults:
            parts += tuple(kwdefaults.values())
        if function.__closure__:
            parts += tuple(_cell(cell) for cell in function.__closure__)
    return parts


Snapshot = dict[str, tuple[object, tuple[object, ...]]]


def _snapshot(namespace: Mapping[str, object]) -> Snapshot:
    return {name: (value, _insides(value)) for name, value in namespace.items()}


def _unchanged(was: tuple[object, tuple[object, ...]], now: object) -> bool:
    value, insides = was
    if now is not value:
        return False
    if not insides and type(value) not in TABLES:  # nothing behind it to change
        return True
    now_insides = _insides(now)  # compared by identity: a planted object's __eq__ could lie
    return len(now_insides) == len(insides) and all(map(operator.is_, insides, now_insides))


def _differing(before: Snapshot, now: Mapping[str, object]) -> list[str]:
    """Names bound to another object than before (or to one whose code changed), added or
    removed, in order."""
    changed = [name for name, was in before.items() if not _unchanged(was, now.get(name, _MISSING))]
    return changed + [name for name in now if name not in before]


def _globals(module: ModuleType) -> dict[str, object]:
    """A harness module's names, data as well as functions, but for the interpreter's own
    (`__builtins__`, `__warningregistry__`), which change under any module."""
    return {name: value for name, value in vars(module).items() if not name.startswith("__")}


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
    """`obj`'s own attributes but those the harness changes as it runs, and its class: setting
    `__class__` to a subclass that overrides a method leaves every attribute as it was."""
    kept = {name: value for name, value in vars(obj).items() if name not in changing}
    return kept | {"__class__": type(obj)}


def _class_dict(cls: type) -> dict[str, object]:
    """A class's own attributes and its bases, which decide what it inherits."""
    return dict(vars(cls)) | {"__bases__": cls.__bases__}


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
        "a signal handler": tuple(map(signal.getsignal, SIGNALS)),
        "an audit hook, which the contestant refused": audit_guard.attempts(),
    }


def _dispatch_keys(device_type: str) -> list[str]:
    """The keys that route a call on a `device_type` tensor: the device's own kernel, its
    autograd kernel, a factory's backend choice, and views' and in-place ops' bookkeeping."""
    device = device_type.upper()
    return [device, f"Autograd{device}", "BackendSelect", "ADInplaceOrView"]


def _dispatch_points(
    operators: Iterable[str], key_names: Iterable[str]
) -> list[tuple[str, str, object]]:
    """(label, operator, dispatch key) for each operator at each key."""
    keys = {name: getattr(torch._C.DispatchKey, name) for name in dict.fromkeys(key_names)}
    return [(f"{op} ({name})", op, key) for op in operators for name, key in keys.items()]


def _kernels(points: list[tuple[str, str, object]]) -> list[str]:
    """Where the dispatcher sends each point now, as the place its kernel was registered: a
    kernel registered through `torch.library` for `aten::clone` factored each input as the
    harness cloned it, out of every timed window."""
    computed = torch._C._dispatch_get_computed_kernel_for_dispatch_key
    found = []
    for _, operator_name, key in points:
        try:
            found.append(repr(computed(operator_name, key)))
        except RuntimeError:  # no kernel for that key, now
            found.append("")
    return found


class HarnessWatch:
    """The harness's tools as they were before the candidate loaded."""

    def __init__(
        self,
        modules: Iterable[ModuleType],
        operators: Iterable[str] = (),
        device_type: str = "cpu",
    ) -> None:
        """Watch every name of `modules` (the harness's own) and every attribute of the
        classes they define, the torch functions their source calls, and every tensor method:
        the class's own dictionary only grows when code patches a method of its C base. The
        dispatcher's kernels for `operators` (those the harness runs, on `device_type`) are
        looked at only when asked (`seen(operators=True)`): about 0.5 ms a look; every
        operator's, only in an audit (`seen(every_operator=True)`)."""
        modules = list(modules)
        used = set().union(*(torch_names(m) for m in modules))
        self._names = {_name(m): (m, _snapshot(_globals(m))) for m in modules}
        self._names["torch"] = (torch, _snapshot(_callables(torch, used)))
        # The harness calls builtins too (the generator's max, min, enumerate), looked up at
        # each call: a replaced one runs the candidate's code inside a preparation.
        self._names["builtins"] = (builtins, _snapshot(_callables(builtins)))
        self._names["torch.linalg"] = (torch.linalg, _snapshot(_callables(torch.linalg, used)))
        self._classes = {
            f"{_name(m)}.{cls.__name__}": (cls, _snapshot(_class_dict(cls)))
            for m in modules
            for cls in _own_classes(m)
        }
        self._objects: dict[str, tuple[object, frozenset[str], Snapshot]] = {}
        self._tensor_methods = _snapshot(_callables(torch.Tensor))
        self._hooks = _hooks()
        self._points = _dispatch_points(operators, _dispatch_keys(device_type))
        self._kernels = _kernels(self._points)
        # Every aten operator, at the CPU's keys too (a GPU's inputs pass through CPU tensors).
        # Other namespaces are not the harness's, and torch fills some in as it goes: compiling
        # gives the collectives of `_c10d_functional` autograd kernels.
        every_key = _dispatch_keys(device_type) + _dispatch_keys("cpu")
        every = [op for op in torch._C._dispatch_get_all_op_names() if op.startswith("aten::")]
        self._every_point = _dispatch_points(every, every_key)
        self._every_kernel = _kernels(self._every_point)

    def add_objects(self, objects: Mapping[str, tuple[object, Iterable[str]]]) -> None:
        """Watch harness objects, once they are whole (this watch may be one of their
        attributes): label → (object, the attributes the harness itself changes as it runs).
        Every other attribute must stay bound to what it is now, and none be added: an
        instance attribute named like a method hides the method."""
        for label, (obj, changing) in objects.items():
            kept = frozenset(changing)
            self._objects[label] = (obj, kept, _snapshot(_settled(obj, kept)))

    def changes(self, operators: bool = False, every_operator: bool = False) -> list[str]:
        """What the candidate replaced or installed since, in words; empty when nothing. With
        `operators`, the kernels of the harness's operators too; with `every_operator`, those
        of every operator that existed when the watch began (an audit)."""
        found = [
            f"{label}.{name}"
            for label, (space, before) in self._names.items()
            for name, was in before.items()
            if not _unchanged(was, vars(space).get(name, _MISSING))
        ]
        found += [
            f"{label}.{name}"
            for label, (cls, before) in self._classes.items()
            for name in _differing(before, _class_dict(cls))
        ]
        found += [
            f"the {label}'s {name}"
            for label, (obj, changing, before) in self._objects.items()
            for name in _differing(before, _settled(obj, changing))
        ]
        found += [
            f"torch.Tensor.{name}"
            for name in _differing(self._tensor_methods, _callables(torch.Tensor))
        ]
        points, kernels = self._points, self._kernels
        if every_operator:
            points, kernels = self._every_point, self._every_kernel
        if operators or every_operator:
            now_kernels = zip(points, kernels, _kernels(points), strict=True)
            found += [f"the kernel of {point[0]}" for point, was, now in now_kernels if now != was]
        now = _hooks()
        installed = [f"installed {hook}" for hook, was in self._hooks.items() if now[hook] != was]
        return ([f"replaced {', '.join(found[:5])}"] if found else []) + installed

    def seen(self, operators: bool = False, every_operator: bool = False) -> str:
        """What changed, in one line, or ""; with `operators` or `every_operator`, the
        dispatcher's kernels too (`changes`)."""
        return "; ".join(self.changes(operators, every_operator))

    def guard(self, body: Callable[[], None]) -> str:
        """Run `body` (a preparation) between two looks; what changed, or "". The first looks
        at the harness's operators too: a finalizer on the last outputs, which fires as the
        harness lets them go just before, registered a clone kernel there that factored each
        input and removed itself after the last clone (22 times torch.geqrf's speed on the
        smoke suite)."""
        if changed := self.seen(operators=True):
            return changed
        body()
        return self.seen()
