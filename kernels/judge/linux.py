"""Thin wrappers over the Linux calls the judge's process boundary needs (namespaces, mounts,
capabilities), through libc, so the judge needs no compiled helper and no outside tool.

Each wrapper raises OSError with the errno on failure, like the `os` module does.
"""

from __future__ import annotations

import ctypes
import os
import platform
from functools import cache
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# Securebits that keep a uid-0 process from regaining capabilities at exec, locked in place.
SECBITS_NO_ROOT_POWER = 0b1111_1111 & ~0b0001_0000  # all of them but KEEP_CAPS itself

_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 0x1
_SYSCALLS = {  # name → number, by machine
    "x86_64": {"pivot_root": 155, "mount_setattr": 442},
    "aarch64": {"pivot_root": 41, "mount_setattr": 442},
}
# statvfs flags that a remount must repeat (some are locked in a user namespace).
_KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


@cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def _syscall(name: str, *args: object) -> int:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(38, f"{name}: unsupported machine {platform.machine()}")
    return _check(_libc().syscall(numbers[name], *args), name)


def prctl(option: int, value: int, arg3: int = 0) -> None:
    _check(_libc().prctl(option, value, arg3, 0, 0), f"prctl({option})")


def unshare(flags: int) -> None:
    _check(_libc().unshare(flags), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    result = _libc().mount(
        source.encode(), target.encode(), fstype.encode() if fstype else None, flags, data.encode()
    )
    _check(result, f"mount {target}")


def umount_detached(target: str) -> None:
    _check(_libc().umount2(target.encode(), MNT_DETACH), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    _syscall("pivot_root", new_root.encode(), put_old.encode())


def _kept_flags(target: str) -> int:
    """The mount flags a remount of `target` must repeat (a user namespace locks some), its
    read-only flag among them."""
    kept = os.statvfs(target).f_flag
    flags = sum(ms for st, ms in _KEPT_FLAGS.items() if kept & st)
    return flags | (MS_RDONLY if kept & os.ST_RDONLY else 0)


def make_read_only(target: str, recursive: bool = True) -> None:
    """Read-only for the mount at `target` and, when `recursive`, every mount below it (only the
    top one where the kernel predates mount_setattr), keeping the flags a user namespace locks."""
    _set_read_only(target, True, recursive)


def make_inert(target: str) -> None:
    """No set-user-ID program and no device file works through the mount at `target` (a bind
    of a host directory the contestant may write), keeping the flags it has."""
    flags = _kept_flags(target) | MS_NOSUID | MS_NODEV
    mount("none", target, None, MS_REMOUNT | MS_BIND | flags)


def make_writable(target: str) -> None:
    """Writable again for the mount at `target` (a bind inherits its source's read-only flag)."""
    _set_read_only(target, False, recursive=False)


def _set_read_only(target: str, read_only: bool, recursive: bool) -> None:
    attr = _MountAttr(**{"attr_set" if read_only else "attr_clr": _MOUNT_ATTR_RDONLY})
    try:
        _syscall(
            "mount_setattr",
            _AT_FDCWD,
            target.encode(),
            _AT_RECURSIVE if recursive else 0,
            ctypes.byref(attr),
            ctypes.sizeof(attr),
        )
    except OSError as exc:
        if exc.errno != 38:  # ENOSYS
            raise
        flags = _kept_flags(target) & ~MS_RDONLY | (MS_RDONLY if read_only else 0)
        mount("none", target, None, MS_REMOUNT | MS_BIND | flags)


def drop_bounding_set() -> None:
    """No capability can come back through exec, whatever uid runs next."""
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for capability in range(last + 1):
        prctl(PR_CAPBSET_DROP, capability)
