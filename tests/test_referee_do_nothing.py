"""A do-nothing cycle runs the harness's own kernel, so once the candidate is loaded only what it
left in the process can break one (memory it holds, a thread that wrote the inputs). A retry
runs such cycles beside the candidate's; one that fails ends the run as a failure that says so,
never as a spec passed without figures."""

from __future__ import annotations

import pytest
from qrsup.kernels.judge.contestant_process import ContestantFailure, Exchange
from qrsup.kernels.judge.integrity import Cycle
from qrsup.kernels.judge.referee import Referee
from qrsup.kernels.suites import Spec

SPEC = Spec(batch=20, n=32, cond=1, case="dense", seed=1)
MUTATED = {"index": 0, "gate": "mutation", "reason": "custom_kernel wrote to its input (call 0)"}


class ScriptedContestant:
    """Answers each exchange with the reply scripted for its op, and reads as an idle process."""

    def __init__(self, replies: dict[str, dict]) -> None:
        self.replies = {"go": {"ok": True, "elapsed_ns": 1_000}} | replies

    def ask(self, message: dict, timeout_s: float, phase: str) -> Exchange:
        return Exchange(self.replies.get(message["op"], {"ok": True}), 1_000_000)

    def cpu_time_ns(self) -> int:
        return 0

    def thread_times_ns(self) -> tuple[int, int]:
        return 0, 0

    def cpu_num(self) -> int:
        return 0


def _do_nothing_cycle(replies: dict[str, dict]) -> Cycle:
    config = {"device": "cpu", "rule": "quick", "recheck": "sampled"}
    config["timeouts"] = {"prepare": 5.0, "call": 5.0, "first_call": 5.0, "inspect": 5.0}
    contestant = ScriptedContestant(replies)
    referee = Referee(config, reporter=None, contestant=contestant, relaunch=None)  # type: ignore[arg-type]
    return referee._cycle(SPEC, [1, 2], lambda _: False, calibrate=True)


def test_a_do_nothing_cycle_out_of_memory_is_a_memory_failure_that_says_whose_cycle():
    go = {"ok": False, "kind": "memory", "error": "CUDA out of memory"}
    with pytest.raises(ContestantFailure) as failed:
        _do_nothing_cycle({"go": go})
    assert failed.value.kind == "memory"
    assert failed.value.reason == "the harness's do-nothing cycle raised CUDA out of memory"


def test_a_do_nothing_cycle_whose_inputs_were_written_fails_the_run():
    with pytest.raises(ContestantFailure) as failed:
        _do_nothing_cycle({"inspect": {"ok": True, "problems": [MUTATED]}})
    assert failed.value.kind == "error"
    assert failed.value.reason == (
        "the harness's do-nothing cycle broke a rule: custom_kernel wrote to its input (call 0)"
    )


def test_a_clean_do_nothing_cycle_is_timed():
    assert _do_nothing_cycle({}).claimed_ns == 1_000
