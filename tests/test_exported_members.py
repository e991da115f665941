"""The public API: each public module exports exactly what ecs_gpu's docstring lists.

The package docstring of ``ecs_gpu`` lists the public modules and their
names; each of those modules' ``__all__`` is that list, every name in it
resolves, and every name the module defines is either listed or private
(a leading underscore), as httpx's tests/test_exported_members.py holds
for httpx. Every other ``__all__`` in the package names only what exists.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ecs_gpu

SRC = Path(ecs_gpu.__file__).resolve().parent
NAME = re.compile(r"``([A-Za-z_][A-Za-z_0-9.]*)``")


def _documented() -> dict[str, list[str]]:
    """module -> the names its docstring entry lists, from the ``- ``module``: ...`` items."""
    entries: list[str] = []
    for line in (ecs_gpu.__doc__ or "").splitlines():
        if line.startswith("- ``"):
            entries.append(line)
        elif entries and line.startswith("  ") and not line.strip().startswith("-"):
            entries[-1] += " " + line.strip()
        elif not line.strip() and entries:
            break
    out = {}
    for entry in entries:
        module, *names = NAME.findall(entry)
        out[module] = names
    return out


DOCUMENTED = _documented()


def _source(module: str) -> Path:
    parts = module.split(".")[1:]
    package = SRC.joinpath(*parts, "__init__.py")
    return package if package.exists() else SRC.joinpath(*parts).with_suffix(".py")


def _defined(path: Path) -> set[str]:
    """The names the source at ``path`` binds at top level by def, class or assignment."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _with_all() -> list[str]:
    """Every module of the package whose source sets ``__all__``."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        if "__all__" not in _defined(path):
            continue
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def test_the_docstring_lists_the_public_modules() -> None:
    assert list(DOCUMENTED) == ["ecs_gpu", "ecs_gpu.spec", "ecs_gpu.sim", "ecs_gpu.errors"]
    assert all(DOCUMENTED.values())


@pytest.mark.parametrize("module", list(DOCUMENTED))
def test_a_public_module_exports_exactly_the_documented_names(module: str) -> None:
    exported = importlib.import_module(module).__all__
    assert len(exported) == len(set(exported)), module
    assert sorted(exported) == sorted(DOCUMENTED[module])


@pytest.mark.parametrize("module", list(DOCUMENTED))
def test_every_name_a_public_module_defines_is_exported_or_private(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    public = {n for n in _defined(_source(module)) if not n.startswith("_")}
    assert public <= exported, sorted(public - exported)


@pytest.mark.parametrize("module", _with_all())
def test_every_name_in_an_all_exists(module: str) -> None:
    loaded = importlib.import_module(module)
    missing = [n for n in loaded.__all__ if not hasattr(loaded, n)]
    assert not missing, missing


def test_strategy_nonce_needs_no_cdk() -> None:
    # GpuService starts Node/jsii on first access; the nonce is the spec's alone.
    code = (
        "import sys, ecs_gpu\n"
        "from ecs_gpu.design import redeploy\n"
        "assert ecs_gpu.strategy_nonce is redeploy.strategy_nonce\n"
        "assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules, 'CDK loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
