"""The session verbs of the command line: launch (TUI or headless), status, and scripting."""

from __future__ import annotations

import argparse
from concurrent.futures import Future

from qrsup.agents.records import format_ms
from qrsup.agents.session import SessionError
from qrsup.agents.store import Store
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.supervisor import actions
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.executor_option import cluster_device, launch_executor, require_executor
from qrsup.supervisor.fleet import Fleet, FleetError, find_session
from qrsup.supervisor.headless import run_headless
from qrsup.supervisor.launch import LaunchChoices, LaunchError, prepare_session
from qrsup.supervisor.local_ray import LocalRay
from rich.console import Console
from rich.table import Table

ASK_TIMEOUT_S = 300.0


def launch_choices(args: argparse.Namespace, device: str) -> LaunchChoices:
    executor, ray_address = launch_executor(args)
    if executor == "ray" and ray_address:
        device = cluster_device(RayTarget(ray_address))
    return LaunchChoices(
        workspace=args.workspace,
        session=args.session,
        agents=args.agents,
        proposer=args.proposer,
        suite=args.suite,
        goal=args.goal,
        budget=args.budget,
        device=device,
        init=args.init,
        gpus=args.gpus,
        agents_per_gpu=args.agents_per_gpu,
        executor=executor,
        ray_address=ray_address,
    )


def _prepared_fleet(choices: LaunchChoices, console: Console) -> Fleet:
    try:
        paths, config, created = prepare_session(choices)
    except (LaunchError, SessionError) as exc:
        raise UsageError(str(exc)) from None
    require_executor(config.executor)  # a session made with Ray, reattached without it
    verb = "created" if created else "reattaching to"
    console.print(f"{verb} session '{config.name}' in {paths.root} ({config.suite} suite)")
    if config.executor == "ray":
        where = config.ray_address or "the session's own local Ray instance"
        console.print(f"judge runs go to {where}", highlight=False)
    return Fleet(paths)


def headless(choices: LaunchChoices, console: Console) -> int:
    fleet = _prepared_fleet(choices, console)
    try:
        return run_headless(fleet, console)
    finally:  # every agent has stopped: the session's local Ray instance (if any) goes too
        LocalRay(fleet.paths).stop()


def tui(choices: LaunchChoices) -> int:
    from qrsup.supervisor.app import run_app

    fleet = _prepared_fleet(choices, Console(stderr=True))
    return run_app(fleet)


def _fleet(args: argparse.Namespace) -> Fleet:
    try:
        return Fleet(find_session(args.workspace.resolve(), args.session))
    except (FleetError, SessionError) as exc:
        raise UsageError(str(exc)) from None


def dispatch(args: argparse.Namespace, console: Console) -> int:
    fleet = _fleet(args)
    if args.command == "status":
        console.print(status_table(fleet))
        return 0
    if args.command == "ask":
        return _ask(fleet, args.agent, " ".join(args.question), console)
    if args.command == "steer":
        result = actions.steer(fleet, args.agent, " ".join(args.text))
    elif args.command == "goal":
        result = actions.set_goal(fleet, args.agent, " ".join(args.goal))
    elif args.command == "promote":
        result = actions.promote_candidate(fleet, args.candidate)
    else:
        verb = {
            "pause": actions.pause,
            "resume": actions.resume,
            "kill": actions.kill,
            "restart": actions.restart,
        }[args.command]
        result = verb(fleet, args.agent)
    if not result.ok:
        raise UsageError(result.message)
    console.print(result.message, highlight=False, markup=False)
    return 0


def _ask(fleet: Fleet, agent: str, question: str, console: Console) -> int:
    pending = actions.ask(fleet, agent, question)
    if not isinstance(pending, Future):
        raise UsageError(pending.message)
    answer = pending.result(timeout=ASK_TIMEOUT_S)
    actions.record_answer(fleet, agent, answer)
    console.print(answer.answer, highlight=False, markup=False)
    return 0


def status_table(fleet: Fleet) -> Table:
    """Agents with their state, and the beam and incumbent from the store."""
    table = Table(title=f"session {fleet.session.name}", title_justify="left")
    for column in ("agent", "role", "proposer", "state", "it", "best", "last", "heartbeat", "goal"):
        table.add_column(column)
    for s in fleet.statuses():
        age = f"{s.heartbeat_age_s:.0f}s" if s.heartbeat_age_s is not None else "—"
        table.add_row(
            s.name,
            s.role,
            s.proposer,
            s.state,
            str(s.iteration),
            format_ms(s.best_geomean_ns),
            s.last_verdict or "—",
            age,
            s.goal,
        )
    store = Store(fleet.paths.store)
    try:
        incumbent = store.candidate(store.incumbent_id() or "")
        beam = store.beam()
        if incumbent is not None:
            table.caption = (
                f"incumbent {incumbent.id} · {format_ms(incumbent.geomean_ns)}"
                + "".join(
                    f" · {role} {row['candidate_id']} {format_ms(row['geomean_ns'])}"
                    for role, row in beam.items()
                )
            )
    finally:
        store.close()
    return table
