"""Cheater: forks until the system says no, every child idling forever, then answers honestly."""

import os
import time

import torch


def custom_kernel(a: torch.Tensor):
    forked = 0
    try:
        while forked < 100_000:
            if os.fork() == 0:
                while True:
                    time.sleep(1)
            forked += 1
    except OSError as exc:
        print(f"FORK_REFUSED={type(exc).__name__}", flush=True)
    print(f"FORKED={forked}", flush=True)
    return torch.geqrf(a)
