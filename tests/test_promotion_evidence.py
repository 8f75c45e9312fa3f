"""Before a promotion: the diff against the incumbent, the gain with its noise band and the
correctness evidence; a revalidation slower than the incumbent commits nothing unless a person
confirms again (TUI) or forces it (`--force`)."""

from __future__ import annotations

import json
import time

import git
import pytest
from qrsup.agents.git_workspace import commit_incumbent
from qrsup.agents.incumbent import REPO_ROOT
from qrsup.agents.records import append_event, format_ms
from qrsup.agents.session import AgentSpec, RunPaths
from qrsup.agents.spaces import space_for
from qrsup.agents.store import Store
from qrsup.agents.tuner import source_hash
from qrsup.kernels.schema import Candidate, Decision, Iteration, Verdict
from qrsup.supervisor.app import SupervisorApp
from qrsup.supervisor.cli import main
from qrsup.supervisor.fleet import Fleet
from qrsup.supervisor.promotion_evidence import noise_band, read_evidence
from qrsup.supervisor.widgets.choice_dialog import ChoiceDialog
from qrsup.supervisor.widgets.leaderboard import Leaderboard

from tests.loop_helpers import make_session
from tests.tui_pilot import notices, until
from tests.tui_sessions import FrozenSampler

pytestmark = pytest.mark.timeout(300)

INCUMBENT_NS = 1_000.0  # recorded figures far faster than any CPU run
CANDIDATE_NS = 900.0
# Appended to a candidate, a wait in every call: timed beside the incumbent, it is slower.
SLOWED = """

import time as _time

_custom_kernel = custom_kernel


def custom_kernel(a):
    _time.sleep(0.02)
    return _custom_kernel(a)
"""


def report(verdict: str, geomean_ns: float, seed: int, stage: str) -> dict:
    """A judge report as the store keeps it, with the specs the evidence counts."""
    tests = [{"kind": "test", "index": i, "status": "pass", "checks": 2} for i in range(2)]
    benchmarks = [{"kind": "benchmark", "index": i, "status": "pass", "checks": 3} for i in (0, 1)]
    return {
        "verdict": verdict,
        "geomean_ns": geomean_ns,
        "reason": "",
        "seed": seed,
        "rule": "quick",
        "recheck": "sampled",
        "specs": (tests if stage == "quick" else []) + benchmarks,
    }


def promotable_session(
    tmp_path, candidate_id: str = "c-16panels", tail: str = ""
) -> tuple[RunPaths, str]:
    """A git workspace whose incumbent and one candidate (16-column panels, then `tail`) are
    recorded."""
    paths = make_session(tmp_path, (AgentSpec("a1"),))
    space = space_for("blocked_wy", REPO_ROOT)
    source = space.render(space.default_point())
    candidate = source.replace("panel_width=32", "panel_width=16") + tail
    assert candidate != source
    with git.Repo(paths.root.parents[1]) as repo:  # closed: its git helpers end with it
        sha = commit_incumbent(repo, source, "Seed the incumbent")
    store = Store(paths.store)
    rows = [("c-incumbent", source, None, "workspace"), (candidate_id, candidate, "c-inc", "a1")]
    for cid, text, parent, agent in rows:
        store.add_candidate(
            Candidate(
                cid,
                source_hash(text),
                text,
                parent,
                agent,
                "exploit",
                "blocked_wy",
                "16-column panels",
                None,
                time.time(),
            )
        )
    for cid, agent, stage, geomean_ns, seed in (
        ("c-incumbent", "bootstrap", "full", INCUMBENT_NS, 7),
        (candidate_id, "a1", "quick", CANDIDATE_NS, 11),
        (candidate_id, "a1", "full", CANDIDATE_NS, 12),
    ):
        means = {0: geomean_ns, 1: geomean_ns}
        store.add_evaluation(cid, agent, 1, stage, report("pass", geomean_ns, seed, stage), means)
    store.record_iteration(
        Iteration(
            "a1", 1, Verdict.PASS, Decision.BEAM_EXPLOIT, candidate_id,
            hypothesis="16-column panels", geomean_ns=CANDIDATE_NS,
        )
    )  # fmt: skip
    store.add_promotion("c-incumbent", sha, INCUMBENT_NS, None, {}, "seed")
    store.close()
    return paths, sha


def revalidations(paths: RunPaths) -> int:
    store = Store(paths.store)
    try:
        return sum(1 for row in store.evaluations("c-16panels") if row.stage == "revalidate")
    finally:
        store.close()


def test_the_evidence_names_the_gain_its_noise_band_the_specs_and_the_seeds(tmp_path):
    paths, _ = promotable_session(tmp_path)
    append_event(paths.events("a1"), {"event": "noise", "candidate_id": "c-other", "noise": 0.03})
    evidence = read_evidence(paths.store, [paths.events("a1")], "c-16panels", "t")
    text = evidence.text()
    assert "against the incumbent c-incumbent" in text
    assert "10.0% faster; noise band ±3.0% (the session's latest re-timing, of c-other)" in text
    assert "beyond the noise" in text
    assert "quick: pass · 2/2 test specs passed · 2/2 benchmark specs" in text
    assert "10 outputs checked (re-checks sampled) · seed 11 · rule quick" in text
    assert "full: pass" in text and "seed 12" in text
    changed = [line for line in evidence.diff.splitlines() if "panel_width=" in line]
    assert changed[0].startswith("-") and "panel_width=32" in changed[0]
    assert changed[1].startswith("+") and "panel_width=16" in changed[1]
    append_event(paths.events("a1"), {"event": "noise", "candidate_id": "c-16panels", "noise": 0.2})
    evidence = read_evidence(paths.store, [paths.events("a1")], "c-16panels", "t")
    assert "±20.0% (measured in its interleaved re-timing): within the noise" in evidence.text()


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_the_command_line_refuses_a_slower_revalidation_without_force(tmp_path, capsys):
    paths, seed_sha = promotable_session(tmp_path, tail=SLOWED)
    workspace = paths.root.parents[1]
    where = ["--workspace", str(workspace), "--session", "t"]
    assert main([*where, "promote", "c-16panels"]) == 2
    out, err = capsys.readouterr()
    assert "noise band ±2.0% (assumed: nothing re-timed yet)" in out  # the evidence came first
    assert err.count("\n") == 1 and "slower than the incumbent c-incumbent" in err
    assert ", timed beside it); not promoted" in err and "--force" in err
    repo = git.Repo(workspace)
    assert repo.head.commit.hexsha == seed_sha
    assert main([*where, "promote", "c-16panels", "--force"]) == 0
    message = repo.head.commit.message
    assert message.startswith("Promote c-16panels") and "forced: the revalidation was" in message
    assert revalidations(paths) == 2


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
def test_a_person_s_promotion_weighs_the_candidate_against_the_incumbent_timed_beside_it(
    tmp_path, capsys
):
    """The incumbent's stored figure (1 µs) is far faster than anything on this CPU: weighed
    against it, every candidate read slower. Timed beside the revalidation on its seed, the
    incumbent (blocked_wy) is far slower than torch.geqrf, which is promoted without --force,
    and the commit, the promotion's record and the incumbent's evaluations all carry that
    fresh figure."""
    source = (REPO_ROOT / "kernels" / "candidates" / "torch_geqrf.py").read_text()
    paths, _ = promotable_session(tmp_path, tail="\n" + source)
    workspace = paths.root.parents[1]
    assert main(["--workspace", str(workspace), "--session", "t", "promote", "c-16panels"]) == 0
    capsys.readouterr()
    message = git.Repo(workspace).head.commit.message
    assert "; the incumbent timed beside it)" in message and "forced" not in message
    store = Store(paths.store)
    try:
        fresh = [e for e in store.evaluations("c-incumbent") if e.agent == "human"]
        revalidation = next(e for e in store.evaluations("c-16panels") if e.stage == "revalidate")
        promotion = store.promotions()[-1]
    finally:
        store.close()
    assert len(fresh) == 1 and fresh[0].stage == "full"
    assert fresh[0].report["seed"] == revalidation.report["seed"]
    assert promotion.previous_geomean_ns == fresh[0].geomean_ns > INCUMBENT_NS
    assert f"was {format_ms(fresh[0].geomean_ns)}" in message


@pytest.mark.e2e  # a whole judge, agent or cluster run: over 8 s here
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_tui_shows_the_evidence_and_asks_again_when_the_revalidation_is_slower(
    tmp_path, anyio_backend
):
    paths, seed_sha = promotable_session(tmp_path, tail=SLOWED)
    app = SupervisorApp(Fleet(paths))
    app.main.sampler = FrozenSampler(app.main.post_fact)
    async with app.run_test(size=(110, 40)) as pilot:
        board = app.main.query_one(Leaderboard)
        await until(pilot, lambda: board.row_count == 2, 10, "the board")
        board.focus()
        board.move_cursor(row=board.get_row_index("c-16panels"))
        await pilot.press("P")
        dialog = await until(
            pilot, lambda: isinstance(app.screen, ChoiceDialog) and app.screen, 10, "the evidence"
        )
        details = dialog.details.plain
        assert "10.0% faster" in details and "test specs passed" in details
        assert "panel_width=16" in details
        await pilot.press("y")
        again = await until(
            pilot,
            lambda: (
                isinstance(app.screen, ChoiceDialog)
                and "slower" in app.screen.title_text
                and app.screen
            ),
            120,
            "the second question",
        )
        assert "slower than the incumbent c-incumbent" in again.question
        await pilot.press("y")
        await until(
            pilot, lambda: any("promoted c-16panels" in n for n in notices(app)), 60, "the commit"
        )
    repo = git.Repo(paths.root.parents[1])
    assert repo.head.commit.hexsha != seed_sha
    assert revalidations(paths) == 1  # the confirmed run was committed, not re-run


def test_a_focused_re_timing_gives_its_own_candidate_a_band_and_no_other(tmp_path):
    """Its noise is scaled to the share of specs it re-timed: right for its own suite-level
    gain, too small a band for another candidate's whole-suite comparison."""
    events = tmp_path / "events.jsonl"
    lines = [
        {"event": "noise", "time": "2026-12-01T01:00:00", "candidate_id": "c-a", "noise": 0.02},
        {"event": "noise", "time": "2026-12-01T02:00:00", "candidate_id": "c-b", "noise": 0.001,
         "share": 1 / 12},
    ]  # fmt: skip
    events.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert noise_band([events], "c-b") == (0.001, "measured in its interleaved re-timing")
    assert noise_band([events], "c-c") == (0.02, "the session's latest re-timing, of c-a")
