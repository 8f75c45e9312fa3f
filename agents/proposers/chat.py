"""One chat request to an OpenAI-compatible endpoint, as data: a reply or a ProposalFailure.

Shared by the openai proposer, the advisor and side questions. The API key is read from the
environment at each request and is never kept in a config, a reply, a failure or a log line;
error texts are scrubbed of it before they leave this module.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from qrsup.agents.proposal import ProposalFailure, Usage
from qrsup.agents.proposers.retry import RetryPolicy, call_with_retries

# openai is imported where used: it costs an agent 0.6 s to start, and tuners never call.

# Local servers (vLLM, Ollama, llama.cpp) accept any key; the client library insists on one.
_NO_KEY = "EMPTY"
_KEY_LIKE = re.compile(r"\b(sk|key|tok)-[A-Za-z0-9_\-]{8,}")


@dataclass(frozen=True)
class ModelConfig:
    """One model endpoint and how to ask it; the key's variable name, never the key."""

    model: str
    """Model name as the endpoint knows it."""
    base_url: str | None = None
    """An OpenAI-compatible server (vLLM, Ollama …); None for OpenAI itself."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key, read at each request."""
    temperature: float | None = 0.7
    """None leaves it out, for models that only accept their default."""
    max_tokens: int = 8192
    """Cap on the reply's tokens; a reply cut there is a `truncated` failure."""
    token_limit_field: str = "max_tokens"
    """Request field carrying `max_tokens`; newer OpenAI models want `max_completion_tokens`."""
    timeout_s: float = 300.0
    """Longest wait for a reply, per attempt."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Backoff for 429, 5xx and lost connections."""
    usd_per_million_prompt_tokens: float = 0.0
    """Price table; zero records no cost."""
    usd_per_million_completion_tokens: float = 0.0
    fallback_model: str | None = None
    """A model on the same endpoint asked while this one waits for quota; None: just wait."""

    @classmethod
    def from_mapping(cls, settings: Mapping[str, object]) -> ModelConfig:
        """A config from a session's `model` table; unknown or mistyped settings are errors."""
        values = checked_settings(settings)
        if "model" not in values:
            raise ValueError("model: the setting 'model' (the model's name) is required")
        return cls(**values)  # type: ignore[arg-type]

    def for_model(self, model: str) -> ModelConfig:
        """The same endpoint and settings, asking another model (the fallback)."""
        return dataclasses.replace(self, model=model, fallback_model=None)

    def usage(self, prompt_tokens: int, completion_tokens: int) -> Usage:
        """Tokens and their cost under this config's prices."""
        cost = (
            prompt_tokens * self.usd_per_million_prompt_tokens
            + completion_tokens * self.usd_per_million_completion_tokens
        ) / 1e6
        return Usage(prompt_tokens, completion_tokens, cost)


def checked_settings(settings: Mapping[str, object]) -> dict[str, object]:
    """A `model` table's settings, typed; a partial table (defaults in qrsup.toml) is fine."""
    if "api_key" in settings:
        raise ValueError(
            "model: keys never go in session files; put it in an environment variable and "
            "name that variable with api_key_env"
        )
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(
            f"model: unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    values = {name: _checked(name, value) for name, value in settings.items()}
    if values.get("token_limit_field", "max_tokens") not in _TOKEN_LIMIT_FIELDS:
        raise ValueError(f"model: token_limit_field must be one of {_TOKEN_LIMIT_FIELDS}")
    return values


_TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
_NUMBER = (int, float)
_SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "base_url": (str, type(None)),
    "api_key_env": (str,),
    "temperature": (*_NUMBER, type(None)),
    "max_tokens": (int,),
    "token_limit_field": (str,),
    "timeout_s": _NUMBER,
    "usd_per_million_prompt_tokens": _NUMBER,
    "usd_per_million_completion_tokens": _NUMBER,
    "fallback_model": (str, type(None)),
}


def _checked(name: str, value: object) -> object:
    """`value` if it has the setting's type; a RetryPolicy for the `retry` table."""
    if name == "retry":
        if not isinstance(value, Mapping):
            raise ValueError("model: retry must be a table (attempts, base_delay_s, …)")
        policy_fields = {f.name for f in dataclasses.fields(RetryPolicy)}
        bad = sorted(k for k, v in value.items() if k not in policy_fields or not _is_number(v))
        if bad:
            raise ValueError(f"model: bad retry setting(s) {', '.join(bad)}")
        return RetryPolicy(**value)
    expected = _SETTING_TYPES[name]
    if isinstance(value, bool) or not isinstance(value, expected):
        names = " or ".join("none" if t is type(None) else t.__name__ for t in expected)
        raise ValueError(f"model: {name} = {value!r} should be {names}")
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool)


@dataclass(frozen=True)
class ChatReply:
    """What the model said and what it cost."""

    text: str
    finish_reason: str
    refusal: str
    usage: Usage
    elapsed_s: float
    notes: tuple[str, ...] = ()
    """Retries and other events on the way, for the agent log."""


def scrub_key_like(text: str) -> str:
    """`text` with anything shaped like an API key (`sk-…`) replaced."""
    return _KEY_LIKE.sub("[redacted]", text)


class ChatClient:
    """Sends chat requests for one ModelConfig, with the retry policy of `retry.py`."""

    def __init__(
        self,
        config: ModelConfig,
        environ: Mapping[str, str] = os.environ,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._environ = environ
        self._rng = rng or random.Random()
        import openai

        self._client = openai.OpenAI(
            api_key=self._current_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,
        )

    def complete(self, messages: Sequence[Mapping[str, str]]) -> ChatReply | ProposalFailure:
        """One reply to `messages`; never raises for anything the endpoint does."""
        import openai

        config = self.config
        if config.base_url is None and not self._environ.get(config.api_key_env):
            return ProposalFailure(
                "endpoint", f"no API key: set {config.api_key_env} in the environment", pause=True
            )
        notes: list[str] = []
        started = time.perf_counter()
        try:
            response = call_with_retries(
                lambda: self._send(messages), config.retry, self.describe, self._rng, notes.append
            )
            if not isinstance(response, ProposalFailure):
                response = read_completion(response)
        except ValueError as exc:  # the body is not JSON
            response = self.describe(exc)
        except openai.OpenAIError as exc:
            response = ProposalFailure("endpoint", self.describe(exc), pause=True)
        elapsed = time.perf_counter() - started
        if isinstance(response, str):
            response = ProposalFailure(
                "malformed", f"the endpoint's reply is not a chat completion: {response}"
            )
        if isinstance(response, ProposalFailure):
            return dataclasses.replace(response, transcript="\n".join(notes))
        return ChatReply(
            text=self.redact(response.text),
            finish_reason=response.finish_reason,
            refusal=self.redact(response.refusal),
            usage=config.usage(response.prompt_tokens, response.completion_tokens),
            elapsed_s=elapsed,
            notes=tuple(notes),
        )

    def served_models(self) -> list[str] | ProposalFailure:
        """The ids `GET /models` lists (empty for a server without the route), or why it failed.

        One request, no retries: this is the launch-time probe of an endpoint.
        """
        import openai

        try:
            raw = self._client.models.with_raw_response.list()
            data = json.loads(raw.content)
        except openai.NotFoundError:
            return []
        except (
            openai.APIConnectionError,  # timeouts included
            openai.AuthenticationError,
            openai.PermissionDeniedError,
        ) as exc:
            return ProposalFailure("endpoint", self.describe(exc))
        except (openai.OpenAIError, ValueError):
            return []  # it answered: reachable, but lists nothing this client can read
        listed = data.get("data") if isinstance(data, dict) else None
        return [str(m["id"]) for m in listed or [] if isinstance(m, dict) and "id" in m]

    def describe(self, exc: BaseException) -> str:
        """A one-line account of an error, with the API key scrubbed out."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            text = f"no reply within {self.config.timeout_s:g} s"
        elif isinstance(exc, openai.APIStatusError):
            text = f"HTTP {exc.status_code}: {exc.message}"
        elif isinstance(exc, openai.APIConnectionError):
            text = f"{exc.message} ({exc.__cause__ or 'no detail'})"
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self.redact(" ".join(text.split())[:500])

    def redact(self, text: str) -> str:
        """`text` without the current key or anything shaped like a key."""
        key = self._environ.get(self.config.api_key_env, "")
        if key:
            text = text.replace(key, "[redacted]")
        return scrub_key_like(text)

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()

    def _current_key(self) -> str:
        return self._environ.get(self.config.api_key_env) or _NO_KEY

    def _arguments(self, messages: Sequence[Mapping[str, str]]) -> dict[str, object]:
        arguments: dict[str, object] = {
            "model": self.config.model,
            "messages": [dict(message) for message in messages],
            self.config.token_limit_field: self.config.max_tokens,
        }
        if self.config.temperature is not None:
            arguments["temperature"] = self.config.temperature
        return arguments

    def _send(self, messages: Sequence[Mapping[str, str]]) -> object:
        """The reply's JSON; read by hand so a sloppy server's reply is checked, not trusted."""
        raw = self._client.chat.completions.with_raw_response.create(**self._arguments(messages))
        return json.loads(raw.content)


@dataclass(frozen=True)
class Completion:
    """The parts of a chat completion this module uses."""

    text: str
    finish_reason: str
    refusal: str
    prompt_tokens: int
    completion_tokens: int


def read_completion(data: object) -> Completion | str:
    """The first choice and the usage of a chat-completion JSON, or what is wrong with it."""
    if not isinstance(data, dict):
        return "not a JSON object"
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "it has no choices"
    message = choices[0].get("message")
    if not isinstance(message, dict):
        return "its first choice has no message"
    text, refusal = message.get("content") or "", message.get("refusal") or ""
    if isinstance(text, list):  # content parts, as some servers send them
        text = "".join(
            p["text"] for p in text if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    if not isinstance(text, str) or not isinstance(refusal, str):
        return "its message content is not text"
    finish = choices[0].get("finish_reason")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text,
        finish if isinstance(finish, str) else "",
        refusal,
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
