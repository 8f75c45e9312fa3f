"""The Ray cluster in the stats panel: a header, a line per node with its judge runs, the queue."""

from __future__ import annotations

import time
from collections.abc import Mapping

from qrsup.kernels.executors.slot import JudgeSlot
from qrsup.supervisor.cluster_stats import ClusterNode, ClusterView
from qrsup.supervisor.widgets.format import age
from rich.text import Text

MAX_NODE_LINES = 4  # nodes holding our judge runs first; the rest as one line


def cluster_lines(view: ClusterView, now: float | None = None) -> list[Text]:
    """What a person asks of the cluster: which nodes, which GPUs, whose run is where, who waits."""
    now = time.time() if now is None else now
    if view.note:
        lines = [Text(view.note, style="yellow")]
    else:
        alive = [node for node in view.nodes if node.alive]
        dead = len(view.nodes) - len(alive)
        header = f"ray {view.address} · {len(alive)} node{'s' if len(alive) != 1 else ''}"
        header += f" ({dead} dead)" if dead else ""
        total_gpus = sum(node.gpus for node in alive)
        if total_gpus:
            header += f" · {view.free.get('GPU', 0):g}/{total_gpus:g} GPUs free"
        header += f" · {view.free.get('CPU', 0):g}/{sum(n.cpus for n in alive):g} CPUs free"
        lines = [Text(header, style="bold")]
        ours = {slot.node_id for slot in view.slots.values() if slot.state == "running"}
        alive.sort(key=lambda node: (node.node_id not in ours, node.node_id))
        lines += [_node_line(node, view.slots) for node in alive[:MAX_NODE_LINES]]
        if len(alive) > MAX_NODE_LINES:
            rest = alive[MAX_NODE_LINES:]
            gpus = sum(node.gpus for node in rest)
            lines.append(Text(f"  … {len(rest)} more nodes, {gpus:g} GPUs", style="dim"))
    queued = _waiting(view.slots, "queued", now)
    if queued:
        lines.append(Text.assemble(("queue ", "bold"), queued))
    stranded = _waiting(view.slots, "waiting", now)
    if stranded:
        lines.append(Text.assemble(("waiting for the cluster ", "bold yellow"), stranded))
    return lines


def _node_line(node: ClusterNode, slots: Mapping[str, JudgeSlot]) -> Text:
    runs = sorted(
        (slot.gpus, name)
        for name, slot in slots.items()
        if slot.state == "running" and slot.node_id == node.node_id
    )
    if node.gpus:
        held = [f"gpu{','.join(gpus) or '?'} {name}" for gpus, name in runs]
        what = f"{node.gpus:g} GPU"
    else:
        held = [name for _, name in runs]
        what = f"{node.cpus:g} CPU"
    holders = " · ".join(held) if held else "no judge of ours"
    return Text.assemble("  ", (node.node_id[:8], "bold"), f" {node.address} {what} · {holders}")


def _waiting(slots: Mapping[str, JudgeSlot], state: str, now: float) -> str:
    names = sorted((slot.since, name) for name, slot in slots.items() if slot.state == state)
    return " · ".join(f"{name} {age(now - since)}" for since, name in names)
