"""Ray as an optional extra: whether it is installed, and Ray's errors as one line each."""

from __future__ import annotations

import importlib.util

RAY_MISSING = "Ray is not installed; install the extra: pip install -e '.[ray]'"
MAX_LINE_CHARS = 300


def ray_installed() -> bool:
    """Whether `import ray` would find Ray (without importing it: that takes a while)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules, or a broken one
        return False


def one_line(exc: BaseException) -> str:
    """The error's type and first line; for a task's failure, its cause's (Ray wraps it)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text[:MAX_LINE_CHARS]
