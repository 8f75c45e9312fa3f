"""The judge executor a session asked for: this host (`local`) or a Ray cluster (`ray`).

Nothing here imports Ray: a Ray judge run's driver is a child process (kernels/executors).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from qrsup.agents.session import RunPaths, SessionConfig
from qrsup.kernels.executors.base import GPU_REFEREES_AHEAD, LOCAL, JudgeExecutor, LocalExecutor
from qrsup.kernels.executors.ray_executor import RayExecutor
from qrsup.kernels.executors.ray_target import RayTarget, read_instance


def session_executor(
    paths: RunPaths,
    session: SessionConfig,
    agent: str | None = None,
    note: Callable[[str], None] | None = None,
    warm: bool = False,
) -> JudgeExecutor:
    """The session's executor; an agent's Ray runs also keep its slot file and write to `note`,
    and with `warm` its local runs start referees ahead of its runs: on a GPU it shares with
    other agents, one, since it waits its turn there anyway."""
    if session.executor != "ray":
        ahead = GPU_REFEREES_AHEAD if session.agents_per_gpu == 1 else 1
        return LocalExecutor(warm=True, gpu_ahead=ahead) if warm else LOCAL
    slot = paths.judge_slot(agent) if agent else None
    return RayExecutor(session_target(paths, session), note or _ignore, slot)


def session_target(paths: RunPaths, session: SessionConfig) -> Callable[[], RayTarget | None]:
    """The session's cluster: its fixed address, or its local instance as recorded right now."""
    if session.ray_address:
        return partial(RayTarget, session.ray_address)
    return partial(read_instance, paths.ray_instance)


def _ignore(line: str) -> None:
    """No log to write to (a promotion's revalidation reports through its own result)."""
