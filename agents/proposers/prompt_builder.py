"""Build a model request from the prompt templates and a proposal context, with bounded size.

Everything but the parent's source is capped: memory keeps the newest outcomes in detail and
older ones as one line per distinct hypothesis, under a hard character budget, so a prompt after
200 iterations is about as big as one after 20.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qrsup.agents.proposal import OutcomeSummary, ParentCandidate, ProposalContext
from qrsup.kernels.schema import role
from qrsup.prompts.loader import PROMPTS_DIR, load_template, render

AGENTS_MD = Path(__file__).resolve().parents[2] / "AGENTS.md"

# English prose and Python both run at about 3.5–4 characters per token in GPT tokenizers; the
# lower figure keeps the estimate on the safe side for context budgets.
CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True)
class MemoryLimits:
    """How much of an agent's history goes into one prompt."""

    recent_entries: int = 12
    """Newest outcomes shown one per line, with hypothesis and reason."""
    spec_figure_entries: int = 4
    """Of those, how many newest carry their per-spec times."""
    older_hypotheses: int = 30
    """Distinct older hypotheses listed, one short line each."""
    line_chars: int = 320
    """Longest line for a newest outcome; longer hypotheses and reasons are clipped."""
    older_line_chars: int = 160
    """Longest line for an older outcome."""
    max_chars: int = 8000
    """Hard cap on the whole memory section."""


@dataclass(frozen=True)
class PromptLimits:
    """Caps on the parts of a prompt that grow with a run."""

    memory: MemoryLimits = field(default_factory=MemoryLimits)
    steering_chars: int = 4000
    profile_chars: int = 3000


@dataclass(frozen=True)
class ChatRequest:
    """The messages of one chat request and their estimated size."""

    messages: tuple[dict[str, str], ...]
    estimated_tokens: int

    def as_text(self) -> str:
        """The whole request as one Markdown document, for tools that take a prompt file."""
        return "\n\n".join(message["content"] for message in self.messages)


@dataclass(frozen=True)
class PromptSources:
    """Where templates and the repository rules are read from."""

    prompts_dir: Path = PROMPTS_DIR
    rules_path: Path = AGENTS_MD


DEFAULT_SOURCES = PromptSources()
DEFAULT_LIMITS = PromptLimits()


def build_request(
    context: ProposalContext,
    task: str,
    sources: PromptSources = DEFAULT_SOURCES,
    limits: PromptLimits = DEFAULT_LIMITS,
) -> ChatRequest:
    """System message (problem and rules) and user message (this iteration) for `context`."""
    directory = sources.prompts_dir
    system = render(
        "system.md",
        {"problem": problem_statement(sources), "rules": rules_text(sources)},
        directory,
    )
    role_file = role(context.role).prompt_file
    labels = context.spec_labels
    user = render(
        "iteration.md",
        {
            "iteration": str(context.iteration),
            "agent": context.agent,
            "role": context.role,
            "role_instructions": load_template(role_file, directory).strip(),
            "goal": context.goal.strip() or "(no goal set: lower the geomean)",
            "spec_legend": spec_legend(labels),
            "incumbent_summary": candidate_summary(context.incumbent),
            "parent_summary": candidate_summary(context.parent),
            "parent_source": context.parent.source.rstrip("\n"),
            "memory": compact_memory(context.memory, limits.memory),
            "steering": bullet_list(context.steering, limits.steering_chars),
            "advisor_ideas": bullet_list(context.advisor_ideas, limits.steering_chars),
            "guidance": clip(context.guidance, limits.steering_chars) or "(none)",
            "profile": clip(context.profile_summary or "(no profile yet)", limits.profile_chars),
            "task": task.strip(),
        },
        directory,
    )
    messages = ({"role": "system", "content": system}, {"role": "user", "content": user})
    return ChatRequest(messages, estimate_tokens(system) + estimate_tokens(user))


def problem_statement(sources: PromptSources) -> str:
    """`prompts/problem.md` as written."""
    return load_template("problem.md", sources.prompts_dir).strip()


def rules_text(sources: PromptSources) -> str:
    """AGENTS.md as written."""
    return load_template(sources.rules_path.name, sources.rules_path.parent).strip()


def estimate_tokens(text: str) -> int:
    """A tokenizer-free upper estimate of the tokens in `text`."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def spec_legend(labels: Sequence[str]) -> str:
    """One line per benchmark spec, by the index the figures use."""
    if not labels:
        return "(no benchmark specs given)"
    return "\n".join(f"{index}: {label}" for index, label in enumerate(labels))


def candidate_summary(candidate: ParentCandidate) -> str:
    """Id, family, geomean, hypothesis and per-spec times of a candidate."""
    lines = [
        f"{candidate.candidate_id} · family {candidate.family or '?'} · geomean "
        f"{_ms(candidate.geomean_ns)}",
        f"hypothesis: {candidate.hypothesis or '(none)'}",
    ]
    if candidate.spec_means_ns:
        lines.append(f"per spec (µs): {spec_figures(candidate.spec_means_ns)}")
    if candidate.params:
        lines.append(f"params: {candidate.params}")
    return "\n".join(lines)


def compact_memory(memory: Iterable[OutcomeSummary], limits: MemoryLimits) -> str:
    """Newest outcomes in detail, older ones as distinct hypotheses, under `limits.max_chars`."""
    newest = sorted(memory, key=lambda outcome: outcome.iteration, reverse=True)
    if not newest:
        return "(none yet)"
    recent, older = newest[: limits.recent_entries], newest[limits.recent_entries :]
    lines = [_overview(newest)]
    for index, outcome in enumerate(recent):
        with_specs = index < limits.spec_figure_entries
        lines.append(clip(_outcome_line(outcome, with_specs), limits.line_chars))
    if older:
        lines.append(
            f"Earlier ({len(older)} outcomes): the fastest passes and the newest other "
            "attempts, one line per distinct hypothesis:"
        )
        lines.extend(
            clip(_outcome_line(o, with_specs=False), limits.older_line_chars)
            for o in _earlier(older, limits.older_hypotheses)
        )
    return _within(lines, limits.max_chars)


def bullet_list(items: Sequence[str], max_chars: int) -> str:
    """Items as a Markdown list, clipped as a whole."""
    if not items:
        return "(none)"
    return clip("\n".join(f"- {item.strip()}" for item in items), max_chars)


def spec_figures(spec_means_ns: dict[int, float]) -> str:
    """`index:µs` pairs in spec order."""
    return " ".join(f"{index}:{_us(ns)}" for index, ns in sorted(spec_means_ns.items()))


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f" … [{len(text) - limit} more chars]"
    return text[: max(0, limit - len(marker))] + marker


def _overview(newest: Sequence[OutcomeSummary]) -> str:
    counts = Counter(outcome.verdict for outcome in newest)
    tally = ", ".join(f"{verdict} {count}" for verdict, count in counts.most_common())
    passed = [o for o in newest if o.verdict == "pass" and o.geomean_ns is not None]
    if not passed:
        return f"{len(newest)} outcomes ({tally}); none timed yet."
    best = min(passed, key=lambda o: o.geomean_ns or math.inf)
    return (
        f"{len(newest)} outcomes ({tally}); best {_ms(best.geomean_ns)} at #{best.iteration} "
        f"({best.candidate_id}): {clip(best.hypothesis, 120)}"
    )


def _outcome_line(outcome: OutcomeSummary, with_specs: bool) -> str:
    line = f"- #{outcome.iteration} {outcome.candidate_id or '-'} {outcome.verdict}"
    if outcome.geomean_ns is not None:
        line += f" {_ms(outcome.geomean_ns)}"
    line += f": {outcome.hypothesis}"
    if outcome.reason:
        line += f" — {outcome.reason}"
    if with_specs and outcome.spec_means_ns:
        line += f" [µs {spec_figures(outcome.spec_means_ns)}]"
    return line


def _earlier(older: Sequence[OutcomeSummary], count: int) -> list[OutcomeSummary]:
    """Half the lines for the fastest distinct passes, the rest for the newest other attempts."""
    seen: set[str] = set()
    distinct = []
    for outcome in older:
        key = " ".join(outcome.hypothesis.lower().split())
        if key not in seen:
            seen.add(key)
            distinct.append(outcome)
    timed = [o for o in distinct if o.verdict == "pass" and o.geomean_ns is not None]
    fastest = sorted(timed, key=lambda o: o.geomean_ns or math.inf)[: count // 2]
    chosen = {o.iteration for o in fastest}
    others = [o for o in distinct if o.iteration not in chosen][: count - len(fastest)]
    return sorted([*fastest, *others], key=lambda o: o.iteration, reverse=True)


def _within(lines: Sequence[str], max_chars: int) -> str:
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text
    room = max_chars - 40  # for the line that says what was omitted
    kept: list[str] = []
    for line in lines:
        if sum(len(k) + 1 for k in kept) + len(line) > room:
            break
        kept.append(line)
    kept.append(f"… {len(lines) - len(kept)} more lines omitted")
    return "\n".join(kept)


def _ms(ns: float | None) -> str:
    return "untimed" if ns is None else f"{ns / 1e6:.3f} ms"


def _us(ns: float) -> str:
    us = ns / 1e3
    return f"{us:.1f}" if us < 100 else f"{us:.0f}"
