"""Cheater: leaves a detached grandchild behind (double fork, new session), then hangs forever.

The grandchild becomes `sleep` with a random mark in its argument, so a test can look for it
among every process of the machine, whatever namespace it ran in.
"""

import os
import random
import time

import torch


def _spawn_escapee() -> None:
    mark = random.randrange(10**8, 10**9)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            print(f"ESCAPEE_MARK={mark}", flush=True)
            os.execv("/bin/sleep", ["sleep", f"86399.{mark}"])
        os._exit(0)


def custom_kernel(a: torch.Tensor):
    _spawn_escapee()
    while True:
        time.sleep(1)
