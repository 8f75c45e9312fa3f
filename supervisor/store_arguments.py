"""Which store a reporting script reads: a session's in its workspace, or a lone store file
brought back from another machine."""

from __future__ import annotations

import argparse
from pathlib import Path

from qrsup.agents.session import RunPaths


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", type=Path)
    where.add_argument("--store", type=Path, help="a store file brought back on its own")
    parser.add_argument("--session", default="default")


def store_path(args: argparse.Namespace) -> Path:
    return args.store or RunPaths.of(args.workspace.resolve(), args.session).store
