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
from qrsup.agents.evaluation import Evaluator
from qrsup.agents.heartbeat import read_beat, write_beat
from qrsup.agents.incumbent import REPO_ROOT
from qrsup.agents.judge_executor import session_executor
from qrsup.agents.loop import ResearchAgent
from qrsup.agents.proposal import Proposer
from qrsup.agents.proposers import CommandConfig, CommandProposer, ModelConfig, OpenAIProposer
from qrsup.agents.records import AgentLog, append_event
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session
from qrsup.agents.spaces import space_for
from qrsup.agents.store import Store
from qrsup.agents.tuner import Sample, TunerProposer
from qrsup.kernels.judge.triton_cache import shared
from qrsup.kernels.suites import get_suite

# qrsup's own code (found without importing what lies above this layer): a coding agent reads
# it, never edits it.
QRSUP_PACKAGES = tuple(
    Path(location).resolve()
    for name in ("agents", "kernels", "supervisor", "prompts")
    for location in (importlib.util.find_spec(f"qrsup.{name}").submodule_search_locations or [])
)


def build_proposer(spec: AgentSpec, session: SessionConfig, store: Store) -> Proposer:
    """The agent's proposer; tuner samples come from this session's evaluated candidates."""
    if spec.proposer == "openai":
        return OpenAIProposer(ModelConfig.from_mapping(spec.model))
    if spec.proposer == "command":
        protected = (session.workspace, *QRSUP_PACKAGES)
        return CommandProposer(CommandConfig(template=spec.command, read_only=protected))
    space = space_for(spec.family, REPO_ROOT)
    suite = get_suite(session.suite)

    def history() -> list[Sample]:
        return [
            Sample(c.params, c.geomean_ns if c.verdict == "pass" else None, c.spec_means_ns or {})
            for c in store.candidates()
            if c.family == spec.family and c.params is not None
        ]

    return TunerProposer(
        space, suite.benchmarks, history, lambda digest: store.candidate_by_hash(digest) is not None
    )


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    paths, name = RunPaths(Path(args[0])), args[1]
    session = load_session(paths)
    spec = session.agent(name)
    device = args[2] if len(args) > 2 else spec.device  # a leased GPU overrides "cuda"
    paths.ensure(name)
    paths.pid_file(name).write_text(str(os.getpid()))
    store = Store(paths.store)
    executor = session_executor(paths, session, name, AgentLog(paths.agent_log(name)).write)
    try:
        # The tuner's candidates are qrsup's own code: they may share compiled kernels.
        cache = shared(paths.agent_dir(name) / "triton") if spec.proposer == "tuner" else None
        evaluator = Evaluator.for_session(paths, session, device, cache, executor)
        proposer = build_proposer(spec, session, store)
        advisor = build_advisor(spec, session, paths)
        agent = ResearchAgent(paths, session, spec, store, proposer, evaluator, advisor)
        return agent.run()
    except Exception:
        text = traceback.format_exc()
        AgentLog(paths.agent_log(name)).write(f"agent crashed:\n{text}")
        append_event(paths.events(name), {"event": "crashed", "agent": name, "error": text[-4000:]})
        beat = read_beat(paths.heartbeat(name))
        if beat is not None:
            last_line = text.strip().splitlines()[-1]
            crashed = replace(beat, state="crashed", detail=last_line, updated_at=time.time())
            write_beat(paths.heartbeat(name), crashed)
        return 1
    finally:
        executor.close()  # a Ray driver kept between judge runs ends with the agent
        store.close()


if __name__ == "__main__":
    sys.exit(main())
