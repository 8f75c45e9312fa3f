"""Entry point of one agent process: `python -m qrsup.agents.agent_main RUN_DIR AGENT [DEVICE]`."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

from qrsup.agents.advisor import build_advisor
from qrsup.agents.affected_specs import focus_between, focus_from_parent
from qrsup.agents.evaluation import Evaluator
from qrsup.agents.heartbeat import read_beat, write_beat
from qrsup.agents.hooks import StatusHook
from qrsup.agents.incumbent import REPO_ROOT
from qrsup.agents.judge_executor import session_executor
from qrsup.agents.lifecycle import record_death
from qrsup.agents.loop import ResearchAgent
from qrsup.agents.precompile import Precompiler
from qrsup.agents.proposal import Proposer
from qrsup.agents.proposers import CommandConfig, CommandProposer, ModelConfig, OpenAIProposer
from qrsup.agents.records import AgentLog, append_event, replace_atomically
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session
from qrsup.agents.settings import SettingsError, WorkspaceSettings, load_settings
from qrsup.agents.spaces import space_for
from qrsup.agents.store import Store
from qrsup.agents.tuner import Sample, TunerProposer
from qrsup.kernels.device_arch import device_arch
from qrsup.kernels.executors.base import LOCAL, JudgeExecutor
from qrsup.kernels.judge.triton_cache import shared
from qrsup.kernels.schema import JUDGE_VERDICTS, Actor, EventKind, Verdict
from qrsup.kernels.suites import get_suite

# qrsup's own code (found without importing what lies above this layer): a coding agent reads
# it, never edits it.
QRSUP_PACKAGES = tuple(
    Path(location).resolve()
    for name in ("agents", "kernels", "supervisor", "prompts")
    for location in (importlib.util.find_spec(f"qrsup.{name}").submodule_search_locations or [])
)

# The judge's verdicts on a candidate itself: the tuner learns from these alone (a run still
# under way, or one whose judge's files had changed, says nothing about its config).
ON_THE_CANDIDATE = JUDGE_VERDICTS - {Verdict.TAMPERED}


def build_proposer(
    spec: AgentSpec, session: SessionConfig, store: Store, arch: int | None = None
) -> Proposer:
    """The agent's proposer; tuner samples come from this session's evaluated candidates, and
    it searches the configs of its GPU's architecture `arch`."""
    if spec.proposer == "openai":
        return OpenAIProposer(ModelConfig.from_mapping(spec.model))
    if spec.proposer == "command":
        protected = (session.workspace, *QRSUP_PACKAGES)
        return CommandProposer(CommandConfig(template=spec.command, read_only=protected))
    space = space_for(spec.family, REPO_ROOT, arch)
    suite = get_suite(session.suite)

    def history() -> list[Sample]:
        iterations = [r for r in store.iterations() if r.candidate_id]
        waits = {
            r.candidate_id: r.compile_wait_s for r in iterations if r.compile_wait_s is not None
        }
        # Set aside unjudged, a slow compile is a point without a figure, like a failed one.
        slow = {r.candidate_id for r in iterations if r.verdict == Verdict.SLOW_COMPILE}
        return [
            Sample(
                c.params,
                c.geomean_ns if c.verdict == "pass" else None,
                c.spec_means_ns or {},
                waits.get(c.id),
                compile_overran=c.id in slow,
            )
            for c in store.candidates()
            if c.family == spec.family
            and c.params is not None
            and (c.verdict in ON_THE_CANDIDATE or c.id in slow)
        ]

    return TunerProposer(
        space, suite.benchmarks, history, lambda digest: store.candidate_by_hash(digest) is not None
    )


def build_fallback(spec: AgentSpec) -> Proposer | None:
    """The openai agent's fallback model, asked while its own waits for quota."""
    if spec.proposer != "openai":
        return None
    config = ModelConfig.from_mapping(spec.model)
    if not config.fallback_model:
        return None
    return OpenAIProposer(config.for_model(config.fallback_model))


def status_hook(
    settings: WorkspaceSettings, session: SessionConfig, paths: RunPaths, name: str
) -> StatusHook:
    """The workspace's status-change hook, recording each run in the agent's events."""
    return StatusHook(
        settings.hooks,
        name,
        session.name,
        str(session.workspace),
        lambda event: append_event(paths.events(name), {"agent": name, **event}),
    )


def _crash_hook(session: SessionConfig, paths: RunPaths, name: str, detail: str) -> None:
    """Run the hook for a crash, waiting for it: the process ends right after."""
    try:
        settings = load_settings(session.workspace)
    except SettingsError as exc:
        AgentLog(paths.agent_log(name)).write(f"no crash hook: {exc}")
        return
    status_hook(settings, session, paths, name).fire("crash", detail, wait=True)


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    paths, name = RunPaths(Path(args[0])), args[1]
    session = load_session(paths)
    spec = session.agent(name)
    device = args[2] if len(args) > 2 else spec.device  # a leased GPU overrides "cuda"
    paths.ensure(name)
    replace_atomically(paths.pid_file(name), str(os.getpid()))  # a reader never sees it empty
    store = Store(paths.store)
    executor: JudgeExecutor = LOCAL
    try:
        settings = load_settings(session.workspace)
        log = AgentLog(paths.agent_log(name)).write
        # Not on the CPU: it is the timed device, and a referee loading beside another agent's
        # timed run would slow that run down.
        warm = settings.warm_referees and device.startswith("cuda")
        executor = session_executor(paths, session, name, log, warm)
        # The tuner's candidates are qrsup's own code: they may share compiled kernels, those
        # of every tuner agent of the session (so a second agent on this host finds the
        # incumbent's kernels compiled by the first), and this host may compile them ahead of
        # their judge runs. Triton's cache writes each entry whole, so agents may write at once.
        tuner = spec.proposer == "tuner"
        cache_dir = paths.triton_caches / "tuner"
        cache = shared(cache_dir) if tuner else None
        local = tuner and session.executor == "local"
        precompiler = (
            Precompiler.for_device(device, cache_dir, paths.work(name), settings.compile_patience_s)
            if local
            else None
        )
        if local and device.startswith("cuda") and precompiler is None:
            log("kernels are not compiled ahead: NVML cannot name this GPU's compute capability")
        evaluator = Evaluator.for_session(paths, session, device, cache, executor)
        proposer = build_proposer(spec, session, store, device_arch(device))
        advisor = build_advisor(spec, session, paths)
        agent = ResearchAgent(
            paths,
            session,
            spec,
            store,
            proposer,
            evaluator,
            advisor,
            fallback=build_fallback(spec),
            hook=status_hook(settings, session, paths, name),
            guidance=session.workspace / settings.guidance_file,
            focus=focus_from_parent(store.candidate, evaluator.suite, REPO_ROOT),
            retime_focus=focus_between(evaluator.suite, REPO_ROOT),
            precompile=precompiler,
        )
        return agent.run()
    except Exception:
        text = traceback.format_exc()
        last_line = text.strip().splitlines()[-1]
        AgentLog(paths.agent_log(name)).write(f"agent crashed:\n{text}")
        event = {"event": str(EventKind.CRASHED), "agent": name, "error": text[-4000:]}
        append_event(paths.events(name), event)
        record_death(paths, store, name, spec.role, f"crashed: {last_line}", Actor.AGENT)
        beat = read_beat(paths.heartbeat(name))
        if beat is not None:
            crashed = replace(beat, state="crashed", detail=last_line, updated_at=time.time())
            write_beat(paths.heartbeat(name), crashed)
        _crash_hook(session, paths, name, last_line)
        return 1
    finally:
        executor.close()  # a Ray driver or a warm referee kept between runs ends with the agent
        store.close()


if __name__ == "__main__":
    sys.exit(main())
