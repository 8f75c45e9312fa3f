"""The contestant's watch over the tools that prepare a candidate's inputs
(kernels/judge/harness_watch.py): what a candidate could hook is seen, and what torch does by
itself for an honest candidate is not."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import types

import torch
from qrsup.kernels import generators
from qrsup.kernels.judge.contestant import HARNESS_OPERATORS
from qrsup.kernels.judge.harness_watch import HarnessWatch, torch_names
from qrsup.kernels.suites import Spec
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


def test_the_watch_covers_the_torch_functions_the_generator_calls():
    assert {"randn", "randperm", "triu", "Generator"} <= torch_names(generators)
    assert "manual_seed" not in torch_names(generators)  # a method of its generator objects


def test_a_module_without_source_still_has_its_own_functions_watched(monkeypatch):
    shipped_bare = types.ModuleType("shipped_bare")
    exec("def make():\n    return 1\n", shipped_bare.__dict__)
    assert torch_names(shipped_bare) == set()
    watch = HarnessWatch([shipped_bare])
    monkeypatch.setattr(shipped_bare, "make", lambda: 2)
    assert watch.changes() == ["replaced shipped_bare.make"]


def test_a_replaced_function_or_method_is_named(monkeypatch):
    watch = HarnessWatch([generators])
    assert watch.changes() == []
    monkeypatch.setattr(torch, "randn", lambda *args, **kwargs: None)
    monkeypatch.setattr(generators, "generate_input", lambda spec, device: None)
    assert watch.changes() == ["replaced qrsup.kernels.generators.generate_input, torch.randn"]
    monkeypatch.undo()
    monkeypatch.setattr(torch.Tensor, "triu", lambda self, diagonal=0: self, raising=False)
    assert watch.changes() == ["replaced torch.Tensor.triu"]


def _module_with_a_class() -> types.ModuleType:
    harness = types.ModuleType("harness_like")
    source = (
        "def make(x=1):\n    return x\n"
        "def counter():\n    step = 1\n    def add(x):\n        return x + step\n    return add\n"
        "add = counter()\n"
        "class Base:\n    pass\n"
        "class Clock(Base):\n    def time_ns(self):\n        return 100\n"
    )
    exec(source, harness.__dict__)
    harness.Base.__module__ = harness.Clock.__module__ = "harness_like"
    return harness


def test_a_function_changed_behind_the_same_object_is_named():
    """Code, defaults and closure cells can be swapped while the name keeps its object."""
    harness = _module_with_a_class()
    watch = HarnessWatch([harness])
    harness.Clock.time_ns.__code__ = (lambda self: 2).__code__
    assert watch.changes() == ["replaced harness_like.Clock.time_ns"]
    watch = HarnessWatch([harness])
    harness.make.__defaults__ = (2,)
    harness.add.__closure__[0].cell_contents = 0
    assert watch.changes() == ["replaced harness_like.make, harness_like.add"]


def test_an_object_given_another_class_or_a_class_other_bases_is_named():
    harness = _module_with_a_class()
    clock = harness.Clock()
    watch = HarnessWatch([harness])
    watch.add_objects({"clock": (clock, ())})

    class Faster(harness.Clock):
        def time_ns(self):
            return 2

    clock.__class__ = Faster
    assert watch.changes() == ["replaced the clock's __class__"]
    clock.__class__ = harness.Clock
    assert watch.changes() == []

    class Inherited:  # what the class would take its missing methods from
        def synchronize(self):
            return None

    harness.Clock.__bases__ = (Inherited,)
    assert watch.changes() == ["replaced harness_like.Clock.__bases__"]


def test_the_watched_operators_are_every_one_the_harness_runs():
    """The list is written down (tracing it costs a contestant 1.4 s at its start): traced here,
    every operator of the input generation (each case), the clone, the flush, the mutation check
    and the export must be on it."""
    seen: set[str] = set()

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.add(func.name())
            return func(*args, **(kwargs or {}))

    with Trace():
        for case in [*generators.BUILDERS, "mixed"]:
            a = generators.generate_input(Spec(3, 8, 100.0, case, 1), "cpu")
            given = torch.Tensor.clone(a)
            assert torch.equal(a, given)
            torch.empty(16).zero_()
            flat = given.detach().reshape(-1)
            torch.empty(flat.numel() + 8)[4 : 4 + flat.numel()].copy_(flat, non_blocking=True)
    assert seen <= set(HARNESS_OPERATORS), seen - set(HARNESS_OPERATORS)


def test_a_kernel_registered_for_an_operator_the_harness_runs_is_named():
    watch = HarnessWatch([generators], ["aten::clone", "aten::triu"])
    library = torch.library.Library("aten", "IMPL")
    assert watch.changes(operators=True) == []
    library.impl("clone", lambda x, *, memory_format=None: x, "CPU")
    try:
        assert watch.changes() == []  # looked at only when asked
        assert watch.changes(operators=True) == ["replaced the kernel of aten::clone (CPU)"]
    finally:
        library._destroy()
    assert watch.changes(operators=True) == []


def test_a_table_the_harness_reads_is_watched_entry_by_entry():
    """The generator picks a builder per case from a dict: swapping one entry leaves every
    name bound as it was."""
    watch = HarnessWatch([generators])
    dense = generators.BUILDERS["dense"]
    generators.BUILDERS["dense"] = lambda a, gen, cond: dense(a, gen, cond)
    try:
        assert watch.changes() == ["replaced qrsup.kernels.generators.BUILDERS"]
    finally:
        generators.BUILDERS["dense"] = dense
    assert watch.changes() == []


def test_an_audit_sees_a_kernel_for_an_operator_the_list_leaves_out():
    """The clone calls `aten::empty_strided` below Python: a kernel registered for it runs on
    every input the harness copies, though no harness step names it."""
    watch = HarnessWatch([generators], ["aten::clone"])
    library = torch.library.Library("aten", "IMPL")
    assert watch.changes(every_operator=True) == []
    library.impl("empty_strided", lambda *a, **k: torch.empty(0), "CPU")
    try:
        assert watch.changes(operators=True) == []  # not one of the listed operators
        seen = watch.changes(every_operator=True)
        assert seen == ["replaced the kernel of aten::empty_strided (CPU)"]
    finally:
        library._destroy()
    assert watch.changes(every_operator=True) == []


def test_hooks_into_every_call_are_named():
    watch = HarnessWatch([generators])
    sys.setprofile(lambda frame, event, value: None)
    try:
        assert watch.changes() == ["installed a profile function (sys.setprofile)"]
    finally:
        sys.setprofile(None)
    with TorchFunctionMode():
        assert watch.changes() == ["installed a torch function mode"]
    gc.callbacks.append(lambda phase, info: None)
    try:
        assert watch.changes() == ["installed a garbage-collector callback"]
    finally:
        gc.callbacks.pop()
    assert watch.changes() == []


def test_a_default_device_is_not_a_hook():
    watch = HarnessWatch([generators])
    torch.set_default_device("cpu")
    try:
        assert watch.changes() == []
        with TorchFunctionMode():
            assert watch.changes() == ["installed a torch function mode"]
    finally:
        torch.set_default_device(None)


def test_a_guarded_preparation_that_changes_nothing_says_nothing_and_one_that_hooks_is_named():
    watch = HarnessWatch([generators])
    made: list[int] = []
    assert watch.guard(lambda: made.append(1)) == "" and made == [1]
    try:
        reason = watch.guard(lambda: sys.setprofile(lambda frame, event, value: None))
    finally:
        sys.setprofile(None)
    assert reason == "installed a profile function (sys.setprofile)"


COMPILES_HONESTLY = textwrap.dedent(
    """
    import torch
    from qrsup.kernels import generators
    from qrsup.kernels.judge.harness_watch import HarnessWatch

    from qrsup.kernels.judge.contestant import HARNESS_OPERATORS

    watch, seed = HarnessWatch([generators], HARNESS_OPERATORS), torch.manual_seed
    compiled = torch.compile(lambda x: x * 2 + 1, backend="eager")
    assert float(compiled(torch.ones(4)).sum()) == 12.0
    print(torch.manual_seed is seed, watch.changes(every_operator=True))
    """
)


def test_an_honest_candidate_that_compiles_with_torch_changes_nothing_watched():
    """Compiling rebinds torch.manual_seed, which the generator does not call."""
    done = subprocess.run(
        [sys.executable, "-c", COMPILES_HONESTLY], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False []"
