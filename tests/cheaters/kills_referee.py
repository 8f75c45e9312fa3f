"""Cheater: kills its parent, the judge's referee process."""

import os
import signal


def custom_kernel(a):
    os.kill(os.getppid(), signal.SIGKILL)
    return None
