"""Which GPU architecture a judge runs on, asked without touching the GPU."""

from __future__ import annotations

import os


def device_arch(device: str) -> int | None:
    """The compute capability (90 for an H100 or H200) of `cuda:N`, through NVML, which makes
    no CUDA context; None without NVML or a GPU."""
    if not device.startswith("cuda"):
        return None
    index = int(device.partition(":")[2] or 0)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    if visible[0] and index < len(visible) and visible[index].strip().isdigit():
        index = int(visible[index])
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVML library, or no driver
        return None
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        return 10 * major + minor
    except pynvml.NVMLError:
        return None
    finally:
        pynvml.nvmlShutdown()
