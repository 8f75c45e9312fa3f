"""A session's `model` table becomes a ModelConfig, and every mistake in it is named."""

from __future__ import annotations

import pytest
from qrsup.agents.proposers import ModelConfig, RetryPolicy


def test_table_with_prices_and_retry_becomes_a_config():
    config = ModelConfig.from_mapping(
        {
            "model": "qwen-coder",
            "base_url": "http://127.0.0.1:8000/v1",
            "temperature": 0.2,
            "max_tokens": 4096,
            "timeout_s": 120,
            "usd_per_million_prompt_tokens": 1.25,
            "retry": {"attempts": 3, "base_delay_s": 0.5},
        }
    )
    assert config.retry == RetryPolicy(attempts=3, base_delay_s=0.5)
    assert config.usage(2_000_000, 0).cost_usd == pytest.approx(2.5)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"model": "m", "api_key": "sk-x"}, "keys never go in session files"),
        ({"model": "m", "temprature": 0.1}, "unknown setting.*temprature"),
        ({"base_url": "http://x"}, "'model'.*required"),
        ({"model": "m", "max_tokens": "lots"}, "max_tokens = 'lots' should be int"),
        ({"model": "m", "max_tokens": True}, "max_tokens = True should be int"),
        ({"model": "m", "retry": {"tries": 3}}, "bad retry setting.*tries"),
        ({"model": "m", "token_limit_field": "limit"}, "token_limit_field must be one of"),
    ],
)
def test_mistakes_in_the_table_are_named(table, message):
    with pytest.raises(ValueError, match=message):
        ModelConfig.from_mapping(table)
