"""Side questions (`/btw`): ask about an agent without stopping or changing its loop.

`ask` returns a Future at once; the answer is worked out on its own daemon thread, so neither the
agent's loop nor the TUI ever waits on it. With a model the answer comes from the model given
the agent's records; without one (or when the model fails) it is a digest of those records,
labelled as such and not dressed up as an answer.
"""

from __future__ import annotations

import difflib
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

from qrsup.agents.proposal import OutcomeSummary, ParentCandidate, ProposalFailure, Usage
from qrsup.agents.proposers.chat import ChatClient, ModelConfig
from qrsup.agents.proposers.prompt_builder import (
    DEFAULT_LIMITS,
    DEFAULT_SOURCES,
    PromptLimits,
    PromptSources,
    candidate_summary,
    clip,
    compact_memory,
    spec_legend,
)
from qrsup.prompts.loader import PromptError, render

_DIFF_CHARS = 6000
NO_MODEL = (
    "no model endpoint is configured for side questions (an openai agent's own model, else "
    "`model` and `base_url` in the [model] table of the workspace's qrsup.toml)"
)


@dataclass(frozen=True)
class AgentRecords:
    """What an agent's records say now, as plain data."""

    agent: str
    role: str = ""
    goal: str = ""
    state: str = ""
    """What the agent is doing, e.g. 'judging c3f9 (iteration 42)'."""
    candidate: ParentCandidate | None = None
    """Its current candidate: the one being judged, else the one it last proposed."""
    parent_source: str = ""
    """The source the current candidate was derived from, for the diff."""
    recent: tuple[OutcomeSummary, ...] = ()
    spec_labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class SideAnswer:
    """A question, its answer, and where the answer came from."""

    agent: str
    question: str
    answer: str
    source: str
    """`model:<name>` or `records`."""
    asked_at: float
    answered_after_s: float
    note: str = ""
    usage: Usage = field(default_factory=Usage)

    def to_record(self) -> dict[str, object]:
        """Plain data for the agent's records."""
        return {
            "agent": self.agent,
            "question": self.question,
            "answer": self.answer,
            "source": self.source,
            "asked_at": self.asked_at,
            "answered_after_s": round(self.answered_after_s, 3),
            "note": self.note,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.usage.cost_usd,
        }


@dataclass(frozen=True)
class _Found:
    text: str
    source: str
    note: str = ""
    usage: Usage = field(default_factory=Usage)


class SideQuestions:
    """Answers questions about agents on side threads."""

    def __init__(
        self,
        model: ModelConfig | None = None,
        sources: PromptSources = DEFAULT_SOURCES,
        limits: PromptLimits = DEFAULT_LIMITS,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self._client = ChatClient(model, environ) if model is not None else None
        self._sources = sources
        self._limits = limits

    def ask(self, question: str, records: AgentRecords) -> Future[SideAnswer]:
        """Start answering `question` about the agent of `records`; returns at once."""
        future: Future[SideAnswer] = Future()
        future.set_running_or_notify_cancel()
        asked_at = time.time()

        def work() -> None:
            try:
                future.set_result(self.answer(question, records, asked_at))
            except BaseException as exc:  # a bug must reach the caller, not vanish with a thread
                future.set_exception(exc)

        threading.Thread(target=work, name=f"side-question-{records.agent}", daemon=True).start()
        return future

    def answer(self, question: str, records: AgentRecords, asked_at: float) -> SideAnswer:
        """The answer, worked out on the calling thread."""
        started = time.monotonic()
        if self._client is None:
            found = _Found(answer_from_records(records, NO_MODEL), "records", "no model configured")
        else:
            found = self._from_model(question, records)
        elapsed = time.monotonic() - started
        return SideAnswer(
            records.agent,
            question,
            found.text,
            found.source,
            asked_at,
            elapsed,
            found.note,
            found.usage,
        )

    def close(self) -> None:
        """Release the model client's connections."""
        if self._client is not None:
            self._client.close()

    def _from_model(self, question: str, records: AgentRecords) -> _Found:
        assert self._client is not None
        try:
            prompt = self._prompt(question, records)
        except PromptError as exc:
            note = f"side-question prompt: {exc}"
            return _Found(answer_from_records(records, note), "records", note)
        reply = self._client.complete([{"role": "user", "content": prompt}])
        if isinstance(reply, ProposalFailure):
            note = f"model failed ({reply.kind}: {reply.reason})"
            return _Found(answer_from_records(records, note), "records", note, reply.usage)
        note = "cut at the token limit" if reply.finish_reason == "length" else ""
        text = reply.text.strip() or reply.refusal or "(the model gave an empty answer)"
        return _Found(text, f"model:{self._client.config.model}", note, reply.usage)

    def _prompt(self, question: str, records: AgentRecords) -> str:
        candidate = records.candidate
        return render(
            "side_question.md",
            {
                "agent": records.agent,
                "role": records.role or "(unknown)",
                "goal": records.goal or "(unknown)",
                "state": records.state or "(unknown)",
                "spec_legend": spec_legend(records.spec_labels),
                "candidate_summary": candidate_summary(candidate) if candidate else "(none yet)",
                "candidate_source": candidate.source.rstrip("\n") if candidate else "",
                "diff": candidate_diff(records),
                "memory": compact_memory(records.recent, self._limits.memory),
                "question": question.strip(),
            },
            self._sources.prompts_dir,
        )


def answer_from_records(records: AgentRecords, why: str) -> str:
    """What the records say about the agent: state, candidate, its change, last results; the
    first line says why no model answered."""
    lines = [
        f"No model answered this question: {why}. This is what the agent's records say.",
        f"Agent {records.agent}" + (f" ({records.role})" if records.role else ""),
    ]
    if records.goal:
        lines.append(f"Goal: {records.goal}")
    if records.state:
        lines.append(f"Now: {records.state}")
    if records.candidate is None:
        lines.append("Current candidate: none yet.")
    else:
        lines += ["Current candidate:", candidate_summary(records.candidate)]
        lines += ["Its change against its parent:", candidate_diff(records)]
    lines += [
        "Last results (newest first; times in ms, per-spec in µs):",
        compact_memory(
            sorted(records.recent, key=lambda o: o.iteration)[-5:], DEFAULT_LIMITS.memory
        ),
    ]
    return "\n".join(lines)


def candidate_diff(records: AgentRecords) -> str:
    """A unified diff of the current candidate against its parent, clipped."""
    if records.candidate is None or not records.parent_source:
        return "(no parent source in the records)"
    diff = difflib.unified_diff(
        records.parent_source.splitlines(keepends=True),
        records.candidate.source.splitlines(keepends=True),
        "parent",
        records.candidate.candidate_id,
        n=2,
    )
    return clip("".join(diff).rstrip("\n"), _DIFF_CHARS) or "(identical to its parent)"
