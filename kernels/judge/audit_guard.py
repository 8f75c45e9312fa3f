"""No audit hook of the candidate's in the contestant.

The harness raises audited events while it prepares inputs: its watch reads functions' `__code__`
(`object.__getattr__`), its clock and thread readings open files under /proc (`open`). An audit
hook runs on each, on the main thread, with the preparing frame on the stack. One that read the
seeds there, made the same inputs with the harness's generator and factored them answered the
smoke suite's mixed specs at a hundredth of torch.geqrf's time (`audits_the_harness.py`; the CPU
accounting failed it there, where a GPU's small spec would have hidden the work). Hooks can be
neither listed nor removed, so no look could see one. But adding one is itself an audited event
that every hook already installed sees first, and a hook that raises stops the addition.

So the contestant installs a guard before any candidate code exists: it refuses every later
hook, and any change to itself, and keeps count for the watch to report (harness_watch.py). A
candidate has no honest use for an audit hook in a timed kernel. The cost is the audit
machinery's, whatever the hook: 165 µs more a look with this guard, 144 µs with a dictionary's
`setdefault` that only recorded events (over a thousand audited `__code__` reads a look, on this
project's CI CPU).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable

_guard: list[Callable[..., None]] = []  # the one installed, before the watch starts


# Libraries that add an audit hook of their own as they are imported, imported first so that
# an honest candidate that imports them later is not refused: filelock (torch.compile's caches)
# adds a fork-safety hook on Python 3.12 and later.
HOOKING_LIBRARIES = ("filelock",)


def install() -> None:
    """Refuse every audit hook added after this one (once a process; again does nothing). What
    was refused is kept by the guard itself, not in a table of this module's, which the watch
    holds to its entries."""
    if _guard:
        return
    for name in HOOKING_LIBRARIES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    refused: list[str] = []

    def guard(event: str, args: tuple, refused: list[str] = refused, me: list = _guard) -> None:
        if event == "sys.addaudithook":
            refused.append(event)
            raise RuntimeError("the judge's contestant takes no audit hooks")
        if event == "object.__setattr__" and args and args[0] is me[0]:
            refused.append(f"{event} {args[1]}")
            raise RuntimeError("the judge's audit guard cannot be changed")

    _guard.append(guard)
    sys.addaudithook(guard)


def attempts() -> int:
    """How many hooks, or changes to the guard, were refused so far."""
    return len(_guard[0].__defaults__[0]) if _guard else 0
