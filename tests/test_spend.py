"""Cost budgets as people write them, spend summed from an agent's records, and the usage that
coding-agent CLIs print."""

from __future__ import annotations

import pytest
from qrsup.agents.proposal import Usage
from qrsup.agents.proposers.printed_usage import printed_usage
from qrsup.agents.records import append_event
from qrsup.agents.spend import CostBudget, Spend, parse_cost_budget, recorded_spend
from qrsup.agents.store import Store
from qrsup.kernels.schema import Decision, Iteration, Verdict


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("$5", CostBudget(5.0, 0)),
        ("2.5usd", CostBudget(2.5, 0)),
        ("200k tokens", CostBudget(0.0, 200_000)),
        ("2M tok", CostBudget(0.0, 2_000_000)),
        ("$10, 500k tokens", CostBudget(10.0, 500_000)),
        ("", CostBudget()),
        ("none", CostBudget()),
    ],
)
def test_a_budget_is_dollars_tokens_or_both(text, budget):
    assert parse_cost_budget(text) == budget
    assert parse_cost_budget(budget.text()) == budget  # what is written is read back


@pytest.mark.parametrize("text", ["5", "five dollars", "$5k", "200 k"])
def test_an_ambiguous_budget_is_refused_with_the_forms_that_work(text):
    with pytest.raises(ValueError, match=r"dollars \(\$5, 5usd\) or tokens"):
        parse_cost_budget(text)


def test_the_budget_is_reached_by_whichever_limit_comes_first():
    budget = CostBudget(usd=1.0, tokens=10_000)
    assert budget.exceeded(Spend(0.99, 9_999)) == ""
    assert budget.exceeded(Spend(1.0, 0)) == "$1.00 of its $1.00 budget spent"
    assert budget.exceeded(Spend(0.2, 12_000)) == "12.0k of its 10.0k tokens spent"
    assert CostBudget().exceeded(Spend(1e6, 10**9)) == ""


def test_spend_is_summed_from_the_iterations_and_the_advisor(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    usage = {"prompt_tokens": 1000, "completion_tokens": 200, "cost_usd": 0.5}
    for agent, iteration in (("a1", 1), ("a1", 2), ("a2", 1)):
        record = Iteration(agent, iteration, Verdict.PROPOSAL, Decision.REJECTED, usage=usage)
        store.record_iteration(record)
    events = tmp_path / "events.jsonl"
    append_event(events, {"event": "advisor", "prompt_tokens": 300, "cost_usd": 0.25})
    append_event(events, {"event": "steering", "prompt_tokens": 999})
    assert recorded_spend(store, events, "a1") == Spend(1.25, 2_700)
    store.close()


@pytest.mark.parametrize(
    ("output", "usage"),
    [
        (  # Claude Code, --output-format json: the last result line holds the totals
            'working…\n{"type":"result","total_cost_usd":0.0421,"usage":{"input_tokens":1200,'
            '"cache_read_input_tokens":300,"output_tokens":450}}\n',
            Usage(1500, 450, 0.0421),
        ),
        (  # Codex, exec --json: one usage per turn, summed
            '{"type":"turn.completed","usage":{"input_tokens":100,"output_tokens":10}}\n'
            '{"type":"turn.completed","usage":{"input_tokens":200,"output_tokens":20}}\n',
            Usage(300, 30, 0.0),
        ),
        (  # Aider
            "Tokens: 12k sent, 1.2k received. Cost: $0.02 message, $0.02 session.\n"
            "Tokens: 3k sent, 500 received. Cost: $0.01 message, $0.03 session.\n",
            Usage(15_000, 1_700, 0.03),
        ),
        ("[2025-01-01] tokens used: 12,345\n", Usage(12_345, 0, 0.0)),  # Codex, plain
        ("done.\nTotal cost: $1.25\n", Usage(0, 0, 1.25)),
        ("edited candidate.py\n", Usage()),
    ],
)
def test_usage_printed_by_coding_agent_clis_is_read(output, usage):
    assert printed_usage(output) == usage
