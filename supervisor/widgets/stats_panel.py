"""The GPUs: load, memory, temperature, power, and which agents use each (CPU/RSS: agent list)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.widgets import Static

from supervisor.gpu_stats import GpuReport
from supervisor.process_stats import TreeLoad
from supervisor.widgets.format import size


def stats_text(gpus: GpuReport, loads: Mapping[str, TreeLoad]) -> Text:
    """One line per GPU; a machine without GPUs gets one line saying so."""
    trees = {name: load.pids for name, load in loads.items()}
    lines = [] if gpus.gpus else [Text(gpus.note or "no GPU", style="dim")]
    for gpu in gpus.gpus:
        memory = f"{size(gpu.memory_used_bytes)}/{size(gpu.memory_total_bytes)}"
        holders = ", ".join(gpu.holders(trees)) or "free"
        lines.append(
            Text.assemble(
                (f"gpu{gpu.index} ", "bold"),
                f"{gpu.utilization_pct:>3}% {memory} {gpu.temperature_c}°C "
                f"{gpu.power_w:.0f} W · {holders}",
            )
        )
    return Text("\n").join(lines)


class StatsPanel(Static):
    """Refreshed by each fleet sample, every few seconds."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("sampling…"), id=id)
        self.border_title = "stats"

    def show(self, gpus: GpuReport, loads: Mapping[str, TreeLoad]) -> None:
        self.update(stats_text(gpus, loads))
