"""The importer an exported submission carries: its bundled modules, imported from source held in
the file itself.

`qrsup export` copies this module's source into the submission verbatim, so it uses the standard
library alone. Each module compiles under a file name beside the submission, and its source is
served by `get_source` and put in `linecache`: Triton reads a kernel's source through `inspect`,
and tracebacks show the lines. Package data (the fast kernel's `configs.toml`) is read through
`importlib.resources`, which this importer answers from memory too.
"""

import importlib.abc
import importlib.machinery
import io
import linecache
import os
import sys
from collections.abc import Iterator, Mapping
from importlib.resources.abc import Traversable
from types import ModuleType


class BundledResource(Traversable):
    """A file or folder of a bundle's package data, read from memory."""

    def __init__(self, data: Mapping[str, bytes], base: str, parts: tuple[str, ...]) -> None:
        self._data, self._base, self._parts = data, base, parts

    @property
    def name(self) -> str:
        return self._parts[-1] if self._parts else ""

    def __str__(self) -> str:
        return os.path.join(self._base, *self._parts)

    def _key(self) -> str:
        return "/".join(self._parts)

    def is_file(self) -> bool:
        return self._key() in self._data

    def is_dir(self) -> bool:
        return not self.is_file() and any(True for _ in self._children())

    def iterdir(self) -> Iterator["BundledResource"]:
        return (self.joinpath(child) for child in sorted(set(self._children())))

    def _children(self) -> Iterator[str]:
        prefix = self._key() + "/" if self._parts else ""
        return (key[len(prefix) :].split("/")[0] for key in self._data if key.startswith(prefix))

    def joinpath(self, *descendants: str) -> "BundledResource":
        parts = [p for d in descendants for p in str(d).split("/") if p]
        return BundledResource(self._data, self._base, (*self._parts, *parts))

    def __truediv__(self, child: str) -> "BundledResource":
        return self.joinpath(child)

    def read_bytes(self) -> bytes:
        if not self.is_file():
            raise FileNotFoundError(f"no bundled file {self}")
        return self._data[self._key()]

    def read_text(self, encoding: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8")

    def open(self, mode: str = "r", *args: object, **kwargs: object) -> io.IOBase:
        if mode not in ("r", "rb"):
            raise ValueError(f"bundled files are read-only, not opened with mode {mode!r}")
        raw = io.BytesIO(self.read_bytes())
        return raw if mode == "rb" else io.TextIOWrapper(raw, *args, **kwargs)  # type: ignore[arg-type]


class BundledFiles:
    """`importlib.resources.files()` of one bundled package."""

    def __init__(self, root: BundledResource) -> None:
        self._root = root

    def files(self) -> BundledResource:
        return self._root


class BundleImporter(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds and loads the modules under one root package name from their sources."""

    def __init__(
        self,
        root: str,
        sources: Mapping[str, str],
        packages: frozenset[str],
        data: Mapping[str, bytes],
        folder: str,
    ) -> None:
        self.root = root
        self._sources = {self._full(name): source for name, source in sources.items()}
        self._packages = frozenset(self._full(name) for name in packages)
        self._data = data
        self._folder = os.path.join(folder, root)

    def _full(self, name: str) -> str:
        return f"{self.root}.{name}" if name else self.root

    def _parts(self, fullname: str) -> list[str]:
        return fullname.split(".")[1:]

    def filename(self, fullname: str) -> str:
        """Where the module would lie: beside the submission, under the root's name."""
        parts = self._parts(fullname)
        if fullname in self._packages:
            return os.path.join(self._folder, *parts, "__init__.py")
        return os.path.join(self._folder, *parts[:-1], parts[-1] + ".py")

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._sources:
            return None
        is_package = fullname in self._packages
        spec = importlib.machinery.ModuleSpec(
            fullname, self, origin=self.filename(fullname), is_package=is_package
        )
        spec.has_location = True
        return spec

    def is_package(self, fullname: str) -> bool:
        return fullname in self._packages

    def get_source(self, fullname: str) -> str:
        if fullname not in self._sources:
            raise ImportError(f"{fullname} is not in this bundle", name=fullname)
        return self._sources[fullname]

    def get_filename(self, fullname: str) -> str:
        return self.filename(fullname)

    def exec_module(self, module: ModuleType) -> None:
        fullname = module.__name__
        source, filename = self.get_source(fullname), self.filename(fullname)
        # mtime None: linecache.checkcache keeps the entry although no file is there.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)

    def get_resource_reader(self, fullname: str) -> BundledFiles | None:
        if fullname not in self._packages:
            return None
        parts = tuple(self._parts(fullname))
        return BundledFiles(BundledResource(self._data, self._folder, parts))


def install_bundle(
    root: str,
    sources: Mapping[str, str],
    packages: frozenset[str],
    data: Mapping[str, bytes],
    beside: str,
) -> BundleImporter:
    """Make the bundle importable as `root` (once per process; a second call reuses the first)."""
    for finder in sys.meta_path:  # another export's importer is another class: compare roots
        if getattr(finder, "root", None) == root and hasattr(finder, "get_resource_reader"):
            return finder  # type: ignore[return-value]
    importer = BundleImporter(root, sources, packages, data, os.path.dirname(beside))
    sys.meta_path.insert(0, importer)
    return importer
