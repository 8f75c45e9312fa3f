"""A module bundler: the qrsup modules a candidate imports, found transitively from their real
sources and renamed to live under one private root package inside a single file.

Every import statement counts, also those inside functions (kernels/__init__.py imports the fast
kernel lazily), except under `if TYPE_CHECKING:`. Relative imports stay as written: the bundled
modules keep their package layout. Absolute `qrsup…` imports are renamed to the bundle's root, a
name of its own (`qrsup_bundle_<hash>`), so an exported file never collides with an installed
qrsup, or with another export, in one process.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "qrsup"
CONTEST_PACKAGES = frozenset({"torch", "triton", "numpy"})
DATA_SUFFIXES = (".toml",)  # package data a bundled module may read (the fast kernel's configs)
_FROM_PACKAGE = re.compile(rf"(from\s+){PACKAGE}\b")


class BundleError(ValueError):
    """The candidate cannot be bundled; the message says which import or file is at fault."""


@dataclass(frozen=True)
class BundledModule:
    """One module of the bundle, its name relative to the package ("" is the root)."""

    name: str
    source: str
    is_package: bool
    origin: str
    """Where its source came from, for messages."""


@dataclass(frozen=True)
class Bundle:
    """What one candidate needs: modules in name order, their package data, and the candidate."""

    root: str
    modules: tuple[BundledModule, ...]
    data: dict[str, bytes]
    """Package data by path below the root, e.g. "kernels/fast/configs.toml"."""
    entry: str
    """The candidate's own source, its imports renamed to the root."""


def bundle_candidate(source: str, origin: str) -> Bundle:
    """Bundle every qrsup module `source` needs, transitively; BundleError says what is missing."""
    tree = _parse(source, origin)
    found: dict[str, BundledModule] = {}
    pending = sorted(_needed(tree, None, origin))
    while pending:
        name = pending.pop()
        if name in found:
            continue
        module = _read_module(name, origin)
        found[name] = module
        if module.source:
            module_tree = _parse(module.source, module.origin)
            package = name if module.is_package else name.rpartition(".")[0]
            pending.extend(_needed(module_tree, package, module.origin) - set(found))
    modules = tuple(found[name] for name in sorted(found))
    data = _package_data(modules)
    root = f"{PACKAGE}_bundle_{_digest(modules, data, source)}"
    renamed = tuple(
        BundledModule(m.name, rename_imports(m.source, root), m.is_package, m.origin)
        for m in modules
    )
    return Bundle(root, renamed, data, rename_imports(source, root))


def rename_imports(source: str, root: str) -> str:
    """`source` with every absolute import of the package renamed to `root`.

    A plain `import qrsup.x` binds the name `qrsup`, so the rename binds it to the root too.
    """
    if not source:
        return source
    tree = ast.parse(source)
    encoded = source.encode()
    starts = _line_starts(encoded)
    edits: list[tuple[int, int, bytes]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
        renamed = _renamed_statement(node, encoded[start:end].decode(), root)
        if renamed is not None:
            edits.append((start, end, renamed.encode()))
    for start, end, text in sorted(edits, reverse=True):
        encoded = encoded[:start] + text + encoded[end:]
    return encoded.decode()


def _renamed_statement(node: ast.Import | ast.ImportFrom, text: str, root: str) -> str | None:
    """The statement with the package renamed, or None when it imports nothing of the package."""
    if isinstance(node, ast.ImportFrom):
        if node.level or not _in_package(node.module):
            return None
        return _FROM_PACKAGE.sub(rf"\g<1>{root}", text, count=1)
    if not any(_in_package(alias.name) for alias in node.names):
        return None
    names = [
        (root + alias.name[len(PACKAGE) :] if _in_package(alias.name) else alias.name)
        + (f" as {alias.asname}" if alias.asname else "")
        for alias in node.names
    ]
    bare = any(_in_package(alias.name) and alias.asname is None for alias in node.names)
    return f"import {', '.join(names)}" + (f"; import {root} as {PACKAGE}" if bare else "")


def _parse(source: str, origin: str) -> ast.Module:
    try:
        return ast.parse(source, filename=origin)
    except SyntaxError as exc:
        raise BundleError(f"{origin} is not Python: {exc.msg} (line {exc.lineno})") from None


def _in_package(module: str | None) -> bool:
    return module is not None and (module == PACKAGE or module.startswith(PACKAGE + "."))


def _relative(module: str) -> str:
    """'qrsup.kernels.fast' → 'kernels.fast'; the package itself → ''."""
    return module[len(PACKAGE) + 1 :] if module != PACKAGE else ""


def _needed(tree: ast.Module, package: str | None, origin: str) -> set[str]:
    """The package's modules (relative names, parents included) that `tree` imports."""
    needed: set[str] = set()
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _in_package(alias.name):
                    needed.add(_relative(alias.name))
                else:
                    _check_external(alias.name, origin)
            continue
        if node.level:
            if package is None:
                raise BundleError(
                    f"{origin}: a relative import (line {node.lineno}) has no package to resolve in"
                )
            base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
            full = ".".join(p for p in (PACKAGE, base, node.module or "") if p)
        elif _in_package(node.module):
            full = str(node.module)
        else:
            _check_external(str(node.module), origin)
            continue
        needed.add(_relative(full))
        for alias in node.names:
            if alias.name != "*" and _is_module(f"{full}.{alias.name}"):
                needed.add(_relative(f"{full}.{alias.name}"))
    return {parent for name in needed for parent in _with_parents(name)}


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: those under `if TYPE_CHECKING:` never do."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _runtime_imports(child)
        else:
            yield from _runtime_imports(node)


def _is_type_checking(test: ast.expr) -> bool:
    name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", "")
    return name == "TYPE_CHECKING"


def _check_external(module: str, origin: str) -> None:
    top = module.partition(".")[0]
    if top not in sys.stdlib_module_names and top not in CONTEST_PACKAGES:
        allowed = ", ".join(sorted(CONTEST_PACKAGES))
        raise BundleError(
            f"{origin} imports {module}, which a contest machine lacks "
            f"(it has the standard library, {allowed})"
        )


def _with_parents(name: str) -> list[str]:
    parts = name.split(".") if name else []
    return ["", *(".".join(parts[: i + 1]) for i in range(len(parts)))]


def _is_module(full: str) -> bool:
    try:
        return importlib.util.find_spec(full) is not None
    except (ImportError, ValueError):  # the parent is a module, not a package
        return False


def _read_module(name: str, origin: str) -> BundledModule:
    full = ".".join(p for p in (PACKAGE, name) if p)
    try:
        spec = importlib.util.find_spec(full)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise BundleError(f"{origin} needs {full}, which the installed {PACKAGE} does not have")
    is_package = spec.submodule_search_locations is not None
    if not spec.has_location or spec.origin is None:  # a namespace package: nothing to run
        return BundledModule(name, "", is_package, full)
    path = Path(spec.origin)
    if path.suffix != ".py":
        raise BundleError(f"{full} is not Python source ({path.name}); it cannot be bundled")
    return BundledModule(name, path.read_text(encoding="utf-8"), is_package, str(path))


def _package_data(modules: tuple[BundledModule, ...]) -> dict[str, bytes]:
    """The data files beside each bundled package's `__init__.py`, by path below the root."""
    data: dict[str, bytes] = {}
    for module in modules:
        if not module.is_package or not module.source:
            continue
        folder = Path(module.origin).parent
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in DATA_SUFFIXES:
                data["/".join([*module.name.split("."), path.name])] = path.read_bytes()
    return data


def _digest(modules: tuple[BundledModule, ...], data: dict[str, bytes], entry: str) -> str:
    digest = hashlib.sha256(entry.encode())
    for module in modules:
        digest.update(f"\0{module.name}\0{module.source}".encode())
    for key, blob in sorted(data.items()):
        digest.update(f"\0{key}\0".encode() + blob)
    return digest.hexdigest()[:10]


def _line_starts(encoded: bytes) -> list[int]:
    starts = [0]
    for line in encoded.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts
