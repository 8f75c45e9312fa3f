"""The workspace's git repository: the incumbent, per-agent candidate branches, promotions.

Candidate commits are written with plumbing (a private index file and `update-ref` on the
agent's own branch), so agents never touch the working tree or the user's index. A promotion
commits only the incumbent file and `log.md`, leaving anything else the user has staged alone.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import git

INCUMBENT_PATH = "kernels/incumbent.py"
LOG_PATH = "log.md"


class WorkspaceError(RuntimeError):
    """A workspace that cannot take a promotion, with what to do about it."""


def open_repo(workspace: Path) -> git.Repo:
    """The workspace's repository, or a WorkspaceError that suggests `git init`."""
    try:
        return git.Repo(workspace, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise WorkspaceError(
            f"{workspace} is not a git repository; run `git init` there so promotions can be "
            "committed"
        ) from None


def init_repo(workspace: Path) -> git.Repo:
    """Create a repository with an initial commit, for workspaces that have none."""
    workspace.mkdir(parents=True, exist_ok=True)
    repo = git.Repo.init(workspace, initial_branch="main")
    _ensure_identity(repo)
    ignore = workspace / ".gitignore"
    if not ignore.exists():
        ignore.write_text("runs/\n__pycache__/\n")
    repo.git.add(".gitignore")
    repo.git.commit("-m", "Start a qrsup workspace")
    return repo


def check_promotable(repo: git.Repo) -> None:
    """Refuse a detached HEAD or uncommitted edits to the incumbent: never overwrite silently."""
    if repo.head.is_detached:
        raise WorkspaceError(
            "HEAD is detached; check out a branch (e.g. `git switch main`) before promoting"
        )
    if not repo.head.is_valid():
        raise WorkspaceError("the repository has no commits yet; commit something first")
    incumbent = Path(repo.working_tree_dir or ".") / INCUMBENT_PATH
    tracked = bool(repo.git.ls_files(INCUMBENT_PATH))
    if tracked and repo.is_dirty(path=INCUMBENT_PATH):
        raise WorkspaceError(
            f"{INCUMBENT_PATH} has uncommitted changes; commit or discard them before promoting"
        )
    if incumbent.exists() and not tracked:
        raise WorkspaceError(f"{INCUMBENT_PATH} exists but is not tracked; commit or remove it")


def read_incumbent(repo: git.Repo) -> str | None:
    path = Path(repo.working_tree_dir or ".") / INCUMBENT_PATH
    return path.read_text() if path.exists() else None


def commit_incumbent(repo: git.Repo, source: str, message: str) -> str:
    """Write the incumbent and commit it (and log.md, if present) on the current branch."""
    check_promotable(repo)
    _ensure_identity(repo)
    root = Path(repo.working_tree_dir or ".")
    path = root / INCUMBENT_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    paths = [INCUMBENT_PATH]
    if (root / LOG_PATH).exists():
        paths.append(LOG_PATH)
    repo.git.add("--", *paths)
    repo.git.commit("-m", message, "--only", "--", *paths)
    return repo.head.commit.hexsha


def commit_to_branch(repo: git.Repo, branch: str, source: str, message: str) -> str:
    """Commit `source` as the incumbent file on `branch` without touching the working tree."""
    _ensure_identity(repo)
    ref = f"refs/heads/{branch}"
    try:
        parent = repo.git.rev_parse("--verify", "--quiet", ref)
    except git.GitCommandError:
        parent = repo.head.commit.hexsha
    with tempfile.TemporaryFile() as stream:
        stream.write(source.encode())
        stream.seek(0)
        blob = repo.git.hash_object("-w", "--stdin", istream=stream)
    with tempfile.TemporaryDirectory() as scratch:
        env = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        repo.git.read_tree(parent, env=env)
        repo.git.update_index("--add", "--cacheinfo", f"100644,{blob},{INCUMBENT_PATH}", env=env)
        tree = repo.git.write_tree(env=env)
    commit = repo.git.commit_tree(tree, "-p", parent, "-m", message)
    repo.git.update_ref(ref, commit)
    return commit


def _ensure_identity(repo: git.Repo) -> None:
    """A committer identity for machines without one; the user's own wins where set."""
    reader = repo.config_reader()
    if reader.has_option("user", "name") and reader.has_option("user", "email"):
        return
    try:
        repo.git.config("user.name")
        repo.git.config("user.email")
    except git.GitCommandError:
        with repo.config_writer() as writer:
            writer.set_value("user", "name", "qrsup")
            writer.set_value("user", "email", "qrsup@localhost")
