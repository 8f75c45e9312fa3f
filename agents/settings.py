"""The workspace's `qrsup.toml`: defaults a person keeps beside their workspace.

Built once, from the file's tables, into one frozen object. Keys never live here: they come
from the environment only.

```toml
[judge]
isolation = "auto"      # "auto", "required" (fail without the boundary) or "off"
user = "qrsup-judge"    # who the contestant runs as when the judge runs as root
private_dir_mb = 2048   # the contestant's work directory, Triton's cache included
tmp_mb = 512            # each of its /tmp and /dev/shm
max_processes = 4096    # processes and threads; a fork bomb stops here
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from qrsup.kernels.judge.sandbox import IsolationSettings

SETTINGS_FILE = "qrsup.toml"
MiB = 2**20
_JUDGE_KEYS = {"isolation", "user", "private_dir_mb", "tmp_mb", "max_processes"}


class SettingsError(ValueError):
    """qrsup.toml cannot be read or holds a value qrsup does not accept."""


@dataclass(frozen=True)
class WorkspaceSettings:
    """What qrsup.toml sets; every field has a default, so the file is optional."""

    judge: IsolationSettings = field(default_factory=IsolationSettings)


def load_settings(workspace: Path) -> WorkspaceSettings:
    """The workspace's settings, or the defaults where it has no qrsup.toml."""
    path = workspace / SETTINGS_FILE
    if not path.exists():
        return WorkspaceSettings()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    return WorkspaceSettings(judge=_judge(data.get("judge", {}), path))


def _judge(table: object, path: Path) -> IsolationSettings:
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [judge] must be a table")
    unknown = set(table) - _JUDGE_KEYS
    if unknown:
        raise SettingsError(f"{path}: unknown [judge] key(s): {', '.join(sorted(unknown))}")
    defaults = IsolationSettings()
    try:
        return IsolationSettings(
            mode=str(table.get("isolation", defaults.mode)),
            user=table.get("user", defaults.user),
            private_dir_bytes=int(table.get("private_dir_mb", defaults.private_dir_bytes // MiB))
            * MiB,
            tmp_bytes=int(table.get("tmp_mb", defaults.tmp_bytes // MiB)) * MiB,
            max_processes=int(table.get("max_processes", defaults.max_processes)),
        )
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"{path}: [judge]: {exc}") from None
