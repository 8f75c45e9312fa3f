"""Proposal contexts for proposer tests: a small parent candidate and a history of outcomes."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from qrsup.agents.proposal import OutcomeSummary, ParentCandidate, ProposalContext

PARENT_SOURCE = '''"""Candidate: plain-PyTorch blocked compact-WY QR."""

import torch

from qrsup.kernels.blocked_wy import geqrf_blocked

PANEL_WIDTH = 32


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return geqrf_blocked(a, panel_width=PANEL_WIDTH)
'''

SPEC_LABELS = ("20x32 dense c1", "40x176 dense c1", "640x512 dense c2", "2x4096 dense c1")


def parent(source: str = PARENT_SOURCE) -> ParentCandidate:
    """The parent every test edits."""
    return ParentCandidate(
        candidate_id="c0ffee",
        source=source,
        hypothesis="blocked WY with 32-column panels",
        family="blocked-wy",
        geomean_ns=2.5e6,
        spec_means_ns={0: 11_200.0, 1: 96_000.0, 2: 2_600_000.0, 3: 4_100_000.0},
    )


def outcome(
    iteration: int, verdict: str = "fail", geomean_ns: float | None = None
) -> OutcomeSummary:
    """One past iteration with a distinct hypothesis."""
    return OutcomeSummary(
        iteration=iteration,
        candidate_id=f"c{iteration:05d}",
        hypothesis=f"idea {iteration}: widen the panel to {32 + iteration} columns and fuse T",
        verdict=verdict,
        geomean_ns=geomean_ns,
        reason="" if verdict == "pass" else "factor residual 31.2 of 20 on spec 2 (rowscale)",
        spec_means_ns={0: 11_000.0 + iteration, 1: 95_000.0, 2: 2_500_000.0, 3: 4_000_000.0}
        if verdict == "pass"
        else {},
    )


def history(iterations: int) -> tuple[OutcomeSummary, ...]:
    """`iterations` outcomes, every third one a pass that gets slowly faster."""
    return tuple(
        outcome(i, "pass", 3e6 - i * 1e3) if i % 3 == 0 else outcome(i)
        for i in range(1, iterations + 1)
    )


def context(work_dir: Path, **changes: object) -> ProposalContext:
    """A context at iteration 7 of agent `ada` in the exploit role."""
    base = ProposalContext(
        agent="ada",
        role="exploit",
        goal="beat 2.0 ms geomean without cuSOLVER",
        iteration=7,
        parent=parent(),
        incumbent=parent(),
        memory=history(6),
        steering=("try panel width 64",),
        advisor_ideas=("[playbook:cuda-graphs] capture the launch sequence",),
        profile_summary="panel kernel 57% of CUDA time at n=512",
        spec_labels=SPEC_LABELS,
        work_dir=work_dir,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
