"""The `openai` proposer: a chat model edits the parent candidate, one hypothesis per iteration.

Works with OpenAI and any OpenAI-compatible server through `ModelConfig.base_url`. Every answer
it cannot use (refused, cut at the token limit, malformed, not applying) is a ProposalFailure
carrying the tokens it cost, so the loop records it and goes on.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from qrsup.agents.proposal import Proposal, ProposalContext, ProposalFailure
from qrsup.agents.proposers.chat import ChatClient, ChatReply, ModelConfig
from qrsup.agents.proposers.edits import apply_answer
from qrsup.agents.proposers.prompt_builder import (
    DEFAULT_LIMITS,
    DEFAULT_SOURCES,
    ChatRequest,
    PromptLimits,
    PromptSources,
    build_request,
    clip,
)
from qrsup.prompts.loader import PromptError, load_template


class OpenAIProposer:
    """Asks a chat model for one edit of the parent per iteration."""

    name = "openai"
    free = False

    def __init__(
        self,
        config: ModelConfig,
        sources: PromptSources = DEFAULT_SOURCES,
        limits: PromptLimits = DEFAULT_LIMITS,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.config = config
        self._sources = sources
        self._limits = limits
        self._client = ChatClient(config, environ)

    def propose(self, context: ProposalContext) -> Proposal | ProposalFailure:
        """A candidate edited by the model, or the reason there is none."""
        try:
            request = self.request_for(context)
        except PromptError as exc:
            return ProposalFailure("config", str(exc), pause=True)
        reply = self._client.complete(request.messages)
        if isinstance(reply, ProposalFailure):
            return reply
        transcript = self._transcript(request, reply)
        failure = self._unusable(reply)
        if failure is None:
            edited = apply_answer(reply.text, context.parent.source, context.parent.family)
            if not isinstance(edited, ProposalFailure):
                return Proposal(
                    source=edited.source,
                    hypothesis=clip(edited.hypothesis, 300),
                    family=edited.family,
                    usage=reply.usage,
                    transcript=transcript,
                )
            failure = edited
        return dataclasses.replace(failure, usage=reply.usage, transcript=transcript)

    def request_for(self, context: ProposalContext) -> ChatRequest:
        """The chat request this proposer sends for `context`."""
        task = load_template("reply_format.md", self._sources.prompts_dir)
        return build_request(context, task, self._sources, self._limits)

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()

    def _unusable(self, reply: ChatReply) -> ProposalFailure | None:
        if reply.refusal or reply.finish_reason == "content_filter":
            why = reply.refusal or "the endpoint's content filter stopped the reply"
            return ProposalFailure("refusal", f"the model refused: {clip(why, 300)}")
        if reply.finish_reason == "length":
            return ProposalFailure(
                "truncated",
                f"the reply was cut at the token limit ({self.config.max_tokens} max, "
                f"{reply.usage.completion_tokens} used); ask for smaller edits or raise max_tokens",
            )
        return None

    def _transcript(self, request: ChatRequest, reply: ChatReply) -> str:
        usage = reply.usage
        header = (
            f"openai · {self.config.model} · prompt ≈{request.estimated_tokens} tokens (est.) · "
            f"usage {usage.prompt_tokens}+{usage.completion_tokens} tokens · "
            f"${usage.cost_usd:.4f} · {reply.elapsed_s:.2f} s · finish {reply.finish_reason or '?'}"
        )
        return "\n".join([header, *reply.notes, "--- reply ---", reply.text])
