"""Putting the workspace's git history and the store back in step after a kill.

Two writes go to git beside the store, and a kill can fall between them:
- a candidate is stored, then committed to its agent's branch: a candidate missing from the
  branch is committed at the agent's next start;
- a promotion is committed (incumbent file and log.md), then stored: a HEAD that promotes a
  candidate the store does not know as incumbent gets its promotion recorded; an incumbent file
  written but never committed is put back to HEAD's (that promotion never happened, and the
  candidate can be promoted again).
Each repair is an event, so what happened stays visible.
"""

from __future__ import annotations

import re

import git
from qrsup.agents.git_workspace import (
    INCUMBENT_PATH,
    commit_to_branch,
    open_repo,
    read_incumbent,
)
from qrsup.agents.records import append_event
from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash
from qrsup.kernels.schema import Candidate, EventKind

PROMOTION_SUBJECT = re.compile(r"^Promote (c-[0-9a-f]+):")
CANDIDATE_SUBJECT = re.compile(r"^(c-[0-9a-f]+):")


def agent_branch(session: SessionConfig, agent: str) -> str:
    return f"qrsup/{session.name}/{agent}"


def commit_candidate(session: SessionConfig, candidate: Candidate) -> str:
    """Keep a candidate on its agent's own branch."""
    message = f"{candidate.id}: {candidate.hypothesis}\n\nparent: {candidate.parent_id}"
    with open_repo(session.workspace) as repo:
        return commit_to_branch(
            repo, agent_branch(session, candidate.agent), candidate.source, message
        )


def branch_candidates(repo: git.Repo, branch: str) -> set[str]:
    """The candidate ids committed on `branch` (none if it does not exist yet)."""
    try:
        subjects = repo.git.log("--format=%s", f"refs/heads/{branch}").splitlines()
    except git.GitCommandError:
        return set()
    return {m.group(1) for s in subjects if (m := CANDIDATE_SUBJECT.match(s))}


def recover_branch(paths: RunPaths, session: SessionConfig, store: Store, agent: str) -> list[str]:
    """Commit the agent's stored candidates its branch lacks; the ids committed now."""
    with open_repo(session.workspace) as repo:
        on_branch = branch_candidates(repo, agent_branch(session, agent))
    missing = [c for c in store.candidates(agent) if c.id not in on_branch]
    for candidate in missing:
        commit_candidate(session, candidate)
    if missing:
        ids = [c.id for c in missing]
        append_event(paths.events(agent), _event(agent, "committed to the agent's branch", ids))
    return [c.id for c in missing]


def recover_promotion(paths: RunPaths, session: SessionConfig, store: Store, agent: str) -> str:
    """Bring the store's incumbent and the workspace's HEAD back in step; what was done, or ""."""
    with open_repo(session.workspace) as repo:
        if repo.is_dirty(path=INCUMBENT_PATH) and _written_by_qrsup(repo, store):
            repo.git.checkout("HEAD", "--", INCUMBENT_PATH)
            done = "an uncommitted incumbent file put back to HEAD's"
            append_event(paths.events(agent), _event(agent, done, []))
            return done
        if not repo.head.is_valid():
            return ""
        head = repo.head.commit
    subject = PROMOTION_SUBJECT.match(head.message)
    if subject is None or store.incumbent_id() == subject.group(1):
        return ""
    candidate = store.candidate(subject.group(1))
    if candidate is None:
        return ""
    revalidated = [e for e in store.evaluations(candidate.id) if e.stage == "revalidate"]
    geomean_ns = revalidated[-1].geomean_ns if revalidated else candidate.geomean_ns
    previous = store.candidate(store.incumbent_id() or "")
    store.add_promotion(
        candidate.id,
        head.hexsha,
        geomean_ns,
        previous.geomean_ns if previous else None,
        {},
        "recovered after a restart",
    )
    done = f"the promotion of {candidate.id} (commit {head.hexsha[:10]}) recorded"
    append_event(paths.events(agent), _event(agent, done, [candidate.id]))
    return done


def _written_by_qrsup(repo: git.Repo, store: Store) -> bool:
    """The file holds a stored candidate's source: a promotion's write, not a person's edit
    (which is left alone)."""
    source = read_incumbent(repo)
    return source is not None and store.candidate_by_hash(source_hash(source)) is not None


def _event(agent: str, what: str, candidate_ids: list[str]) -> dict[str, object]:
    return {
        "event": str(EventKind.RECOVERED),
        "agent": agent,
        "what": what,
        "candidate_ids": candidate_ids,
    }
