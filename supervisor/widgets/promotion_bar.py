"""The progress of a promotion in flight: full-suite revalidation, spec by spec, then the commit."""

from __future__ import annotations

from qrsup.kernels.schema import ProgressUpdate
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class PromotionBar(Horizontal):
    """Hidden until a promotion starts; the worker's progress frames move it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.candidate_id = ""

    def compose(self) -> ComposeResult:
        yield Label("", id="promotion-label")
        yield ProgressBar(total=None, show_eta=False, id="promotion-progress")

    def begin(self, candidate_id: str) -> None:
        self.candidate_id = candidate_id
        self.query_one(ProgressBar).update(total=None, progress=0)
        self._label(f"promoting {candidate_id}: starting the judge")
        self.add_class("-active")

    def advance(self, update: ProgressUpdate) -> None:
        """One step of the revalidation's judge run."""
        if update.done is not None:
            self.query_one(ProgressBar).update(total=update.total, progress=update.done)
        self._label(f"promoting {self.candidate_id}: revalidating, {update.describe()}")

    def end(self) -> None:
        self.remove_class("-active")

    def _label(self, text: str) -> None:
        self.query_one("#promotion-label", Label).update(Text(text))
