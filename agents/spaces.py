"""Declared config spaces the tuner searches: each renders a config point as a candidate file.

A point is a flat mapping `"<class>.<knob>" → value`; a class is a group of specs that share
knobs (one for the blocked-WY candidate; one per shape class of the fast kernel), so the tuner can
aim its mutations at the classes with the most to gain.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from qrsup.kernels.blocked_wy import T_METHODS, BlockedConfig
from qrsup.kernels.fast.config import KNOBS, Config, dump_config, load_config, parse_config
from qrsup.kernels.suites import Spec

Point = dict[str, object]


class ConfigSpace(Protocol):
    """A family's knobs, their allowed values, and how a point becomes a candidate."""

    family: str

    def choices(self) -> dict[str, tuple[object, ...]]: ...

    def read(self, source: str) -> Point | None: ...

    def render(self, point: Mapping[str, object]) -> str: ...

    def class_of(self, spec: Spec) -> str: ...

    def default_point(self) -> Point: ...


BLOCKED_TEMPLATE = '''\
"""Candidate: plain-PyTorch blocked compact-WY Householder QR; a tuner may edit CONFIG."""

import torch

from qrsup.kernels.blocked_wy import BlockedConfig, geqrf_blocked

CONFIG = BlockedConfig({arguments})


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return geqrf_blocked(a, CONFIG)
'''


@dataclass(frozen=True)
class BlockedWySpace:
    """The knobs of `qrsup.kernels.blocked_wy.BlockedConfig`, one class for every spec.

    Two families share the code: `blocked_wy` factors panels one reflector at a time,
    `recursive_wy` halves them recursively (Elmroth–Gustavson), a different algorithm.
    """

    family: str = "blocked_wy"

    @property
    def panel_impl(self) -> str:
        return "recursive" if self.family == "recursive_wy" else "unblocked"

    def choices(self) -> dict[str, tuple[object, ...]]:
        return {
            "all.panel_width": (4, 8, 12, 16, 24, 32, 48, 64, 96, 128),
            "all.panel_impl": (self.panel_impl,),
            "all.t_method": T_METHODS,
            "all.update_chunk": (0, 32, 64, 128, 256),
        }

    def default_point(self) -> Point:
        config = BlockedConfig(panel_impl=self.panel_impl)
        return {f"all.{k}": v for k, v in config.to_dict().items()}

    def read(self, source: str) -> Point | None:
        call = _config_call(source, "CONFIG")
        if call is None:
            return None
        try:
            values = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
            config = BlockedConfig(**values)
        except (ValueError, TypeError):
            return None
        return {f"all.{k}": v for k, v in config.to_dict().items()}

    def render(self, point: Mapping[str, object]) -> str:
        knobs = {key.split(".", 1)[1]: value for key, value in point.items()}
        BlockedConfig(**knobs)  # type: ignore[arg-type]  # validates before rendering
        arguments = ", ".join(f"{k}={v!r}" for k, v in knobs.items())
        return BLOCKED_TEMPLATE.format(arguments=arguments)

    def class_of(self, spec: Spec) -> str:
        return "all"


FAST_TEMPLATE = '''\
"""Candidate: the fast Triton blocked-WY kernel with a tuner-chosen config embedded below."""

import tomllib
from pathlib import Path

import torch
from triton import knobs

from qrsup.kernels.fast.config import parse_config
from qrsup.kernels.fast.geqrf import FastGeqrf

CONFIG_TOML = """
{config}"""

_solver = FastGeqrf(parse_config(tomllib.loads(CONFIG_TOML), Path(__file__)))


def custom_kernel(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if not a.is_cuda and not knobs.runtime.interpret:
        return torch.geqrf(a)
    return _solver(a, check_finite=False)
'''


@functools.lru_cache(maxsize=8)
def _configs_as_of(path: Path, mtime_ns: int, size: int, arch: int | None) -> Config:
    """The configs file as it was at (mtime, size): the tuner asks for it twice a proposal,
    hundreds of times a run, and parsing it each time was most of a proposal's cost."""
    return load_config(path).for_arch(arch)


@dataclass(frozen=True)
class FastKernelSpace:
    """The shipped fast kernel's declared space, one class per `[[shape]]` of its configs; read,
    validated and written by the kernel's own config code.

    The tuner searches the table of its GPU's architecture (`arch`; None on the CPU, the file's
    home table). Where the configs have none for it, the search starts from the nearest table and
    every candidate carries its own table for this architecture beside the others."""

    configs_path: Path
    family: str = "fast"
    arch: int | None = None

    def _config(self) -> Config:
        stat = self.configs_path.stat()
        return _configs_as_of(self.configs_path, stat.st_mtime_ns, stat.st_size, self.arch)

    def choices(self) -> dict[str, tuple[object, ...]]:
        config = self._config()
        return {
            f"{shape.name}.{knob}": config.space[knob] for shape in config.shapes for knob in KNOBS
        }

    def read(self, source: str) -> Point | None:
        config = embedded_config(source)
        return _flatten_shapes(config.for_arch(self.arch)) if config is not None else None

    def render(self, point: Mapping[str, object]) -> str:
        config = self._config()
        shapes = tuple(
            replace(
                shape,
                **{
                    key.split(".", 1)[1]: value
                    for key, value in point.items()
                    if key.split(".", 1)[0] == shape.name
                },
            )
            for shape in config.shapes
        )
        return FAST_TEMPLATE.format(config=dump_config(config.with_table(self.arch, shapes)))

    def default_point(self) -> Point:
        return _flatten_shapes(self._config())

    def class_of(self, spec: Spec) -> str:
        return self._config().for_shape(spec.batch, spec.n).name


def embedded_config(source: str) -> Config | None:
    """The config a fast-kernel candidate embeds (FAST_TEMPLATE's CONFIG_TOML), read from its
    text without running it; None for any other source."""
    tree = _module(source)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and _assigns(node, "CONFIG_TOML"):
            try:
                raw = tomllib.loads(ast.literal_eval(node.value))
                return parse_config(raw, Path("<candidate>"))
            except ValueError:  # a malformed literal, TOML or config (all ValueErrors)
                return None
    return None


def _flatten_shapes(config: Config) -> Point:
    return {
        f"{shape.name}.{knob}": getattr(shape, knob) for shape in config.shapes for knob in KNOBS
    }


def _module(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def _assigns(node: ast.Assign, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)


def _config_call(source: str, name: str) -> ast.Call | None:
    tree = _module(source)
    if tree is None:
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and _assigns(node, name)
            and isinstance(node.value, ast.Call)
        ):
            return node.value
    return None


FAMILIES = ("blocked_wy", "recursive_wy", "fast")


def space_for(family: str, repo_root: Path, arch: int | None = None) -> ConfigSpace:
    """The tuner's space for a family name; the fast kernel's for GPUs of compute capability
    `arch` (None: the home table of its configs)."""
    if family in ("blocked_wy", "recursive_wy"):
        return BlockedWySpace(family)
    if family == "fast":
        return FastKernelSpace(repo_root / "kernels" / "fast" / "configs.toml", arch=arch)
    raise ValueError(f"no config space for family {family!r} (one of {', '.join(FAMILIES)})")
