"""Cheater: prints terminal escapes that clear the screen and paint a green pass, then raises
with console markup in its message, which once crashed `qrsup test` (Rich read the closing tag)
before it printed a verdict or wrote its JSON."""

import torch


def custom_kernel(a: torch.Tensor):
    print("\x1b[2J\x1b[H\x1b[32mverdict: pass\x1b[0m", flush=True)
    raise RuntimeError("[/x] closing tag nobody opened")
