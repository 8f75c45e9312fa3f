"""The environment a judged candidate sees: secrets removed, one device pinned."""

from __future__ import annotations

import re
from collections.abc import Mapping

# Only these variables pass through; anything else (API keys, tokens, cloud credentials) stays out.
_ALLOWED = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|TERM|TMPDIR|TZ|PWD|VIRTUAL_ENV|PYTHONPATH|"
    r"PYTHONHASHSEED|LD_LIBRARY_PATH|LC_\w+|CUDA_\w+|NVIDIA_\w+|TRITON_\w+|TORCH_\w+|"
    r"TORCHINDUCTOR_\w+|PYTORCH_\w+|OMP_NUM_THREADS|MKL_NUM_THREADS|OPENBLAS_NUM_THREADS|"
    r"XDG_CACHE_HOME|CC|CXX|NCCL_\w+|NVSHMEM_\w+)$"
)
_SECRET_LOOKING = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)


def physical_gpu(device: str, environ: Mapping[str, str]) -> str:
    """The GPU behind `cuda:N` as the caller sees it: the N-th entry of its CUDA_VISIBLE_DEVICES
    (an index or a UUID) when that is set, else N."""
    index = int(device.partition(":")[2] or 0)
    visible = [v.strip() for v in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    return visible[index] if index < len(visible) else str(index)


def judged_environment(base: Mapping[str, str], device: str) -> dict[str, str]:
    """Allow-listed variables without secret-looking names, and the device pinned."""
    env = {
        name: value
        for name, value in base.items()
        if _ALLOWED.match(name) and not _SECRET_LOOKING.search(name)
    }
    env["PYTHONUNBUFFERED"] = "1"
    if device.startswith("cuda"):
        env["CUDA_VISIBLE_DEVICES"] = physical_gpu(device, base)
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""
        # OpenMP threads that spin after a parallel region burn CPU outside the timed window,
        # which the referee's CPU accounting would charge to the candidate: let them sleep.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
        env["KMP_BLOCKTIME"] = "0"
    return env
