"""GPU figures from NVML; a machine without a GPU or driver gets a note instead of an error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

import pynvml


@dataclass(frozen=True)
class GpuSample:
    """One GPU now: what it is doing and which processes use it."""

    index: int
    name: str
    utilization_pct: int
    memory_used_bytes: int
    memory_total_bytes: int
    temperature_c: int
    power_w: float
    pids: frozenset[int]

    def holders(self, trees: Mapping[str, frozenset[int]]) -> tuple[str, ...]:
        """The agents whose process tree (the agent, its judge and candidate) uses this GPU."""
        return tuple(name for name, pids in trees.items() if pids & self.pids)


@dataclass(frozen=True)
class GpuReport:
    """Every GPU, or a note saying why there are none to show."""

    gpus: tuple[GpuSample, ...] = ()
    note: str = ""


class GpuStats:
    """Holds the NVML session open between samples; never raises to its caller."""

    def __init__(self, nvml: ModuleType = pynvml) -> None:
        self._nvml = nvml
        self._note = ""
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            self._note = _init_note(nvml, exc)

    @property
    def available(self) -> bool:
        return not self._note

    def sample(self) -> GpuReport:
        if self._note:
            return GpuReport(note=self._note)
        nvml = self._nvml
        try:
            count = nvml.nvmlDeviceGetCount()
            gpus = tuple(self._device(i) for i in range(count))
        except nvml.NVMLError as exc:
            return GpuReport(note=f"GPU stats failed: {exc}")
        return GpuReport(gpus, "" if gpus else "NVML sees no GPU")

    def close(self) -> None:
        if self.available:
            self._nvml.nvmlShutdown()
            self._note = "closed"

    def _device(self, index: int) -> GpuSample:
        nvml = self._nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        name = nvml.nvmlDeviceGetName(handle)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        return GpuSample(
            index=index,
            name=name.decode() if isinstance(name, bytes) else str(name),
            utilization_pct=int(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            memory_used_bytes=int(memory.used),
            memory_total_bytes=int(memory.total),
            temperature_c=int(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
            power_w=nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
            pids=frozenset(int(p.pid) for p in processes),
        )


def _init_note(nvml: ModuleType, exc: Exception) -> str:
    """A plain line where no NVIDIA driver is installed or loaded (a CPU-only machine); NVML's
    own words otherwise, since a GPU machine whose NVML fails needs them."""
    absent = (nvml.NVML_ERROR_LIBRARY_NOT_FOUND, nvml.NVML_ERROR_DRIVER_NOT_LOADED)
    if getattr(exc, "value", None) in absent:
        return "no NVIDIA GPU on this machine"
    return f"no GPU stats: {exc}"
