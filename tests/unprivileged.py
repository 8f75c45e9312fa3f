"""Running a test's command as a throwaway ordinary user, from a root test process.

The Python environment may live under a directory only root can enter (pyenv under /root, say).
The command therefore runs in a private mount namespace where each such directory is replaced
by an open tmpfs holding just the entries the command needs, bound back from the original.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

THROWAWAY_USER = "qrsup-test-user"


def throwaway_user() -> tuple[int, int]:
    """(uid, gid) of the throwaway user, created on first use."""
    try:
        entry = pwd.getpwnam(THROWAWAY_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--user-group", "--no-create-home", THROWAWAY_USER],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(THROWAWAY_USER)
    return entry.pw_uid, entry.pw_gid


def can_run_as_throwaway_user() -> str:
    """'' when the machine allows it, else why not (for a skip)."""
    if os.geteuid() != 0:
        return "needs root to create and become a throwaway user"
    missing = [t for t in ("useradd", "unshare", "setpriv", "mount") if shutil.which(t) is None]
    return f"missing tools: {', '.join(missing)}" if missing else ""


def _closed_ancestors(path: Path) -> list[tuple[Path, str]]:
    """(directory others cannot enter, the child name leading to `path`) along `path`."""
    found = []
    parts = path.resolve().parts
    for depth in range(1, len(parts) - 1):
        directory = Path(*parts[: depth + 1])
        if not os.stat(directory).st_mode & 0o001:
            found.append((directory, parts[depth + 1]))
    return found


def run_as_throwaway_user(
    argv: list[str], needed: list[Path], env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """Run `argv` as the throwaway user, no capabilities, with `needed` paths reachable."""
    uid, gid = throwaway_user()
    wanted = [Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable))]
    closed: dict[Path, set[str]] = {}
    for path in [*wanted, *needed]:
        for directory, child in _closed_ancestors(path):
            closed.setdefault(directory, set()).add(child)
    lines = ["set -e"]
    for i, (directory, children) in enumerate(sorted(closed.items())):
        stash = f"/tmp/.qrsup-test-stash-{os.getpid()}-{i}"
        lines += [f"mkdir -p {stash}", f"mount --bind {shlex.quote(str(directory))} {stash}"]
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(directory))}")
        for child in sorted(children):
            target = shlex.quote(str(directory / child))
            source = shlex.quote(f"{stash}/{child}")
            lines += [f"mkdir -p {target}", f"mount --bind {source} {target}"]
    drop = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]
    drop += ["--inh-caps=-all", "--bounding-set=-all", "--"]
    lines.append("exec " + shlex.join(drop + argv))
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
