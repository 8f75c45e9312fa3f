"""Which Ray cluster to use: an address by Ray's convention, or the session's local instance.

qrsup starts a local instance (supervisor/ray_host.py) when neither `--ray-address` nor
`RAY_ADDRESS` names a cluster; it records its address in a small JSON file, which every judge
run reads afresh, so a restarted instance is found again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RayTarget:
    """A cluster's address and the environment a driver needs to join it."""

    address: str
    env: Mapping[str, str] = field(default_factory=dict)


def write_instance(path: Path, address: str, auth_mode: str | None, pid: int) -> None:
    """Record a running local instance (atomically: readers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps({"address": address, "auth_mode": auth_mode, "pid": pid}))
    temp.replace(path)


def read_instance(path: Path) -> RayTarget | None:
    """The local instance recorded at `path`, or None when none is recorded."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    # ray.init() turns token authentication on for the cluster it starts; a driver joining by
    # address must be told to present the token (~/.ray/auth_token) too.
    env = {"RAY_AUTH_MODE": data["auth_mode"]} if data.get("auth_mode") else {}
    return RayTarget(str(data["address"]), env)


def instance_pid(path: Path) -> int | None:
    try:
        return int(json.loads(path.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def address_from(given: str | None, environ: Mapping[str, str]) -> str:
    """`--ray-address`, else Ray's own `RAY_ADDRESS`; "" means: start a local instance."""
    return given or environ.get("RAY_ADDRESS", "")
