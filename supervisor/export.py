"""`qrsup export`: a candidate as one self-contained contest submission file.

The file holds the candidate and every qrsup module it imports, from their real sources
(`bundle.py`), with the fast kernel's configs as package data, and the importer that serves them
from memory (`bundle_loader.py`, copied in whole). So it runs where only torch and triton are
installed, and the contest's static check passes: no bundled text may hold a forbidden word.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

from qrsup.agents.session import RunPaths, SessionError
from qrsup.agents.store import Store, StoreError
from qrsup.kernels.judge.static_checks import (
    CONTEST_FORBIDDEN_WORDS,
    check_candidate_source,
    find_forbidden_word,
)
from qrsup.supervisor import bundle_loader
from qrsup.supervisor.bundle import Bundle, BundleError, bundle_candidate
from qrsup.supervisor.errors import UsageError
from qrsup.supervisor.fleet import FleetError, find_session
from rich.console import Console


class ExportError(ValueError):
    """The candidate cannot be exported; one line says why."""


@dataclass(frozen=True)
class CandidateSource:
    """A candidate's source and where it came from."""

    source: str
    origin: str
    """For messages: a file's path, or the candidate id and its session."""
    label: str
    """For the exported file's header: the file's name, or the candidate id and its session."""


@dataclass(frozen=True)
class Submission:
    """The exported file's text, and the modules bundled into it."""

    text: str
    modules: tuple[str, ...]


def export_command(args: argparse.Namespace, console: Console) -> int:
    try:
        candidate = read_candidate(args.candidate, args.workspace, args.session)
        submission = write_submission(candidate, args.output, args.force)
    except ExportError as exc:
        raise UsageError(str(exc)) from None
    size_kib = len(submission.text.encode()) / 1024
    console.print(
        f"wrote {args.output} ({size_kib:.1f} KiB): {candidate.label} with "
        f"{len(submission.modules)} qrsup modules bundled",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    return 0


def read_candidate(ref: str, workspace: Path, session: str) -> CandidateSource:
    """A file when `ref` names one; otherwise a candidate id in the session's store."""
    path = Path(ref)
    if path.exists():
        if not path.is_file():
            raise ExportError(f"candidate is not a regular file: {ref}")
        try:
            return CandidateSource(path.read_text(encoding="utf-8"), ref, path.name)
        except (OSError, UnicodeDecodeError) as exc:
            raise ExportError(f"cannot read {ref}: {exc}") from None
    if path.suffix == ".py" or os.sep in ref:
        raise ExportError(f"candidate file not found: {ref}")
    try:
        paths = find_session(workspace.resolve(), session)
    except (FleetError, SessionError) as exc:
        raise ExportError(f"{ref} is no file here, and {exc}") from None
    return stored_candidate(paths, ref)


def stored_candidate(paths: RunPaths, candidate_id: str) -> CandidateSource:
    """The source of a candidate the session's store holds."""
    try:
        with Store.reader(paths.store) as store:
            row = store.candidate(candidate_id)
    except StoreError:  # no agent has created it yet
        row = None
    if row is None:
        raise ExportError(f"no candidate {candidate_id} in session '{paths.root.name}'")
    origin = f"candidate {candidate_id} of session {paths.root.name}"
    return CandidateSource(row.source, origin, origin)


def write_submission(candidate: CandidateSource, out: Path, force: bool) -> Submission:
    """Export to `out`, written whole or not at all; an existing `out` needs `force`."""
    if out.exists() and not force:
        raise ExportError(f"{out} exists; pass --force to overwrite it")
    submission = submission_text(candidate)
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(submission.text, encoding="utf-8")
        os.replace(temporary, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from None
    return submission


def submission_text(candidate: CandidateSource) -> Submission:
    """The candidate with its bundle, checked the way the contest and the judge check a file."""
    check = check_candidate_source(candidate.source, candidate.origin, CONTEST_FORBIDDEN_WORDS)
    if not check.ok:
        raise ExportError(check.reason)
    try:
        bundle = bundle_candidate(candidate.source, candidate.origin)
    except BundleError as exc:
        raise ExportError(str(exc)) from None
    for module in bundle.modules:
        word, line = find_forbidden_word(module.source, CONTEST_FORBIDDEN_WORDS)
        if word:
            raise ExportError(
                f"{module.origin} holds the forbidden word '{word}' (line {line}); "
                "the contest would reject the export"
            )
    text = _render(bundle, candidate.label)
    final = check_candidate_source(text, "the exported file", CONTEST_FORBIDDEN_WORDS)
    if not final.ok:
        raise ExportError(final.reason)
    return Submission(text, tuple(f"qrsup.{m.name}" for m in bundle.modules if m.name))


def _render(bundle: Bundle, label: str) -> str:
    """The candidate alone when it imports nothing of qrsup; else header, importer, bundle."""
    if not bundle.modules:
        return bundle.entry
    futures, entry = _split_futures(bundle.entry)
    names = ", ".join(m.name for m in bundle.modules if m.source)
    about = (
        f"Exported by qrsup from {label}: one self-contained contest submission. It needs torch "
        f"and triton alone: the qrsup modules it uses ({names}) are bundled below from their "
        f"sources and imported from memory as the package {bundle.root}."
    )
    header = '"""' + textwrap.fill(about, 96) + '\n"""\n'

    sources = {m.name: m.source for m in bundle.modules}
    packages = sorted(m.name for m in bundle.modules if m.is_package)
    data = {key: blob.decode() for key, blob in bundle.data.items()}  # TOML is UTF-8
    parts = [
        header,
        "".join(futures),
        inspect.getsource(bundle_loader),
        f"\n_BUNDLED_SOURCES = {_literal_dict(sources)}\n",
        f"_BUNDLED_PACKAGES = frozenset({packages!r})\n",
        f"_BUNDLED_DATA = {_literal_dict(data, '.encode()')}\n",
        f"install_bundle({bundle.root!r}, _BUNDLED_SOURCES, _BUNDLED_PACKAGES, _BUNDLED_DATA,"
        " __file__)\n\n",
        entry,
    ]
    return "".join(parts)


def _split_futures(source: str) -> tuple[list[str], str]:
    """`from __future__` imports must open the file: take them out of the candidate's body."""
    lines = source.splitlines(keepends=True)
    futures: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for index in range(node.lineno - 1, node.end_lineno or node.lineno):
                futures.append(lines[index])
                lines[index] = "\n"
    return futures, "".join(lines)


def _literal_dict(texts: dict[str, str], then: str = "") -> str:
    """A dict literal of texts, one source line per string literal so the file stays readable;
    `then` follows each value (".encode()" for data)."""
    items = []
    for key, text in texts.items():
        lines = "".join(f"        {line!r}\n" for line in text.splitlines(keepends=True))
        value = f"(\n{lines}    )" if lines else "''"
        items.append(f"    {key!r}: {value}{then},\n")
    return "{\n" + "".join(items) + "}"
