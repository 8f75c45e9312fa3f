"""A modal one-line text entry: steering text, a goal, a side question."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class TextPrompt(ModalScreen[str | None]):
    """Enter sends the text; escape (or empty text) sends nothing."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, prompt: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.prompt = prompt
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog", can_focus=False):
            yield Label(self.title_text, classes="dialog-title")
            yield Static(Text(self.prompt), classes="dialog-body")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Send (enter)", variant="primary", id="send")
                yield Button("Cancel (esc)", id="cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._send()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "send":
            self._send()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def _send(self) -> None:
        text = self.query_one(Input).value.strip()
        self.dismiss(text or None)
