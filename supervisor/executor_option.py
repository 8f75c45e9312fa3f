"""`--executor local|ray` and `--ray-address`: where judge runs execute, for every command.

Ray is an optional extra: asking for it without it installed is a usage error (exit 2) with the
one line that says how to install it, before anything is written.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from qrsup.agents.session import RunPaths
from qrsup.kernels.executors.base import EXECUTORS, LOCAL, JudgeExecutor
from qrsup.kernels.executors.ray_executor import ClusterUnreachable, RayExecutor
from qrsup.kernels.executors.ray_probe import probe_once, total_gpus
from qrsup.kernels.executors.ray_support import RAY_MISSING, ray_installed
from qrsup.kernels.executors.ray_target import RayTarget, address_from
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.local_ray import LocalRay, LocalRayError


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--executor", choices=EXECUTORS, help="where judge runs execute: this host (local) or Ray"
    )
    parser.add_argument(
        "--ray-address", help="the Ray cluster (default: RAY_ADDRESS, else a local instance)"
    )


def chosen_executor(args: argparse.Namespace) -> str:
    """`--executor`, or `ray` when only `--ray-address` was given; `local` by default."""
    given = getattr(args, "executor", None)
    return given or ("ray" if getattr(args, "ray_address", None) else "local")


def require_executor(executor: str | None) -> None:
    """Refuse `ray` without Ray installed: one line, exit 2."""
    if executor == "ray" and not ray_installed():
        raise UsageError(RAY_MISSING)


@contextmanager
def command_executor(
    args: argparse.Namespace, note: Callable[[str], None]
) -> Iterator[JudgeExecutor]:
    """The executor of one `qrsup test|bench|profile`; a local Ray instance lives as long as it.

    A person at a terminal is told at once that the cluster cannot be reached (exit 2), rather
    than left waiting as an agent would be.
    """
    executor = chosen_executor(args)
    require_executor(executor)
    if executor == "local":
        yield LOCAL
        return
    address = address_from(getattr(args, "ray_address", None), os.environ)
    try:
        with ExitStack() as stack:
            if address:
                target = RayTarget(address)
            else:
                temp = stack.enter_context(tempfile.TemporaryDirectory(prefix="qrsup-ray-"))
                local = LocalRay(RunPaths(Path(temp)))
                stack.callback(local.stop)
                target = stack.enter_context(local.use())
            ray = RayExecutor(lambda: target, note, wait_for_cluster=False)
            stack.callback(ray.close)
            yield ray
    except LocalRayError as exc:
        raise UsageError(str(exc)) from None
    except ClusterUnreachable as exc:
        raise UsageError(f"Ray cluster unreachable: {exc}") from None


def ray_device(requested: str | None, executor: RayExecutor) -> str:
    """A Ray run's device: the cluster's GPUs decide, not this host's; `cuda` when it has any."""
    if requested == "cpu":
        return "cpu"
    if requested == "cuda" or ((requested or "").startswith("cuda:") and requested[5:].isdigit()):
        return "cuda"  # Ray picks the GPU
    if requested is not None:
        raise UsageError(f"--device must be cpu, cuda or cuda:N, got {requested!r}")
    target = executor.target()
    return cluster_device(target) if target is not None else "cpu"


def note_line(line: str) -> None:
    """An executor's note, for a person at a terminal: one line on stderr."""
    print(f"qrsup: {line}", file=sys.stderr)


def placement_line(placement: dict) -> str:
    """Where a Ray executor ran the judge: node, GPUs, time queued, and any node it lost."""
    gpus = ",".join(placement.get("gpus") or [])
    where = f"node {str(placement.get('node_id', '?'))[:8]} ({placement.get('node_ip', '?')})"
    where += f" gpu {gpus}" if gpus else ""
    line = f"ran on {where} of {placement.get('address', '?')}"
    line += f", queued {placement.get('queued_s', 0):.1f} s"
    lost = placement.get("lost_nodes") or []
    return line + (f"; lost node {', '.join(n[:8] for n in lost)} first" if lost else "")


def launch_executor(args: argparse.Namespace) -> tuple[str, str]:
    """A new session's (executor, ray_address); checked before anything is written."""
    executor = chosen_executor(args)
    require_executor(executor)
    if executor != "ray":
        return executor, ""
    return executor, address_from(getattr(args, "ray_address", None), os.environ)


def cluster_device(target: RayTarget) -> str:
    """The device to judge on: `cuda` when the cluster has GPUs (this host may have none)."""
    sample = probe_once(target)
    if "unreachable" in sample:
        raise UsageError(f"Ray cluster unreachable: {sample['unreachable']}")
    return "cuda" if total_gpus(sample) else "cpu"
