"""The layers point one way, and no module imports itself back: kernels/ imports nothing above
it, agents/ never imports Textual or the supervisor, and module-level imports form no cycle, not
even through imports for annotations only (under `if TYPE_CHECKING:`)."""

from __future__ import annotations

import ast
from pathlib import Path

from qrsup.kernels.schema import Actor, Decision, EventKind, Lifecycle, Verdict

from tests.conftest import ROOT

LAYERS = ("kernels", "agents", "supervisor")
FORBIDDEN = {
    "kernels": ("qrsup.agents", "qrsup.supervisor", "textual"),
    "agents": ("qrsup.supervisor", "textual"),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return "qrsup." + ".".join(parts)


def _imports(path: Path, module_level_only: bool) -> set[str]:
    """Absolute names imported by a module (module level only: what runs at import time, and what
    a type checker imports under `if TYPE_CHECKING:`, a cycle all the same)."""
    tree = ast.parse(path.read_text())
    nodes = _module_level(tree.body) if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def _module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with those of its `if TYPE_CHECKING:` blocks."""
    nodes = []
    for node in body:
        nodes.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            nodes += _module_level(node.body)
    return nodes


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def _modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for top in (*LAYERS, "prompts")
        for path in (ROOT / top).rglob("*.py")
    }


def test_lower_layers_import_nothing_above_them():
    offences = [
        f"{name} imports {imported}"
        for name, path in _modules().items()
        for layer, banned in FORBIDDEN.items()
        if name.startswith(f"qrsup.{layer}.") or name == f"qrsup.{layer}"
        for imported in _imports(path, module_level_only=False)
        if imported.startswith(banned)
    ]
    assert offences == []


def test_module_level_imports_form_no_cycle():
    modules = _modules()
    graph = {
        name: {i for i in _imports(path, module_level_only=True) if i in modules}
        for name, path in modules.items()
    }
    cycles, state = [], {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            if state.get(target) == "open":
                cycles.append(" → ".join([*trail[trail.index(target) :], target]))
            elif target not in state:
                visit(target, [*trail, target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_imports_for_annotations_only_count_toward_a_cycle(tmp_path):
    path = tmp_path / "annotated.py"
    path.write_text(
        "import typing\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from qrsup.supervisor.board import Board\n"
        "if typing.TYPE_CHECKING:\n"
        "    import qrsup.supervisor.fleet\n"
        "def f():\n"
        "    from qrsup.supervisor.app import SupervisorApp\n"
    )
    imported = _imports(path, module_level_only=True)
    assert {"qrsup.supervisor.board", "qrsup.supervisor.fleet"} <= imported
    assert "qrsup.supervisor.app" not in imported


def test_agents_md_quotes_the_schema_vocabularies():
    text = (ROOT / "AGENTS.md").read_text()
    names = [*Verdict, *Decision, *Lifecycle, *Actor, *EventKind]
    missing = [str(n) for n in names if f"`{n}`" not in text]
    assert missing == []
