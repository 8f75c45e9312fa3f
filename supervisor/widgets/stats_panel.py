"""GPU and process figures: per GPU (who leases it, who uses it), per agent process tree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from qrsup.supervisor.cluster_stats import ClusterView
from qrsup.supervisor.gpu_stats import GpuReport
from qrsup.supervisor.process_stats import TreeLoad
from qrsup.supervisor.widgets.cluster_text import cluster_lines
from qrsup.supervisor.widgets.format import size
from rich.text import Text
from textual.widgets import Static

PROCESSES_PER_LINE = 4  # each "a12 100% 1234M": four fit an 80-column terminal


def stats_text(
    gpus: GpuReport,
    loads: Mapping[str, TreeLoad],
    leases: Mapping[int, list[str]],
    cluster: ClusterView | None = None,
) -> Text:
    """A line per GPU of this host (or one saying there is none), the Ray cluster when judge runs
    go there, then every agent's CPU and RSS."""
    trees = {name: load.pids for name, load in loads.items()}
    lines = [] if gpus.gpus or cluster else [Text(gpus.note or "no GPU", style="dim")]
    for gpu in gpus.gpus:
        memory = f"{size(gpu.memory_used_bytes)}/{size(gpu.memory_total_bytes)}"
        holders = gpu_holders(leases.get(gpu.index, []), gpu.holders(trees))
        lines.append(
            Text.assemble(
                (f"gpu{gpu.index} ", "bold"),
                f"{gpu.utilization_pct:>3}% {memory} {gpu.temperature_c}°C "
                f"{gpu.power_w:.0f} W · {holders}",
            )
        )
    lines += cluster_lines(cluster) if cluster is not None else []
    processes = [
        Text.assemble((name, "bold"), f" {load.cpu_pct:.0f}% {load.rss_bytes / 2**20:.0f}M")
        for name, load in loads.items()
        if load.pids
    ]
    for start in range(0, len(processes), PROCESSES_PER_LINE):
        lines.append(Text("   ").join(processes[start : start + PROCESSES_PER_LINE]))
    if not processes:
        lines.append(Text("no agent process running", style="dim"))
    return Text("\n").join(lines)


def gpu_holders(leased: Sequence[str], using: Sequence[str]) -> str:
    """The lease says who should be on a GPU and NVML who is: a stray judge stands out."""
    if not leased and not using:
        return "free"
    if set(using) <= set(leased):
        return f"held by {', '.join(leased)}"
    return f"leased to {', '.join(leased) or 'nobody'}, used by {', '.join(using)}"


def set_height(widget: Static, lines: int) -> None:
    """Set, not auto (auto kept a stale height), and only on a change: that lays the screen out
    again, so content of the same height updates with `layout=False`."""
    if widget.styles.height is None or widget.styles.height.value != lines:
        widget.styles.height = lines


class StatsPanel(Static):
    """Refreshed by each fleet sample, every few seconds."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("sampling…"), id=id)
        self.border_title = "stats"
        self.shown = Text()

    def show(
        self,
        gpus: GpuReport,
        loads: Mapping[str, TreeLoad],
        leases: Mapping[int, list[str]],
        cluster: ClusterView | None = None,
    ) -> None:
        text = stats_text(gpus, loads, leases, cluster)
        if text != self.shown:
            self.shown = text
            set_height(self, len(text.split()))
            self.update(text, layout=False)
