"""Workspace git: candidate branches leave the worktree alone; promotion refuses unsafe states."""

from __future__ import annotations

from collections.abc import Iterator

import git
import pytest
from qrsup.agents.git_workspace import (
    INCUMBENT_PATH,
    WorkspaceError,
    check_promotable,
    commit_incumbent,
    commit_to_branch,
    init_repo,
    open_repo,
)


@pytest.fixture
def repo(tmp_path) -> Iterator[git.Repo]:
    """A fresh workspace repository, closed after the test so no `git cat-file` outlives it."""
    with init_repo(tmp_path) as repo:
        yield repo


def test_no_repository_suggests_git_init(tmp_path):
    with pytest.raises(WorkspaceError, match="git init"):
        open_repo(tmp_path)


def test_candidate_commits_go_to_the_agent_branch_only(repo, tmp_path):
    head = repo.head.commit.hexsha
    commit_to_branch(repo, "qrsup/s/a1", "first", "c-1")
    sha = commit_to_branch(repo, "qrsup/s/a1", "second", "c-2")
    assert repo.head.commit.hexsha == head
    assert not (tmp_path / INCUMBENT_PATH).exists()
    assert repo.git.show(f"{sha}:{INCUMBENT_PATH}") == "second"
    assert repo.commit(sha).parents[0].message.startswith("c-1")


def test_promotion_commits_once_and_refuses_dirty_incumbent_or_detached_head(repo, tmp_path):
    commit_incumbent(repo, "v1\n", "Promote v1")
    assert repo.head.commit.message.startswith("Promote v1")
    (tmp_path / INCUMBENT_PATH).write_text("hand edit\n")
    with pytest.raises(WorkspaceError, match="uncommitted changes"):
        check_promotable(repo)
    repo.git.checkout("--", INCUMBENT_PATH)
    repo.git.checkout(repo.head.commit.hexsha)
    with pytest.raises(WorkspaceError, match="detached"):
        commit_incumbent(repo, "v2\n", "Promote v2")


def test_promotion_leaves_other_staged_changes_alone(repo, tmp_path):
    (tmp_path / "notes.txt").write_text("mine\n")
    repo.git.add("notes.txt")
    commit_incumbent(repo, "v1\n", "Promote v1")
    assert "notes.txt" not in repo.head.commit.stats.files
    assert "notes.txt" in [d.a_path for d in repo.index.diff("HEAD")]
    assert isinstance(repo, git.Repo)
