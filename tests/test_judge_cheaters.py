"""The judge against candidates that break, cheat or attack it: each gets a clear verdict."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from qrsup.kernels.judge.runner import Timeouts
from qrsup.kernels.judge.sandbox import IsolationSettings
from qrsup.kernels.judge.triton_cache import per_source
from qrsup.kernels.suites import Spec, Suite

from tests.conftest import CANDIDATES, CHEATERS, judge, processes_whose_command_has

pytestmark = pytest.mark.usefixtures("no_leftover_processes")


def test_honest_candidate_passes_tests_and_benchmarks():
    """One run of both kinds (mode "all"): a referee's start costs more than the specs."""
    report = judge(CANDIDATES / "blocked_wy.py", mode="all")
    assert report.verdict == "pass", report.reason
    assert [(s["kind"], s["status"]) for s in report.specs] == [
        ("test", "pass"),
        ("test", "pass"),
        ("benchmark", "pass"),
    ]
    spec = report.specs[-1]
    assert spec["stats"]["runs"] >= 3 and spec["stats"]["mean_ns"] > 0
    assert spec["checks"] >= 2  # the warm-up and the last repetition, at least
    assert report.geomean_ns == pytest.approx(spec["stats"]["mean_ns"])


def test_candidate_that_raises_is_an_error_with_its_traceback():
    report = judge(CHEATERS / "raises.py")
    assert report.verdict == "error"
    first_line, trace = report.specs[0]["reason"].split("\n", 1)
    # The first line is what logs and the leaderboard show: it names the exception.
    assert first_line == (
        "custom_kernel raised RuntimeError: deliberate failure inside the candidate:"
    )
    assert trace.startswith("Traceback (most recent call last):")


def test_candidate_that_hangs_times_out_and_leaves_no_process():
    timeouts = Timeouts(prepare=30, load=60, first_call=3, call=3, inspect=30, total=120)
    report = judge(CHEATERS / "hangs.py", timeouts=timeouts)
    assert report.verdict == "timeout"
    assert "no answer within 3 s" in report.reason
    mark = re.search(r"ESCAPEE_MARK=(\d+)", report.candidate_output).group(1)
    assert processes_whose_command_has(mark) == []
    assert report.specs[1]["status"] == "timeout"
    assert "not run" in report.specs[1]["reason"]


def test_candidate_that_exits_is_a_crash_with_its_status():
    report = judge(CHEATERS / "exits.py")
    assert report.verdict == "crash"
    assert "exited with status 3" in report.reason


def test_candidate_that_segfaults_is_a_crash_naming_the_signal():
    report = judge(CHEATERS / "segfaults.py")
    assert report.verdict == "crash"
    assert "SIGSEGV" in report.reason


def test_candidate_that_allocates_without_bound_hits_the_memory_limit():
    report = judge(CHEATERS / "allocates.py", memory_limit_bytes=3 * 2**30)
    assert report.verdict == "memory", report.reason


def test_candidate_that_writes_to_its_input_fails_the_mutation_rule():
    report = judge(CHEATERS / "mutates_input.py")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] == "mutation"


def test_candidate_that_returns_its_input_as_h_fails_the_alias_rule():
    report = judge(CHEATERS / "returns_input.py")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] == "alias"
    assert "shares memory with input" in report.specs[0]["reason"]


def test_candidate_that_returns_the_same_output_twice_fails_the_alias_rule():
    report = judge(CHEATERS / "same_output_twice.py", mode="bench")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] == "alias"


def test_content_cache_never_hits_because_every_repetition_has_fresh_inputs():
    report = judge(CHEATERS / "caches_by_content.py", mode="bench")
    assert report.verdict == "pass", report.reason
    hits = [int(h) for h in re.findall(r"CACHE_HITS=(\d+)", report.candidate_output)]
    assert hits and max(hits) == 0


def test_address_cache_replaying_stale_answers_fails_the_gates():
    report = judge(CHEATERS / "caches_by_address.py", mode="bench", recheck="all")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] == "factor"


def test_fake_report_on_stdout_and_sprayed_frames_change_nothing():
    report = judge(CHEATERS / "fake_report.py")
    assert report.verdict == "fail"
    assert report.geomean_ns is None
    assert '"verdict": "pass"' in report.candidate_output  # kept for the human, not believed


def test_forged_reply_in_the_harness_pipe_is_detected():
    report = judge(CHEATERS / "forges_reply.py", mode="bench")
    assert report.verdict == "fail"
    assert "out of sequence" in report.reason


def test_patched_harness_clock_fails_before_anything_is_timed():
    """The harness's captured clock is one of its own tools: rebinding it is seen at the first
    preparation. (A patch deeper than the harness's names is left to the referee's clock, whose
    accounting tests/test_integrity.py checks.)"""
    report = judge(CHEATERS / "patches_timer.py", mode="bench")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] == "tamper"
    assert "qrsup.kernels.judge.contestant._perf_counter_ns" in report.reason


def test_work_on_a_background_thread_does_not_pass():
    report = judge(CHEATERS / "background_thread.py", mode="bench")
    assert report.verdict == "fail"
    assert report.specs[0]["gate"] in ("integrity", "factor", "finite")


def test_candidate_cannot_reach_the_referee_to_kill_it():
    report = judge(CHEATERS / "kills_referee.py")
    assert report.verdict == "fail"
    assert "custom_kernel returned NoneType" in report.reason


def test_killed_referee_without_isolation_is_a_crash_not_a_dead_caller():
    report = judge(CHEATERS / "kills_referee.py", isolation=IsolationSettings(mode="off"))
    assert report.verdict == "crash"
    assert "judge process died" in report.reason


def test_candidate_sees_no_api_keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-qrsup-test-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-qrsup-test-secret")
    report = judge(CHEATERS / "reads_secrets.py")
    assert report.verdict == "pass", report.reason
    assert "SECRETS_FOUND={}" in report.candidate_output
    assert "qrsup-test-secret" not in report.candidate_output


@pytest.mark.parametrize(
    ("cheater", "seen"),
    [
        (
            "works_during_input_preparation.py",
            "replaced qrsup.kernels.judge.contestant.generate_input",
        ),
        ("profiles_the_input_generator.py", "installed a profile function (sys.setprofile)"),
        ("edits_the_generators_table.py", "replaced qrsup.kernels.generators.BUILDERS"),
        ("patches_the_spec_class.py", "replaced qrsup.kernels.suites.Spec.reseeded"),
        ("wraps_a_builtin.py", "replaced builtins.max"),
        ("signals_during_preparation.py", "installed a signal handler"),
    ],
)
def test_a_candidate_that_reaches_into_input_preparation_fails_for_it(cheater, seen):
    """Work done while the harness makes the inputs escapes the timed window, and on a small
    spec the referee's clock over the cycle cannot tell it from noise: the harness refuses to
    prepare inputs once its tools are not its own."""
    report = judge(CHEATERS / cheater, "bench")
    assert report.verdict == "fail", report.reason
    spec = report.specs[0]
    assert spec["gate"] == "tamper", spec
    assert "reached into the judge's harness, seen as it prepared inputs" in report.reason
    assert seen in report.reason


@pytest.mark.parametrize(
    "cheater", ["collects_during_preparation.py", "reads_the_seeds_as_its_outputs_go.py"]
)
def test_a_candidate_run_by_the_collector_or_a_finalizer_finds_no_new_input_to_factor(cheater):
    """Neither installs anything a look could see: one runs when the cyclic collector does, the
    other when the harness lets the outputs it returned go. Both factored each new input outside
    every timed window, and said so in their output. Now the collector is off wherever inputs or
    seeds are in reach, and outputs go before the next seeds arrive: each call does its own work."""
    report = judge(CHEATERS / cheater, "bench")
    assert "ANSWER FOUND READY" not in report.candidate_output, report.candidate_output[:300]
    assert report.verdict == "pass", report.reason


def test_a_thread_that_factors_the_prepared_inputs_before_the_window_fails_integrity():
    """A poller kept the harness object it found while being imported and factored each
    preparation's inputs before `go` arrived: 20×32 passed at 2.4 times torch.geqrf's speed on the
    CPU, with every answer ready. The harness now reads its threads' CPU time outside the window
    (a thread hidden from the threading module: tests/test_candidate_threads.py)."""
    report = judge(CHEATERS / "reads_the_inputs_from_a_thread.py", "bench")
    assert report.verdict == "fail", report.reason
    assert report.specs[0]["gate"] == "integrity"
    assert "own threads ran while the harness held its inputs" in report.reason
    assert "ms of CPU read" in report.reason


def test_an_audit_hook_is_refused_and_reported_before_it_runs_in_a_preparation():
    """The harness raises audited events while it prepares inputs (its watch reads `__code__`),
    and a hook runs on each with the preparing frame on the stack: one that made and factored
    the inputs from the seeds there answered the smoke suite's mixed specs at a hundredth of
    torch.geqrf's time, failing only the CPU accounting. Hooks cannot be listed or removed; the
    contestant's own guard now refuses them as they are added."""
    report = judge(CHEATERS / "audits_the_harness.py", "bench")
    assert report.verdict == "fail", report.reason
    assert report.specs[0]["gate"] == "tamper"
    assert "installed an audit hook, which the contestant refused" in report.reason
    assert "ANSWER FOUND READY" not in report.candidate_output


def test_a_candidate_that_rebinds_the_reply_encoder_does_not_change_its_claimed_time():
    """`json.dumps` rebound and `JSONEncoder.encode` patched, to divide each claimed time by
    ten: the harness went through both each time it encoded a reply, and the referee's window
    bounds a claim only to within its allowance. Now it encodes through a C encoder it made at
    import."""
    report = judge(CHEATERS / "rewrites_its_replies.py", "bench")
    assert "REPLY REWRITTEN" not in report.candidate_output, report.candidate_output[:300]
    assert report.verdict == "pass", report.reason


@pytest.mark.parametrize(
    ("cheater", "when", "seen"),
    [
        (
            "patches_the_clock_class.py",
            "prepared inputs",
            "replaced qrsup.kernels.judge.contestant.DeviceClock.time_ns",
        ),
        (
            "swaps_the_clock_code.py",
            "prepared inputs",
            "replaced qrsup.kernels.judge.contestant.DeviceClock.time_ns",
        ),
        ("swaps_the_clock_class.py", "prepared inputs", "the clock's __class__"),
        (
            "overrides_an_operator_the_harness_runs.py",
            "prepared inputs",
            "the kernel of aten::clone (CPU)",
        ),
        (
            "overrides_an_operator_the_list_leaves_out.py",
            "was audited after the spec was timed",
            "the kernel of aten::empty_strided (CPU)",
        ),
        (
            "registers_a_kernel_between_looks.py",
            "prepared inputs",
            "the kernel of aten::clone (CPU)",
        ),
        ("replaces_the_harness_clock.py", "inspected outputs", "the contestant's clock"),
        ("hides_the_export.py", "prepared inputs", "the contestant's _export"),
    ],
)
def test_a_candidate_that_patches_the_harness_clock_or_export_fails_for_it(cheater, when, seen):
    """The clock and the export are reached through a class or the contestant object, not a
    module's names, and can be changed behind an object that stays the same (its code, its
    class): each is watched, at every preparation and before outputs are inspected."""
    report = judge(CHEATERS / cheater, "bench")
    assert report.verdict == "fail", report.reason
    assert report.specs[0]["gate"] == "tamper", report.specs[0]
    assert f"reached into the judge's harness, seen as it {when}: " in report.reason
    assert seen in report.reason


def test_file_with_the_banned_word_is_rejected_before_running():
    report = judge(CHEATERS / "mentions_the_banned_word.py")
    assert report.verdict == "rejected"
    assert "forbidden word 'stream'" in report.reason


@pytest.mark.gpu
def test_work_moved_into_input_preparation_fails_integrity():
    """The candidate hooks the harness's input generator and factors each input as it is made:
    its timed window is empty, and only the referee's clock over the whole cycle sees the work.
    (Work within the cycle's allowance, a part of a large kernel or a small spec's whole kernel,
    is not caught: the README says so.)"""
    cheater = CHEATERS / "works_during_input_preparation.py"
    suite = Suite("prepared", tests=(), benchmarks=(Spec(8, 2048, 1, "dense", 5),))
    report = judge(cheater, "bench", device="cuda", rule="quick", suite=suite)
    spec = report.specs[0]
    seen = {key: spec.get(key) for key in ("stats", "integrity")}
    assert report.verdict == "fail", f"{report.reason} {seen}"
    assert spec["gate"] == "tamper"


@pytest.mark.gpu
def test_work_hidden_on_a_side_queue_fails_integrity_within_seconds_under_the_contest_rule(
    tmp_path: Path,
):
    """Without the early look at integrity this ran each spec to the rule's 120 s cap. (The
    benchmark phase is timed, its first call included. Its kernels are kept per source as
    `qrsup bench` keeps them, and the new cache gets the shipped kernels it hides compiled in
    before the run: without, its first call compiled them one by one, 10 to 19 s on an H200.)"""
    cheater = CHEATERS / "hides_work_on_a_side_queue.py"
    suite = Suite("hidden", tests=(), benchmarks=(Spec(8, 512, 1, "dense", 5),))
    cache = per_source(tmp_path)(cheater)
    report = judge(cheater, "bench", device="cuda", rule="contest", suite=suite, triton_cache=cache)
    spec = report.specs[0]
    seen = {key: spec.get(key) for key in ("stats", "referee_mean_ns", "integrity")}
    assert report.verdict == "fail", f"{report.reason} {seen}"
    attempts = {key: spec["integrity"].get(key) for key in ("clock", "first_attempt")}
    assert report.seeded.startswith("precompiled"), report.seeded
    assert report.phases_s["benchmarks"] < 30, (report.phases_s, attempts)
    assert report.specs[0]["gate"] == "integrity"


@pytest.mark.parametrize(
    ("cheater", "seen"),
    [
        ("defers_work_to_the_export.py", "H is a torch.Tensor subclass (_Deferred)"),
        ("returns_a_pair_that_factors_when_read.py", "custom_kernel returned _Later"),
    ],
)
def test_outputs_that_run_code_when_the_harness_reads_them_are_refused(cheater, seen):
    """A subclass's hooks run the candidate's code when the harness exports its outputs, after
    the window, for the repetitions the referee will check: the timed call only allocates and
    every checked answer is right. Before outputs had to be plain tuples and tensors, the
    tensor subclass passed the smoke suite at 0.025 ms against torch.geqrf's 1.6. (Wrapping the
    export itself is seen by the harness watch: hides_the_export.py.)"""
    report = judge(CHEATERS / cheater, "bench")
    assert report.verdict == "fail", report.reason
    spec = report.specs[0]
    assert spec["gate"] == "type", spec
    assert seen in report.reason
