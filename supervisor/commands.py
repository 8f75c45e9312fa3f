"""The session verbs of the command line: launch (TUI or headless), status, and scripting."""

from __future__ import annotations

import argparse
import contextlib
import sys
from concurrent.futures import Future
from functools import partial

from qrsup.agents.records import format_ms
from qrsup.agents.session import SessionError
from qrsup.agents.spend import total
from qrsup.agents.store import Store, StoreError
from qrsup.kernels.executors.ray_target import RayTarget
from qrsup.kernels.schema import Verdict
from qrsup.supervisor import actions
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.executor_option import cluster_device, launch_executor, require_executor
from qrsup.supervisor.fleet import Fleet, FleetError, find_session
from qrsup.supervisor.headless import run_headless
from qrsup.supervisor.launch import (
    LaunchChoices,
    LaunchError,
    given_new_session_options,
    prepare_session,
)
from qrsup.supervisor.local_ray import LocalRay
from qrsup.supervisor.widgets.format import agent_spend, agent_state, figure_cell, verdict_label
from rich.console import Console
from rich.table import Table

ASK_TIMEOUT_S = 300.0
STATE_WIDTH = 32


def launch_choices(args: argparse.Namespace, device: str) -> LaunchChoices:
    executor = ray_address = None  # not given: the session's own, or local for a new one
    if getattr(args, "executor", None) or getattr(args, "ray_address", None):
        executor, ray_address = launch_executor(args)
        if executor == "ray" and ray_address:
            device = cluster_device(RayTarget(ray_address))
    return LaunchChoices(
        workspace=args.workspace,
        session=args.session,
        agents=args.agents,
        proposer=args.proposer,
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        command=args.command_template,
        agent_options=tuple(args.agent_options or ()),
        suite=args.suite,
        goal=args.goal,
        budget=args.budget,
        cost_budget=args.cost_budget,
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
    fleet = Fleet(paths)
    try:
        accepted = [] if created else fleet.accept_changed_judge()
    except FleetError as exc:
        raise UsageError(str(exc)) from None
    if accepted:
        console.print(
            f"the judge's files changed since the session started ({', '.join(accepted)}); "
            "it judges with them from now on (figures from before may not compare)",
            highlight=False,
        )
    return fleet


def headless(choices: LaunchChoices, console: Console) -> int:
    fleet = _prepared_fleet(choices, console)
    try:
        return run_headless(fleet, console)
    finally:  # every agent has stopped: the session's local Ray instance (if any) goes too
        LocalRay(fleet.paths).stop()


def tui(choices: LaunchChoices) -> int:
    from qrsup.supervisor.app import run_app

    _require_a_terminal()
    fleet = _prepared_fleet(choices, Console(stderr=True))
    return run_app(fleet)


def _require_a_terminal() -> None:
    """The app reads keys from standard input and draws on standard error (Textual's driver).
    Given a pipe or a file instead, it drew escape codes at 80 × 24 into it (`qrsup 2>&1 | tee`),
    so it is refused before any agent starts."""
    streams = {"standard input": sys.__stdin__, "standard error": sys.__stderr__}
    if off := [name for name, stream in streams.items() if stream is None or not stream.isatty()]:
        which = (
            f"{off[0]} is not one" if len(off) == 1 else f"{' and '.join(off)} are not terminals"
        )
        raise UsageError(
            f"the app needs a terminal, but {which} here (a pipe or a file); run it from a "
            "terminal, or run the agents without it: qrsup run --headless"
        )


def _fleet(args: argparse.Namespace) -> Fleet:
    try:
        return Fleet(find_session(args.workspace.resolve(), args.session))
    except (FleetError, SessionError) as exc:
        raise UsageError(str(exc)) from None


def dispatch(args: argparse.Namespace, console: Console) -> int:
    if given := given_new_session_options(launch_choices(args, "cpu")):
        flags = ", ".join(given)
        raise UsageError(f"{flags} shape a new session; qrsup {args.command} ignores them")
    fleet = _fleet(args)
    if args.command == "status":
        fleet.notice_deaths()
        console.print(status_table(fleet))
        if interrupted := interrupted_table(fleet):
            console.print(interrupted)
        return 0
    if args.command == "ask":
        return _ask(fleet, args.agent, " ".join(args.question), console)
    if args.command == "steer":
        result = actions.steer(fleet, args.agent, " ".join(args.text))
    elif args.command == "broadcast":
        result = actions.broadcast(fleet, " ".join(args.text))
    elif args.command == "budget":
        result = actions.set_budget(fleet, args.agent, args.limit)
    elif args.command == "goal":
        result = actions.set_goal(fleet, args.agent, " ".join(args.goal_text))
    elif args.command == "promote":
        result = _promote(fleet, args.candidate, args.force, console)
    elif args.command == "stop":
        result = actions.stop_session(fleet, partial(console.print, highlight=False, markup=False))
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


def _promote(
    fleet: Fleet, candidate_id: str, force: bool, console: Console
) -> actions.ActionResult:
    """The evidence first, then the revalidation; a slower figure commits only with --force."""
    evidence = actions.promotion_evidence(fleet, candidate_id)
    if isinstance(evidence, actions.ActionResult):
        return evidence
    if_slower = (
        "--force: a slower figure is committed too"
        if force
        else "a slower figure commits nothing (--force commits it anyway)"
    )
    for line in evidence.lines(if_slower):
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    return actions.promote_candidate(fleet, candidate_id, force=force)


def _ask(fleet: Fleet, agent: str, question: str, console: Console) -> int:
    pending = actions.ask(fleet, agent, question)
    if not isinstance(pending, Future):
        raise UsageError(pending.message)
    answer = pending.result(timeout=ASK_TIMEOUT_S)
    actions.record_answer(fleet, agent, answer)
    console.print(answer.answer, highlight=False, markup=False)
    return 0


def status_table(fleet: Fleet) -> Table:
    """Agents with their state and spend, and the beam, incumbent and spend of the session."""
    table = Table(title=f"session {fleet.session.name}", title_justify="left")
    columns = ("agent", "role", "proposer", "state", "it", "best ms", "spend", "last", "heartbeat")
    for column in columns:  # figures never wrap; the state's detail is cut, the goal wraps
        table.add_column(column, no_wrap=True, overflow="ellipsis", max_width=STATE_WIDTH)
    table.add_column("goal", ratio=1)
    statuses = fleet.statuses()
    for s in statuses:
        age = f"{s.heartbeat_age_s:.0f}s" if s.heartbeat_age_s is not None else "—"
        table.add_row(
            s.name,
            s.role,
            s.proposer,
            agent_state(s),
            str(s.iteration),
            figure_cell(s.best_geomean_ns, s.best_quick_geomean_ns),
            agent_spend(s),
            verdict_label(s.last_verdict),
            age,
            s.goal,
        )
    spent = total(s.spend for s in statuses)
    caption = [f"session spend {spent.text()}"] if spent.usd or spent.tokens else []
    with contextlib.suppress(StoreError), Store.reader(fleet.paths.store) as store:
        incumbent = store.candidate(store.incumbent_id() or "")
        beam = store.beam()
        if incumbent is not None:
            caption.append(f"incumbent {incumbent.id} {format_ms(incumbent.geomean_ns)}")
            caption += [
                f"{role} {slot.candidate_id} {format_ms(slot.geomean_ns)}"
                for role, slot in beam.items()
            ]
    table.caption = " · ".join(caption) or None
    return table


def interrupted_table(fleet: Fleet, limit: int = 10) -> Table | None:
    """The latest iterations cut off by an agent's death, with the candidate each left behind."""
    try:
        with Store.reader(fleet.paths.store) as store:
            cut = [r for r in store.iterations() if r.verdict == Verdict.INTERRUPTED][:limit]
    except StoreError:  # no agent has created it yet
        return None
    if not cut:
        return None
    table = Table(title="interrupted (newest first)", title_justify="left")
    for column in ("agent", "it", "candidate", "reason"):
        table.add_column(column)
    for record in cut:
        table.add_row(
            record.agent, str(record.iteration), record.candidate_id or "—", record.reason
        )
    return table
