"""Public entry of the fast batched QR: validation, dispatch to Triton or CUDA graphs, fallbacks."""

from __future__ import annotations

import functools

import torch
from triton import knobs

from .config import Config, load_config
from .direct_launch import DirectPlan, direct_plan
from .driver import Buffers, run_plan
from .graphs import GraphCache
from .interpret import patch_scalar_index
from .plan import Plan, make_plan


class NonFiniteInputError(ValueError):
    """A contains NaN or Inf: its QR has no finite factors."""


class FastGeqrf:
    """The blocked compact-WY QR for one configs file, with its plans and captured CUDA graphs."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._graphs = GraphCache()
        # Per (device, batch, n): the plan, and its direct launches where it has them.
        self._plans: dict[tuple[int, int, int], tuple[Plan | None, DirectPlan | None]] = {}

    def __call__(
        self, a: torch.Tensor, *, check_finite: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(H, tau) as torch.geqrf returns them; bad input raises instead of giving garbage."""
        batch, n = _validate(a)
        device = a.get_device()  # -1: the CPU, under Triton's interpreter
        if device < 0:
            patch_scalar_index()
        if batch == 0 or n == 0:
            return a.clone(memory_format=torch.contiguous_format), a.new_zeros((batch, n))
        plan, direct = self._plan(device, batch, n)
        if plan is None:
            return _fallback(a, check_finite)
        if direct is not None:
            h, tau, amax = direct(a, device)
        elif plan.shape.graph and device >= 0:
            static = self._graphs.run(a, plan)
            h, tau, amax = static.h.clone(), static.tau.clone(), static.amax
        else:
            out = Buffers.allocate(a, plan)
            run_plan(a, plan, out)
            h, tau, amax = out.h, out.tau, out.amax
        if check_finite and not bool(torch.isfinite(amax).all()):
            raise NonFiniteInputError("geqrf: A contains NaN or Inf")
        return h, tau

    def _plan(self, device_index: int, batch: int, n: int) -> tuple[Plan | None, DirectPlan | None]:
        """The plan of one shape on one device (-1: the CPU), from its architecture's configs,
        and on a GPU its direct launches where it has them (direct_launch.py: one-launch plans
        and `direct_launch` classes), made once: small shapes pay for every host microsecond."""
        key = (device_index, batch, n)
        if key not in self._plans:
            shape = self.config.for_arch(_arch(device_index)).for_shape(batch, n)
            plan = make_plan(batch, n, shape)
            on_gpu = plan is not None and device_index >= 0
            self._plans[key] = (plan, direct_plan(plan) if on_gpu else None)
        return self._plans[key]


def geqrf(a: torch.Tensor, *, check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Compact Householder QR of a batch × n × n float32 CUDA tensor: torch.geqrf's (H, tau).

    `check_finite` costs one host synchronisation (66 µs at 20×32 on an H200, 1–3% from n = 512:
    kernels/README.md); callers that guarantee finite input may skip it.
    The configs come from $QRSUP_FAST_CONFIGS or the shipped kernels/fast/configs.toml.
    """
    return default_solver()(a, check_finite=check_finite)


def _arch(device_index: int) -> int | None:
    """The compute capability (90 for sm_90) of CUDA device `device_index`; None for the CPU
    (-1), whose interpreter runs the home table."""
    if device_index < 0:
        return None
    major, minor = torch.cuda.get_device_capability(device_index)
    return 10 * major + minor


@functools.cache
def default_solver() -> FastGeqrf:
    """The process-wide solver for the default configs file (read once)."""
    return FastGeqrf(load_config())


def _validate(a: object) -> tuple[int, int]:
    """(batch, n) of a valid A; bad input raises."""
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"geqrf: A must be a torch.Tensor, got {type(a).__name__}")
    shape = a.shape
    if len(shape) != 3:
        raise ValueError(f"geqrf: A must be batch × n × n (3-D), got shape {tuple(shape)}")
    batch, rows, n = shape
    if rows != n:
        raise ValueError(f"geqrf: A must hold square matrices, got shape {tuple(shape)}")
    if a.dtype != torch.float32:
        raise TypeError(f"geqrf: A must be float32, got {a.dtype}")
    if not a.is_cuda and not (a.device.type == "cpu" and knobs.runtime.interpret):
        raise ValueError(
            f"geqrf: A is on {a.device}; the fast kernel needs a CUDA tensor "
            "(or TRITON_INTERPRET=1 for CPU tensors); use torch.geqrf on the CPU"
        )
    return batch, n


def _fallback(a: torch.Tensor, check_finite: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.geqrf for sizes no panel fits in registers (n beyond the largest config's budget)."""
    if check_finite and not bool(torch.isfinite(a).all()):
        raise NonFiniteInputError("geqrf: A contains NaN or Inf")
    return torch.geqrf(a)
