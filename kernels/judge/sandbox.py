"""The contestant's boundary: who it runs as and what of the machine it can see.

The referee plans a `SandboxPolicy` here and starts the contestant through
`qrsup.kernels.judge.sandbox_main`, which applies it. With the boundary up the contestant runs

- as an unprivileged user with no capabilities and `no_new_privs` (a dedicated `qrsup-judge`
  user when the judge runs as root; the invoking user, stripped of the capabilities of its own
  user namespace, otherwise);
- in its own PID, mount, network and IPC namespaces: the runner and the referee are not in its
  `/proc`, and it has no network;
- on a root file system built for it: read-only views of the system and Python environment and of
  the judge's package, the device nodes it needs, and three writable size-limited tmpfs mounts
  (its private work directory, `/tmp`, `/dev/shm`), with limits on processes and file sizes.

Where the kernel refuses a step, the launcher goes on with what it could set up and says what
is missing; the report carries it as `isolation`, and callers warn. With `mode = "required"` a
missing step fails the run instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from qrsup.kernels.judge.locks import file_lock
from qrsup.kernels.judge.triton_cache import MANAGER_ENV, RELOCATABLE_MANAGER, plain_mode

ISOLATION_MODES = ("auto", "required", "off")
DEDICATED_USER = "qrsup-judge"
USER_LOCK = Path("/tmp/qrsup-judge-user.lock")  # one judge at a time creates DEDICATED_USER
PRIVATE_DIR = "/.qrsup-work"  # where the contestant's private work directory appears to it
TRITON_CACHE = f"{PRIVATE_DIR}/.triton"
# The candidate's copy in the private directory: the contestant writes it there itself, when the
# referee hands it the source, so a contestant can be started before its candidate is known.
CANDIDATE_FILE = "candidate.py"
SYSTEM_PATHS = ("/usr", "/etc", "/sys")
TOP_LEVEL_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
DEVICE_NODES = ("null", "zero", "full", "random", "urandom", "tty")
MiB = 2**20
NO_LOGIN = ("--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin")


@dataclass(frozen=True)
class IsolationSettings:
    """How hard the judge walls the contestant in (the `[judge]` table of `qrsup.toml`)."""

    mode: str = "auto"  # "auto": all the platform allows; "required": fail without it; "off"
    user: str | None = None  # the unprivileged user when the judge runs as root
    private_dir_bytes: int = 2048 * MiB  # the contestant's work directory (Triton cache included)
    tmp_bytes: int = 512 * MiB  # each of /tmp and /dev/shm
    max_processes: int = 4096  # threads count; a fork bomb stops here

    def __post_init__(self) -> None:
        if self.mode not in ISOLATION_MODES:
            raise ValueError(f"isolation mode must be one of {ISOLATION_MODES}, not {self.mode!r}")
        for name in ("private_dir_bytes", "tmp_bytes", "max_processes"):
            if int(getattr(self, name)) <= 0:
                raise ValueError(f"{name} must be positive")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> IsolationSettings:
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class SandboxPolicy:
    """Everything the launcher needs, decided by the referee; crosses the exec as JSON."""

    command: list[str]
    env: dict[str, str]
    staging: str  # an empty directory of the referee's where the new root is assembled
    fallback_dir: str  # the private directory when no mount namespace can be had
    status_fd: int
    parent: int  # the referee: the launcher dies with it
    isolate: bool  # False: isolation is off, the contestant runs as the referee does
    required: bool
    uid: int | None = None  # switch to this user (the judge runs as root)
    gid: int | None = None
    user_note: str = ""
    expose: list[str] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)
    devices: list[str] = field(default_factory=list)
    private_dir_bytes: int = 2048 * MiB
    tmp_bytes: int = 512 * MiB
    max_processes: int = 4096
    max_file_bytes: int = 1024 * MiB
    data_limit_bytes: int | None = None
    triton_cache: str | None = None  # a host directory kept across judge runs, read-write

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SandboxPolicy:
        return cls(**json.loads(text))


def plan_sandbox(
    settings: IsolationSettings,
    *,
    command: list[str],
    env: Mapping[str, str],
    work_dir: Path,
    status_fd: int,
    cuda: bool,
    max_file_bytes: int,
    data_limit_bytes: int | None,
    triton_cache: Path | None = None,
) -> SandboxPolicy:
    """The boundary for one contestant of this judge run; `triton_cache`, when given, is where
    compiled kernels are kept for later runs (the caller decides whose runs may share it)."""
    staging, fallback = work_dir / "root", work_dir / "private"
    for directory in (staging, fallback):
        directory.mkdir(mode=0o700, exist_ok=True)
    on = settings.mode != "off"
    uid = gid = None
    user_note = ""
    if on and os.geteuid() == 0:
        found = judge_user(settings.user)
        if isinstance(found, str):
            user_note = found
        else:
            uid, gid = found
            os.chown(fallback, uid, gid)
            if triton_cache is not None:
                _give_tree(triton_cache, uid, gid)
            os.chmod(work_dir, 0o711)  # the fallback directory must be reachable by that user
    private_env = {
        "HOME": PRIVATE_DIR,
        "TMPDIR": "/tmp",
        "TRITON_CACHE_DIR": TRITON_CACHE,
        MANAGER_ENV: RELOCATABLE_MANAGER,
        "XDG_CACHE_HOME": f"{PRIVATE_DIR}/.cache",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    links = {p: os.readlink(p) for p in TOP_LEVEL_LINKS if os.path.islink(p)}
    return SandboxPolicy(
        command=command,
        env={**env, **private_env},
        staging=str(staging),
        fallback_dir=str(fallback),
        status_fd=status_fd,
        parent=os.getpid(),
        isolate=on,
        required=settings.mode == "required",
        uid=uid,
        gid=gid,
        user_note=user_note,
        expose=exposed_paths(env, links),
        links=links,
        devices=device_nodes(cuda),
        private_dir_bytes=settings.private_dir_bytes,
        tmp_bytes=settings.tmp_bytes,
        max_processes=settings.max_processes,
        max_file_bytes=max_file_bytes,
        data_limit_bytes=data_limit_bytes,
        triton_cache=str(triton_cache) if triton_cache is not None else None,
    )


def _give_tree(root: Path, uid: int, gid: int) -> None:
    """Make a kept cache the contestant's, entries that earlier runs left as another user too
    (a run with isolation off, say): Triton cannot add to a directory it does not own. Special
    bits go too, in case the run that left them ended before its tidying."""
    root.mkdir(parents=True, exist_ok=True)
    for path in (root, *root.rglob("*")):
        found = path.lstat()
        if found.st_uid != uid:
            os.chown(path, uid, gid, follow_symlinks=False)
        plain_mode(str(path), found.st_mode)


def judge_user(name: str | None) -> tuple[int, int] | str:
    """(uid, gid) of the contestant's user, creating the dedicated one on first use; else why
    none could be had. A named user must exist; without a name, `nobody` is the last resort."""
    if name is not None:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            return f"the judge user {name!r} named in qrsup.toml does not exist"
        if entry.pw_uid == 0:
            return f"the judge user {name!r} is root"
        return entry.pw_uid, entry.pw_gid
    return dedicated_user(DEDICATED_USER)


def dedicated_user(user: str) -> tuple[int, int] | str:
    """(uid, gid) of `user`, created on first use by one judge at a time. Judges that start
    together on a fresh machine (an agent's referee started ahead beside its first run's) each
    ran useradd; one that lost fell back to `nobody`, and each chowns the shared Triton cache to
    its own user, which can lock the other's contestant out of it."""
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(user)
        return entry.pw_uid, entry.pw_gid
    with file_lock(USER_LOCK):
        with contextlib.suppress(KeyError):  # another judge created it while we waited
            entry = pwd.getpwnam(user)
            return entry.pw_uid, entry.pw_gid
        _create_dedicated_user(user)
    for candidate in (user, "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(candidate)
            return entry.pw_uid, entry.pw_gid
    return "no unprivileged user to run the contestant as (useradd failed and there is no nobody)"


def _create_dedicated_user(user: str) -> None:
    useradd = shutil.which("useradd") or next(
        (p for p in ("/usr/sbin/useradd", "/sbin/useradd") if os.path.exists(p)), None
    )
    if useradd is None:
        return
    subprocess.run(
        [useradd, "--system", "--user-group", "--no-create-home", *NO_LOGIN, user],
        capture_output=True,
        check=False,
        timeout=30,
    )


def exposed_paths(env: Mapping[str, str], links: Mapping[str, str]) -> list[str]:
    """Read-only views the contestant needs: the system, the Python environment, the judge's
    package (only the package, not the checkout around it), and library paths.

    Paths under another exposed path are left out, since their parent brings them.
    """
    package = Path(__file__).resolve().parents[1]
    wanted = [*SYSTEM_PATHS]
    wanted += [p for p in TOP_LEVEL_LINKS if p not in links]
    wanted += [sys.prefix, sys.base_prefix, sys.exec_prefix]
    wanted.append(os.path.dirname(os.path.realpath(sys.executable)))
    wanted += [p for p in sys.path if p]
    for name in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "PYTHONPATH"):
        wanted += [p for p in env.get(name, "").split(os.pathsep) if p]
    # Programs the contestant's libraries run, and the whole installation of the C compiler
    # (Triton builds a launcher with $CC, else the cc on $PATH; it needs its lib and libexec).
    wanted += [p for p in env.get("PATH", "").split(os.pathsep) if p]
    compiler = env.get("CC") or shutil.which("cc", path=env.get("PATH")) or ""
    if compiler:
        wanted.append(_installation(os.path.dirname(os.path.realpath(compiler))))
    checkout = str(package.parent)
    real = {os.path.realpath(p) for p in wanted if os.path.exists(p) and not _is_cwd_only(p, env)}
    return _outermost([*(p for p in real if p != checkout), str(package)])


def _installation(program_dir: str) -> str:
    """A `bin` directory's installation prefix (its parent), or the directory itself."""
    path = os.path.realpath(program_dir)
    return os.path.dirname(path) if os.path.basename(path) in ("bin", "sbin") else path


def _is_cwd_only(path: str, env: Mapping[str, str]) -> bool:
    """sys.path's first entry under `-m` is the referee's working directory (the caller's
    workspace): the contestant does not need it unless PYTHONPATH names it too."""
    here = os.path.realpath(os.getcwd())
    named = {os.path.realpath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p}
    return os.path.realpath(path) == here and here not in named


def _outermost(paths: list[str]) -> list[str]:
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == c or path.startswith(c.rstrip("/") + "/") for c in chosen):
            chosen.append(path)
    return sorted(chosen)


def device_nodes(cuda: bool) -> list[str]:
    """Device files bound into the contestant's /dev: the basics, and the GPU's with CUDA."""
    nodes = [f"/dev/{n}" for n in DEVICE_NODES if os.path.exists(f"/dev/{n}")]
    if cuda:
        nodes += sorted(str(p) for p in Path("/dev").glob("nvidia*"))
    return nodes


def isolation_summary(status: Mapping[str, object]) -> dict[str, object]:
    """What the report says about the boundary a contestant ran behind."""
    missing = list(status.get("missing", []))  # type: ignore[call-overload]
    return {
        "user": status.get("user", ""),
        "namespaces": status.get("namespaces", []),
        "root": status.get("root", ""),
        "missing": missing,
        "complete": not missing,
    }
