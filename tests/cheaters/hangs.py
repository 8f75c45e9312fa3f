"""Cheater: leaves a detached grandchild behind (double fork, new session), then hangs forever."""

import os
import time

import torch


def _spawn_escapee() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print(f"ESCAPEE_PID={os.getpid()}", flush=True)
            while True:
                time.sleep(1)
        os._exit(0)


def custom_kernel(a: torch.Tensor):
    _spawn_escapee()
    while True:
        time.sleep(1)
