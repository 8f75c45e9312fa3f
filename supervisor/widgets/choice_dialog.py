"""A modal question with a few answers, each a button and a key; escape answers None."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


@dataclass(frozen=True)
class Choice:
    """One answer: the key that picks it, its button label, and the value the dialog returns."""

    key: str
    label: str
    value: str
    variant: str = "default"


class ChoiceDialog(ModalScreen[str | None]):
    """Used to confirm a kill or a promotion, and to ask what quitting does to the agents;
    `details` (a promotion's evidence and diff) follow the question, and the dialog scrolls
    between its title and its buttons."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(
        self,
        title: str,
        question: str,
        choices: Sequence[Choice],
        focus: int = 0,
        details: Content | None = None,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.question = question
        self.choices = tuple(choices)
        self.focus_index = focus
        self.details = details

    def compose(self) -> ComposeResult:
        classes = "dialog -wide-dialog" if self.details else "dialog"
        with VerticalScroll(classes=classes, can_focus=False):  # the buttons' keys scroll it
            yield Label(self.title_text, classes="dialog-title")
            yield Static(Text(self.question), classes="dialog-body")
            if self.details is not None:
                yield Static(self.details, classes="dialog-details")
            with Horizontal(classes="dialog-buttons"):
                for index, choice in enumerate(self.choices):
                    yield Button(
                        f"{choice.label} ({choice.key})",
                        variant=choice.variant,  # type: ignore[arg-type]
                        id=f"choice-{index}",
                    )

    def on_mount(self) -> None:
        self.query_one(f"#choice-{self.focus_index}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        index = int(str(event.button.id).removeprefix("choice-"))
        self.dismiss(self.choices[index].value)

    def on_key(self, event: events.Key) -> None:
        for choice in self.choices:
            if event.key == choice.key:
                event.stop()
                self.dismiss(choice.value)
                return

    def action_cancel(self) -> None:
        self.dismiss(None)
