"""Shim for running the kernels in Triton's CPU interpreter (TRITON_INTERPRET=1) under NumPy ≥ 2.4.

Triton 3.6's interpreter keeps scalars as 1-element arrays and turns them into loop bounds with
int(array), which NumPy 2.4 rejects ("only 0-dimensional arrays can be converted"), so every
runtime-bounded loop fails there. This makes the interpreter's tensor.__index__ take the element.
"""

import functools

from triton.runtime import interpreter


@functools.cache
def patch_scalar_index() -> None:
    """Install the shim once per process; it only touches the interpreter's patched attributes."""
    original = interpreter._patch_lang_tensor

    def patched(tensor: type, scope: interpreter._LangPatchScope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    interpreter._patch_lang_tensor = patched
