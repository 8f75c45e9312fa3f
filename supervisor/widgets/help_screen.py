"""The keys, on `?`: every action the Footer shows, and the ones it has no room for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static


def keys_table(keys: Sequence[tuple[str, str]]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for key, description in keys:
        table.add_row(key, description)
    return table


class HelpScreen(ModalScreen[None]):
    """Closed by escape, `?` or `q`."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("question_mark", "close", "Close", show=False),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, keys: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = tuple(keys)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="dialog help"):  # focused: the arrows scroll it
            yield Label("qrsup keys", classes="dialog-title")
            yield Static(keys_table(self.keys))

    def action_close(self) -> None:
        self.dismiss(None)
