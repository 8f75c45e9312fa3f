"""Store, records, inbox and session files: exactly-once consumption and append-only records."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest
from qrsup.agents import beam, inbox
from qrsup.agents.recorder import IterationDraft, Recorder
from qrsup.agents.records import append_event, read_events, shorten
from qrsup.agents.session import AgentSpec, RunPaths, SessionConfig, load_session, save_session
from qrsup.agents.store import Store
from qrsup.kernels.schema import (
    ROLE_NAMES,
    ROLES,
    Candidate,
    Comparison,
    Decision,
    Iteration,
    Verdict,
)
from qrsup.prompts.loader import PROMPTS_DIR


def test_steering_is_consumed_exactly_once(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert store.consume_steering("m1", "a1", "steer", "go", 3)
    assert not store.consume_steering("m1", "a1", "steer", "go", 4)
    assert [r.id for r in store.steering("a1")] == ["m1"]


def test_inbox_messages_are_archived_not_deleted(tmp_path):
    box = tmp_path / "inbox"
    sent = inbox.send(box, "steer", "hello")
    ((path, message),) = inbox.pending(box)
    assert message == sent
    inbox.archive(path)
    assert inbox.pending(box) == []
    assert (box / "consumed" / path.name).exists()


def _append_many(path: str, tag: str) -> None:
    for i in range(200):
        append_event(Path(path), {"event": "x", "tag": tag, "i": i, "pad": "y" * 500})


def test_concurrent_appends_never_tear_a_line(tmp_path):
    path = tmp_path / "events.jsonl"
    workers = [multiprocessing.Process(target=_append_many, args=(str(path), t)) for t in "ab"]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 400
    for line in lines:
        json.loads(line)


def test_a_torn_last_line_is_skipped_by_readers(tmp_path):
    path = tmp_path / "events.jsonl"
    append_event(path, {"event": "ok"})
    with path.open("a") as handle:
        handle.write('{"event": "torn"')
    assert [e["event"] for e in read_events(path)] == ["ok"]


def test_store_is_readable_while_another_connection_writes(tmp_path):
    writer = Store(tmp_path / "s.sqlite")
    reader = Store(tmp_path / "s.sqlite")
    row = Candidate(
        "c-1", "h1", "src", None, "a1", "exploit", "blocked_wy", "hyp", None, time.time()
    )
    writer.add_candidate(row)
    with writer.transaction():
        assert reader.candidate("c-1") is not None  # WAL: readers see the last commit
    assert reader.candidate_by_hash("h1").id == "c-1"


def test_session_file_round_trips(tmp_path):
    paths = RunPaths.of(tmp_path, "s")
    config = SessionConfig(
        name="s",
        workspace=tmp_path,
        advisor={"model": "big", "base_url": "http://127.0.0.1:1/v1"},
        agents=(
            AgentSpec("a1", model={"model": "m", "temperature": 0.5}),
            AgentSpec("a2", role="structural", family="recursive_wy"),
        ),
    )
    save_session(paths, config)
    assert load_session(paths) == config


def test_a_store_from_before_the_typed_layer_is_migrated_and_reads_typed(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE iterations (agent TEXT NOT NULL, iteration INTEGER NOT NULL, "
        "candidate_id TEXT, outcome TEXT NOT NULL, decision TEXT NOT NULL, hypothesis TEXT NOT "
        "NULL, reason TEXT NOT NULL, geomean_ns REAL, usage TEXT NOT NULL, created_at REAL NOT "
        "NULL, PRIMARY KEY (agent, iteration))"
    )
    old.execute(
        "INSERT INTO iterations VALUES ('a1', 1, 'c-1', 'fail', 'rejected', 'h', 'r', NULL, "
        "'{}', 1.0)"
    )
    old.commit()
    old.close()
    with Store(path) as store:
        (record,) = store.iterations("a1")
    assert record.verdict == Verdict.FAIL and record.decision == Decision.REJECTED
    assert record.spec_means_ns == {} and record.role == "" and record.comparison is None


def test_a_restored_iteration_event_is_whole(tmp_path):
    paths = RunPaths(tmp_path / "run")
    paths.ensure("a1")
    comparison = Comparison("quick", 2e6, 1e6, 0.1, 3)
    record = Iteration(
        "a1", 1, Verdict.PASS, Decision.NOT_PROMISING, "c-1", "c-0", "exploit", "wider", "slow",
        "beat incumbent by 3%", 2e6, {0: 2e6}, {"prompt_tokens": 5.0}, comparison, True,
    )  # fmt: skip
    with Store(paths.store) as store:
        store.record_iteration(record)  # a kill came before its event line was written
        Recorder(paths, store, tmp_path, "a1", "exploit").reconcile()
    (event,) = [e for e in read_events(paths.events("a1")) if e["event"] == "iteration"]
    fields = {k: v for k, v in record.to_event().items() if k != "spec_means_ns"}
    assert {k: event[k] for k in fields} == json.loads(json.dumps(fields))
    assert event["spec_means_ns"] == {"0": 2e6} and event["reconciled"] is True


def test_one_role_table_names_every_beam_rule_and_prompt():
    assert set(beam._RULES) == set(ROLE_NAMES)
    for known in ROLES:
        assert (PROMPTS_DIR / known.prompt_file).exists()
        assert Decision.beam(known.name).startswith("beam ")


def _open_store(path: Path, barrier: object) -> None:
    barrier.wait()
    Store(path).close()  # an exception here (what the agent's start died of) exits with 1


def test_agents_opening_a_fresh_store_at_once_all_get_it(tmp_path):
    """Two agents of a new session open the store together; SQLite answered one of them
    "database is locked" at once (not after its busy timeout) while the other switched the
    store's journal, and that agent died at its start (about 1 round in 4 of 4 openers here)."""
    context = multiprocessing.get_context("fork")
    for round_ in range(20):
        path = tmp_path / f"store-{round_}.sqlite"
        barrier = context.Barrier(4)
        openers = [context.Process(target=_open_store, args=(path, barrier)) for _ in range(4)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(60)
        assert [opener.exitcode for opener in openers] == [0, 0, 0, 0], f"round {round_}"


LONG_REASON = (
    "quick stage more than 2% slower: 5.083 ms against the incumbent's 3.844 ms (quick rule, "
    "0 evaluations old); the panel factorisation dominates every benchmark specification"
)


def test_shorten_cuts_at_a_word_boundary_with_an_ellipsis():
    short = shorten(LONG_REASON, 80)
    assert len(short) <= 80 and short.endswith("…")
    assert LONG_REASON.startswith(short.removesuffix("…"))
    assert LONG_REASON[len(short) - 1] == " "  # the word after the cut is left whole, not split
    assert shorten("one line\nand another", 80) == "one line"
    assert shorten("/a/very/long/path/without/any/space/at/all", 20) == "/a/very/long/path/w…"


def test_a_long_reason_is_cut_between_words_in_the_agent_log_and_log_md(tmp_path):
    paths = RunPaths(tmp_path / "run")
    paths.ensure("a1")
    reason = LONG_REASON * 3
    draft = IterationDraft(1, "wider panels", "c-1", "c-0", Verdict.PASS, reason=reason)
    draft.evaluated = True
    with Store(paths.store) as store:
        Recorder(paths, store, tmp_path, "a1", "exploit").record(draft, "beat incumbent by 3%")
    logged = paths.agent_log("a1").read_text().split("reason: ", 1)[1].strip()
    entry = (tmp_path / "log.md").read_text().split("- reason: ", 1)[1].strip()
    for cut in (logged, entry):
        assert cut.endswith("…") and reason.startswith(cut.removesuffix("…"))
        assert reason[len(cut) - 1] == " "


@pytest.mark.parametrize(("age", "said"), [(0, "0 evaluations old"), (1, "1 evaluation old")])
def test_a_comparison_says_how_old_the_incumbents_figures_are(age: int, said: str) -> None:
    described = Comparison("quick", 2e6, 1e6, 0.02, age).describe()
    assert described == f"2 ms against the incumbent's 1 ms (quick rule, {said})"


def test_a_candidates_figures_on_a_device_are_its_best_there_alone(tmp_path):
    """Relaunched on another machine, a workspace's figures from the first do not stand for
    the second; asked for no device, the best anywhere is what the board shows."""
    store = Store(tmp_path / "store.sqlite")
    source = "def custom_kernel(a):\n    return a\n"
    store.add_candidate(
        Candidate("c-1", "h1", source, None, "a1", "exploit", "fast", "", None, time.time())
    )

    def evaluation(device: str, verdict: str, geomean_ns: float | None) -> None:
        report = {"verdict": verdict, "reason": "", "geomean_ns": geomean_ns}
        report["device"] = {"type": "cuda", "name": device}
        store.add_evaluation("c-1", "a1", 1, "full", report, {0: geomean_ns or 0.0})

    evaluation("NVIDIA H200", "pass", 2e6)
    evaluation("NVIDIA H100 80GB HBM3", "pass", 3e6)
    evaluation("NVIDIA H100 80GB HBM3", "fail", None)
    evaluation("NVIDIA H100 80GB HBM3", "pass", 2.5e6)
    assert store.candidate("c-1").geomean_ns == 2e6
    assert store.candidate("c-1", "NVIDIA H200").geomean_ns == 2e6
    assert store.candidate("c-1", "NVIDIA H100 80GB HBM3").geomean_ns == 2.5e6
    elsewhere = store.candidate("c-1", "NVIDIA B200")
    assert (elsewhere.verdict, elsewhere.geomean_ns) == (None, None)  # never judged there
    assert [e.device_name for e in store.evaluations("c-1")][:2] == [
        "NVIDIA H200",
        "NVIDIA H100 80GB HBM3",
    ]
    store.close()
