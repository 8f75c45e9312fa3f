"""The launch-time check of a model endpoint: one `GET /models` with a short timeout.

An agent whose endpoint is down, refuses the key or does not serve its model would only crash or
pause once started; asked here, the person gets one line before anything starts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from qrsup.agents.proposal import ProposalFailure
from qrsup.agents.proposers.chat import ChatClient, ModelConfig

PROBE_TIMEOUT_S = 3.0
SHOWN_MODELS = 8


def probe_endpoint(
    config: ModelConfig, environ: Mapping[str, str] = os.environ, timeout_s: float = PROBE_TIMEOUT_S
) -> str:
    """ "" when the endpoint answers and serves the model (and its fallback), else why not."""
    where = config.base_url or "api.openai.com"
    if config.base_url is None and not environ.get(config.api_key_env):
        return f"no API key for {where}: set {config.api_key_env} in the environment"
    client = ChatClient(dataclasses.replace(config, timeout_s=timeout_s), environ)
    try:
        served = client.served_models()
    finally:
        client.close()
    if isinstance(served, ProposalFailure):
        return f"the model endpoint {where} does not answer: {served.reason}"
    wanted = [config.model, *([config.fallback_model] if config.fallback_model else [])]
    missing = [m for m in wanted if served and m not in served]
    if missing:
        listed = ", ".join(served[:SHOWN_MODELS]) + (" …" if len(served) > SHOWN_MODELS else "")
        return f"{where} serves no model {missing[0]!r} (it serves: {listed})"
    return ""
