"""The promote key's steps as the TUI runs them: read the evidence, ask, revalidate, and when the
revalidation measures slower than the incumbent, ask again before committing that same run.

The messages carry each step's result back to the app's thread; the dialogs say what is at stake.
"""

from __future__ import annotations

from dataclasses import dataclass

from qrsup.agents.records import format_ms
from qrsup.kernels.schema import ProgressUpdate
from qrsup.supervisor.actions import ActionResult, SlowerRevalidation
from qrsup.supervisor.promotion_evidence import PromotionEvidence
from qrsup.supervisor.widgets.choice_dialog import Choice, ChoiceDialog
from qrsup.supervisor.widgets.text_screen import diff_content
from textual.content import Content
from textual.message import Message


@dataclass
class EvidenceRead(Message):
    """A promotion's evidence, read off the screen's thread, or why there is none."""

    candidate_id: str
    evidence: PromotionEvidence | ActionResult


@dataclass
class PromotionProgressed(Message):
    """The judge reported progress on a promotion's revalidation."""

    update: ProgressUpdate

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PromotionProgressed)


@dataclass
class PromotionFinished(Message):
    """A promotion committed, was refused, or measured slower and waits for a second yes."""

    candidate_id: str
    result: ActionResult


def confirm_dialog(evidence: PromotionEvidence) -> ChoiceDialog:
    """The first question, over the evidence and the diff against the incumbent."""
    c = evidence.candidate
    question = (
        f"Promote {c.id} ({format_ms(c.geomean_ns)}, by {c.agent}) to incumbent? "
        "It is revalidated on the full suite first, then committed."
    )
    lines = Content("\n").join(Content(line) for line in evidence.lines())
    diff = diff_content(evidence.diff) if evidence.diff else Content("same source as the incumbent")
    details = Content("\n\n").join([lines, diff])
    choices = [Choice("y", "Promote", "yes", "primary"), Choice("n", "Cancel", "no")]
    return ChoiceDialog("Promote", question, choices, focus=1, details=details)


def slower_dialog(candidate_id: str, result: SlowerRevalidation) -> ChoiceDialog:
    """The second question: the revalidation says it is slower; commit that run anyway?"""
    question = f"{result.message.removesuffix(' (--force commits it anyway)')}. Commit it anyway?"
    choices = [
        Choice("y", "Commit anyway", "yes", "warning"),
        Choice("n", "Keep the incumbent", "no"),
    ]
    return ChoiceDialog(f"Promote {candidate_id}: slower", question, choices, focus=1)
