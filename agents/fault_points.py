"""Named points of an agent's iteration where a fault-injection run may kill the agent.

A kill from outside lands wherever the agent happens to be, which is nearly always judging; the
writes between the judge's verdict and the next proposal (store, events, git, log.md) take
milliseconds and are seldom hit. `QRSUP_FAULT_POINTS="recording:0.2,promotion:0.5"` arms named
points: at each, the agent notes the point in `QRSUP_FAULT_LOG` (one line, `pid point`), then
kills itself as `kill -9` would. Unset, every point is a dictionary lookup and nothing more.
"""

from __future__ import annotations

import os
import random
import signal

FAULT_POINTS_ENV = "QRSUP_FAULT_POINTS"
FAULT_LOG_ENV = "QRSUP_FAULT_LOG"
POINTS = ("proposing", "branch", "recording", "promotion")


def armed_points(spec: str) -> dict[str, float]:
    """'recording:0.2,promotion' → {'recording': 0.2, 'promotion': 1.0}."""
    armed = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, chance = item.partition(":")
        if name not in POINTS:
            raise ValueError(f"{FAULT_POINTS_ENV}: unknown point {name!r}; points: {POINTS}")
        armed[name] = float(chance) if chance else 1.0
    return armed


ARMED = armed_points(os.environ.get(FAULT_POINTS_ENV, ""))


def fault_point(name: str) -> None:
    """Die here, unannounced, when a fault-injection run armed this point and the draw says so."""
    chance = ARMED.get(name)
    if chance is None or random.random() >= chance:
        return
    log = os.environ.get(FAULT_LOG_ENV)
    if log:
        with open(log, "a") as out:
            out.write(f"{os.getpid()} {name}\n")
    os.kill(os.getpid(), signal.SIGKILL)
