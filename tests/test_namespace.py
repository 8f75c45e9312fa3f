"""One installed namespace: qrsup's folders install as `qrsup.*`, beside PyPI's `agents` (OpenAI's
Agents SDK) and `kernels` (Hugging Face's), which CI installs in the same environment."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PYPI_NAMESAKES = {"agents": "openai-agents", "kernels": "kernels"}


def _outside_the_checkout(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Python as an installed user runs it: from elsewhere, without the checkout on sys.path."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_every_package_folder_is_installed_under_qrsup():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    declared = set(setuptools["packages"])
    found = {
        "qrsup." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("agents", "kernels", "prompts", "supervisor")
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert declared == found


def test_the_library_entry_is_qrsup_kernels_and_bare_names_are_not_ours(tmp_path):
    done = _outside_the_checkout(
        "import importlib.util as u\n"
        "from qrsup.kernels import geqrf\n"
        "print(callable(geqrf))\n"
        "for name in ('agents', 'kernels', 'supervisor', 'prompts'):\n"
        "    spec = u.find_spec(name)\n"
        "    print(name, spec.origin if spec else None)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True"
    for line in lines[1:]:
        name, origin = line.split(" ", 1)
        assert not origin.startswith(str(ROOT / name)), line


@pytest.mark.parametrize("name", sorted(PYPI_NAMESAKES))
def test_pypi_namesake_imports_beside_qrsup(name, tmp_path):
    probe = _outside_the_checkout(
        f"import importlib.util as u; print(u.find_spec({name!r}))", tmp_path
    )
    if probe.stdout.strip() == "None":
        pytest.skip(f"{PYPI_NAMESAKES[name]} is not installed here (CI installs it)")
    done = _outside_the_checkout(
        f"import {name}, qrsup.kernels, qrsup.agents.store, qrsup.supervisor.cli\n"
        f"print({name}.__file__)\n",
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "site-packages" in done.stdout and not done.stdout.startswith(str(ROOT / name))
