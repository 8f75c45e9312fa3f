"""Run a command that sees some trees read-only: how a coding-agent proposer is kept off the
workspace and off the judge's own files while it edits its candidate.

`python -m qrsup.kernels.judge.read_only_view SPEC_JSON` enters a mount namespace (inside a user
namespace of the same uid for an ordinary user), binds each read-only tree over itself
read-only, binds the writable ones back over that, drops every capability and execs the command.
The network and the rest of the machine stay as they were: the command is a coding agent, not a
candidate. Where the kernel refuses, the command runs unprotected and its first output line says
so.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from qrsup.kernels.judge import linux

UNPROTECTED = "qrsup: the command runs without a read-only view"


def read_only_view_command(
    argv: list[str], read_only: list[Path], writable: list[Path]
) -> list[str]:
    """`argv`, wrapped so that `read_only` trees (but the `writable` ones inside them) are
    read-only to it."""
    spec = {
        "argv": argv,
        "read_only": [str(p.resolve()) for p in read_only if p.exists()],
        "writable": [str(p.resolve()) for p in writable if p.exists()],
    }
    return [sys.executable, "-m", "qrsup.kernels.judge.read_only_view", json.dumps(spec)]


def _enter() -> None:
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        linux.unshare(linux.CLONE_NEWNS)
        return
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS)
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _apply(read_only: list[str], writable: list[str]) -> None:
    linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
    for path in read_only:
        linux.mount(path, path, None, linux.MS_BIND | linux.MS_REC)
        linux.make_read_only(path)
    for path in writable:
        linux.mount(path, path, None, linux.MS_BIND | linux.MS_REC)
        linux.make_writable(path)
    linux.drop_bounding_set()
    if os.geteuid() == 0:
        linux.prctl(linux.PR_SET_SECUREBITS, linux.SECBITS_NO_ROOT_POWER)
    linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)
    linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        _enter()
        _apply(spec["read_only"], spec["writable"])
    except OSError as exc:
        print(f"{UNPROTECTED} ({exc})", flush=True)
    argv = spec["argv"]
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror}", file=sys.stderr, flush=True)
        sys.exit(127)


if __name__ == "__main__":
    main()
