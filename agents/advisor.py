"""The advisor: fresh, different ideas for an agent that has stopped improving.

It is asked automatically once per stall (N evaluations with no gain beyond the noise, as
`stall.py` defines it) and on demand. With a
model configured (a stronger one, by default) it asks that model; without one, or when the model
fails, it draws ideas the agent has not been given from `prompts/ideas.md`, labelled as coming
from the playbook and not from a model.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from qrsup.agents.proposal import OutcomeSummary, ProposalContext, ProposalFailure, Usage
from qrsup.agents.proposers.chat import ChatClient, ChatReply, ModelConfig
from qrsup.agents.proposers.prompt_builder import (
    DEFAULT_LIMITS,
    DEFAULT_SOURCES,
    PromptLimits,
    PromptSources,
    bullet_list,
    candidate_summary,
    clip,
    compact_memory,
    problem_statement,
    spec_legend,
)
from qrsup.agents.records import read_events
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig
from qrsup.agents.stall import stall_start
from qrsup.prompts.loader import PromptError, load_template, render

_SECTION = re.compile(r"^## ([a-z0-9][a-z0-9-]*): (.+)$", re.M)
_IDEA = re.compile(r"^[\s*#>\d.)-]*IDEA[\s*]*:[\s*]*", re.I | re.M)
_PLAYBOOK_TAG = re.compile(r"^\[playbook:([a-z0-9-]+)\]")


@dataclass(frozen=True)
class PlaybookIdea:
    """One section of `prompts/ideas.md`."""

    idea_id: str
    title: str
    text: str

    def as_advice(self) -> str:
        """The idea as queued for an agent, tagged with its playbook id."""
        return f"[playbook:{self.idea_id}] {self.title}: {' '.join(self.text.split())}"


@dataclass(frozen=True)
class Advice:
    """Ideas for one agent, where they came from, and what asking cost."""

    ideas: tuple[str, ...] = ()
    source: str = "none"
    """`model:<name>`, `playbook`, or `none` when the advisor was not asked."""
    note: str = ""
    """Why the playbook stood in for the model, when it did."""
    usage: Usage = field(default_factory=Usage)

    def to_record(self) -> dict[str, object]:
        """Plain data for the agent's records."""
        return {
            "source": self.source,
            "ideas": list(self.ideas),
            "note": self.note,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.usage.cost_usd,
        }


def load_playbook(sources: PromptSources = DEFAULT_SOURCES) -> list[PlaybookIdea]:
    """The ideas of `ideas.md`, in file order."""
    text = load_template("ideas.md", sources.prompts_dir)
    heads = list(_SECTION.finditer(text))
    ends = [h.start() for h in heads[1:]] + [len(text)]
    return [
        PlaybookIdea(h.group(1), h.group(2).strip(), text[h.end() : end].strip())
        for h, end in zip(heads, ends, strict=True)
    ]


class Advisor:
    """Gives an agent 1–3 ideas: once per plateau on its own, or whenever asked."""

    def __init__(
        self,
        agent: str,
        patience: int = 8,
        model: ModelConfig | None = None,
        max_ideas: int = 3,
        already_given: Iterable[str] = (),
        sources: PromptSources = DEFAULT_SOURCES,
        limits: PromptLimits = DEFAULT_LIMITS,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.agent = agent
        self.patience = patience
        self.max_ideas = max(1, min(3, max_ideas))
        self._given: list[str] = list(already_given)
        self._advised_plateaus: set[int] = set()
        self._sources = sources
        self._limits = limits
        self._rng = random.Random(f"advisor:{agent}")  # different agents draw different ideas
        self._client = ChatClient(model, environ) if model is not None else None

    def maybe_advise(
        self,
        history: Sequence[OutcomeSummary],
        context: ProposalContext | None = None,
        beam: str = "",
        noise: float = 0.0,
    ) -> Advice:
        """Advice when `history` ends in a stall (`stall.py`) not yet advised on; empty Advice
        otherwise."""
        start = stall_start(history, self.patience, noise)
        if start is None or start in self._advised_plateaus:
            return Advice()
        self._advised_plateaus.add(start)
        return self.advise(history, context, beam)

    def advise(
        self,
        history: Sequence[OutcomeSummary],
        context: ProposalContext | None = None,
        beam: str = "",
    ) -> Advice:
        """Ideas now, from the model when there is one, else from the playbook."""
        if self._client is None:
            advice = self._from_playbook(history, context, note="no advisor model configured")
        else:
            advice = self._from_model(history, context, beam)
        self._given.extend(advice.ideas)
        return advice

    def close(self) -> None:
        """Release the model client's connections."""
        if self._client is not None:
            self._client.close()

    def _from_model(
        self, history: Sequence[OutcomeSummary], context: ProposalContext | None, beam: str
    ) -> Advice:
        assert self._client is not None
        try:
            prompt = self._prompt(history, context, beam)
        except PromptError as exc:
            return self._from_playbook(history, context, note=f"advisor prompt: {exc}")
        reply = self._client.complete([{"role": "user", "content": prompt}])
        if isinstance(reply, ProposalFailure):
            note = f"advisor model failed ({reply.kind}: {reply.reason})"
            return self._from_playbook(history, context, note=note, usage=reply.usage)
        ideas = self._parse(reply)
        if not ideas:
            note = f"advisor reply had no usable 'IDEA:' paragraph (finish {reply.finish_reason})"
            return self._from_playbook(history, context, note=note, usage=reply.usage)
        model = self._client.config.model
        return Advice(
            tuple(f"[advisor {model}] {idea}" for idea in ideas), f"model:{model}", "", reply.usage
        )

    def _parse(self, reply: ChatReply) -> list[str]:
        parts = [" ".join(p.split()) for p in _IDEA.split(reply.text)[1:]]
        ideas = [clip(p, 1200) for p in parts if p]
        if reply.finish_reason == "length":
            ideas = ideas[:-1]  # the last one was cut mid-sentence
        return ideas[: self.max_ideas]

    def _from_playbook(
        self,
        history: Sequence[OutcomeSummary],
        context: ProposalContext | None,
        note: str,
        usage: Usage | None = None,
    ) -> Advice:
        try:
            playbook = load_playbook(self._sources)
        except PromptError as exc:
            return Advice((), "none", f"{note}; playbook unreadable: {exc}", usage or Usage())
        tried = self._tried_ids(history, context, {idea.idea_id for idea in playbook})
        fresh = [idea for idea in playbook if idea.idea_id not in tried]
        if not fresh:
            fresh, note = playbook, f"{note}; every playbook idea was tried, drawing again"
        picked = self._rng.sample(fresh, min(self.max_ideas, len(fresh)))
        return Advice(tuple(i.as_advice() for i in picked), "playbook", note, usage or Usage())

    def _tried_ids(
        self, history: Sequence[OutcomeSummary], context: ProposalContext | None, ids: set[str]
    ) -> set[str]:
        """Playbook ids this agent was given, or named in a hypothesis or family."""
        given = [*self._given, *(context.advisor_ideas if context else ())]
        tried = {m.group(1) for text in given if (m := _PLAYBOOK_TAG.match(text))}
        words = " ".join(o.hypothesis for o in history)
        if context is not None:
            words += f" {context.parent.family} {context.incumbent.family}"
        words = words.lower().replace("_", "-")
        return tried | {idea_id for idea_id in ids if idea_id in words}

    def _prompt(
        self, history: Sequence[OutcomeSummary], context: ProposalContext | None, beam: str
    ) -> str:
        playbook = load_playbook(self._sources)
        return render(
            "advisor.md",
            {
                "max_ideas": str(self.max_ideas),
                "problem": problem_statement(self._sources),
                "agent": self.agent,
                "role": context.role if context else "(unknown)",
                "goal": context.goal if context else "(unknown)",
                "spec_legend": spec_legend(context.spec_labels if context else ()),
                "incumbent_summary": candidate_summary(context.incumbent)
                if context
                else "(unknown)",
                "beam": clip(beam, 3000) or "(not given)",
                "memory": compact_memory(history, self._limits.memory),
                "given_ideas": bullet_list(self._given, self._limits.steering_chars),
                "playbook": "\n".join(f"- {i.idea_id}: {i.title}" for i in playbook),
            },
            self._sources.prompts_dir,
        )


def build_advisor(spec: AgentSpec, session: SessionConfig, paths: RunPaths) -> Advisor:
    """The advisor, remembering the ideas it already gave this agent before a restart."""
    given = [
        idea
        for event in read_events(paths.events(spec.name))
        if event.get("event") == "advisor"
        for idea in event.get("ideas", [])
    ]
    model = ModelConfig.from_mapping(session.advisor) if session.advisor else None
    return Advisor(spec.name, patience=session.advisor_after, model=model, already_given=given)
