"""The contestant's launcher: `python -m qrsup.kernels.judge.sandbox_main POLICY_JSON`.

Started by the referee, it enters new namespaces, forks the process that becomes the
contestant, and waits for it, exiting as it exited. The child builds the contestant's root file
system, drops its privileges, writes one status line (what boundary it got) on the status fd and
execs the contestant. No candidate exists yet: the contestant is handed the source later.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import sys
from pathlib import Path

from qrsup.kernels.judge import linux
from qrsup.kernels.judge.processes import die_with_parent
from qrsup.kernels.judge.sandbox import CANDIDATE_FILE, PRIVATE_DIR, TRITON_CACHE, SandboxPolicy

NAMESPACES = {
    "user": linux.CLONE_NEWUSER,
    "pid": linux.CLONE_NEWPID,
    "mount": linux.CLONE_NEWNS,
    "network": linux.CLONE_NEWNET,
    "ipc": linux.CLONE_NEWIPC,
}


class Boundary:
    """What the launcher managed to set up, reported to the referee before the exec."""

    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy
        self.namespaces: list[str] = []
        self.missing: list[str] = [policy.user_note] if policy.user_note else []
        self.root = "host"
        self.private = policy.fallback_dir

    def enter_namespaces(self) -> None:
        """New namespaces for the child to come; as an ordinary user, inside a user namespace
        where the caller is root only over what it creates."""
        if not self.policy.isolate:
            return
        names = ["pid", "mount", "network", "ipc"]
        if os.geteuid() != 0:
            names.insert(0, "user")
        uid, gid = os.geteuid(), os.getegid()
        try:
            linux.unshare(sum(NAMESPACES[n] for n in names))
        except OSError as exc:
            self.missing.append(f"no namespaces ({exc.strerror})")
            return
        if "user" in names:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
            Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
        self.namespaces = names

    def build_root(self) -> None:
        """A root file system of read-only views and private tmpfs mounts, then pivot into it."""
        if "mount" not in self.namespaces:
            return
        policy, staging = self.policy, self.policy.staging
        try:
            linux.mount("none", "/", None, linux.MS_REC | linux.MS_PRIVATE)
            linux.mount("tmpfs", staging, "tmpfs", linux.MS_NOSUID, "mode=0755,size=16m")
            self._mount_dev(staging)
            _mount_tmpfs(f"{staging}/tmp", policy.tmp_bytes, "1777")
            owner = "" if policy.uid is None else f",uid={policy.uid},gid={policy.gid}"
            _mount_tmpfs(f"{staging}{PRIVATE_DIR}", policy.private_dir_bytes, "0700" + owner)
            if policy.triton_cache is not None:
                _bind(policy.triton_cache, f"{staging}{TRITON_CACHE}", read_only=False)
                linux.make_inert(f"{staging}{TRITON_CACHE}")
            os.mkdir(f"{staging}/proc")
            linux.mount("proc", f"{staging}/proc", "proc", _NOEXEC)
            for link, target in policy.links.items():
                os.symlink(target, f"{staging}{link}")
            for path in policy.expose:
                _bind(path, f"{staging}{path}", read_only=True)
            os.mkdir(f"{staging}/.old")
            linux.pivot_root(staging, f"{staging}/.old")
            os.chdir("/")
            linux.umount_detached("/.old")
            os.rmdir("/.old")
            linux.make_read_only("/", recursive=False)  # the tmpfs mounts below stay writable
        except OSError as exc:
            self.missing.append(f"no private root file system ({exc})")
            return
        self.root = "built"
        self.private = PRIVATE_DIR

    def environment(self) -> dict[str, str]:
        """The policy's environment, with Triton's cache where this boundary put it."""
        env = dict(self.policy.env)
        if self.policy.triton_cache is not None and self.root != "built":
            env["TRITON_CACHE_DIR"] = self.policy.triton_cache
        elif self.root != "built":
            env["TRITON_CACHE_DIR"] = f"{self.private}/.triton"
        return env

    def _mount_dev(self, staging: str) -> None:
        dev = f"{staging}/dev"
        os.mkdir(dev)
        linux.mount("tmpfs", dev, "tmpfs", linux.MS_NOSUID, "mode=0755,size=1m")
        for node in self.policy.devices:
            _bind(node, f"{staging}{node}", read_only=False)
        for name, target in _DEV_LINKS.items():
            os.symlink(target, f"{dev}/{name}")
        _mount_tmpfs(f"{dev}/shm", self.policy.tmp_bytes, "1777")
        linux.make_read_only(dev, recursive=False)

    def limit(self) -> None:
        """Processes, file sizes, core dumps and (where asked) the data segment."""
        import resource

        policy = self.policy
        limits = {
            resource.RLIMIT_NPROC: policy.max_processes,
            resource.RLIMIT_FSIZE: policy.max_file_bytes,
            resource.RLIMIT_CORE: 0,
        }
        if policy.data_limit_bytes is not None:
            limits[resource.RLIMIT_DATA] = policy.data_limit_bytes
        for which, value in limits.items():
            resource.setrlimit(which, (value, value))

    def drop_privileges(self) -> str:
        """No capabilities, no way back (`no_new_privs`); as root, another user as well."""
        policy = self.policy
        if not policy.isolate:
            self.missing.append("isolation is off")
            return "the caller"
        try:
            linux.drop_bounding_set()
        except OSError as exc:
            self.missing.append(f"capability bounding set kept ({exc.strerror})")
        if policy.uid is not None:
            gid = policy.gid if policy.gid is not None else policy.uid
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(policy.uid, policy.uid, policy.uid)
            user = _user_name(policy.uid)
        elif os.geteuid() == 0:
            linux.prctl(linux.PR_SET_SECUREBITS, linux.SECBITS_NO_ROOT_POWER)
            linux.prctl(linux.PR_CAP_AMBIENT, linux.PR_CAP_AMBIENT_CLEAR_ALL)
            user = "the caller, without capabilities" if self.namespaces else "root"
            if not self.namespaces:
                self.missing.append("runs as root: no unprivileged user to switch to")
        else:
            user = "the caller"
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        return user

    def status(self, pid: int, user: str, candidate: str) -> dict[str, object]:
        wanted = {"pid", "mount", "network", "ipc"}
        absent = sorted(wanted - set(self.namespaces))
        named = any(m.startswith(("no namespaces", "isolation is off")) for m in self.missing)
        if absent and not named:
            self.missing.append(f"no {', '.join(absent)} namespace")
        return {
            "pid": pid,
            "user": user,
            "namespaces": self.namespaces,
            "root": self.root,
            "missing": self.missing,
            "candidate": candidate,
            "private": self.private,
        }


_NOEXEC = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
_DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}


def _mount_tmpfs(target: str, size_bytes: int, mode: str) -> None:
    os.makedirs(target, exist_ok=True)
    options = f"size={size_bytes},mode={mode}"
    linux.mount("tmpfs", target, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, options)


def _bind(source: str, target: str, read_only: bool) -> None:
    """Bind `source` (a file or a tree, with the mounts below it) at `target`."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).touch()
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    if read_only:
        linux.make_read_only(target)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _host_pid() -> int:
    """Our pid as the referee sees it: the first NSpid entry, read before /proc is replaced."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[1])
    return os.getpid()


def _relay(child: int) -> None:
    """Wait for the contestant and leave as it left, so the referee can name a crash."""
    os.closerange(3, 65536)
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status))


def main() -> None:
    policy = SandboxPolicy.from_json(sys.argv[1])
    die_with_parent(policy.parent)
    boundary = Boundary(policy)
    boundary.enter_namespaces()
    child = os.fork()
    if child:
        _relay(child)
    os.setsid()  # its own group: a kill(0) of the candidate's reaches no judge process
    pid = _host_pid()
    boundary.build_root()
    boundary.limit()
    user = boundary.drop_privileges()
    # After the user switch (which clears it), and kept across exec: the contestant dies with
    # its launcher, which dies with the referee, which dies with the agent.
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    status = boundary.status(pid, user, f"{boundary.private}/{CANDIDATE_FILE}")
    os.write(policy.status_fd, (json.dumps(status) + "\n").encode())
    os.close(policy.status_fd)
    if status["missing"] and policy.required:
        sys.exit("the judge's isolation is required but incomplete: " + "; ".join(boundary.missing))
    os.chdir(boundary.private)
    os.execve(policy.command[0], policy.command, boundary.environment())


if __name__ == "__main__":
    main()
