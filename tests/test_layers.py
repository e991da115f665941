"""The import-layer contracts (pyproject.toml [tool.importlinter]) hold, and each can fail.

A contract that nothing could break checks nothing: for each one, a copy of
src/ with one offending import added must make `lint-imports` report exactly
that contract broken.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(exe), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree / "src")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _file_of(tree: Path, module: str) -> Path:
    path = tree / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def test_every_contract_is_kept(tmp_path: Path) -> None:
    proc = _lint_imports(_copy(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for contract in CONTRACTS:
        assert f"{contract['name']} KEPT" in proc.stdout


LAYERS = [c for c in CONTRACTS if c["type"] == "layers"]
ACYCLIC = [c for c in CONTRACTS if c["type"] == "acyclic_siblings"]


def test_every_contract_is_one_of_the_kinds_tested_here() -> None:
    assert len(LAYERS) + len(ACYCLIC) == len(CONTRACTS)
    assert LAYERS and ACYCLIC


def _layer_pairs() -> list[tuple[str, str, str]]:
    """(contract, lower module, the module above it) for each pair of adjacent layers."""
    pairs = []
    for contract in LAYERS:
        (container,) = contract["containers"]
        tails = [[t.strip() for t in layer.split("|")] for layer in contract["layers"]]
        for above, below in itertools.pairwise(tails):
            pairs.append((contract["name"], f"{container}.{below[0]}", f"{container}.{above[-1]}"))
    return pairs


def _independent_pairs() -> list[tuple[str, str, str]]:
    """(contract, one module, its independent neighbour) for each layer joined by ``|``."""
    pairs = []
    for contract in LAYERS:
        (container,) = contract["containers"]
        for layer in contract["layers"]:
            tails = [t.strip() for t in layer.split("|")]
            if len(tails) > 1:
                pairs.append(
                    (contract["name"], f"{container}.{tails[0]}", f"{container}.{tails[1]}")
                )
    return pairs


def _break(tmp_path: Path, importer: str, imported: str) -> subprocess.CompletedProcess[str]:
    tree = _copy(tmp_path)
    with _file_of(tree, importer).open("a", encoding="utf-8") as f:
        f.write(f"\nimport {imported}\n")
    return _lint_imports(tree)


@pytest.mark.parametrize(
    ("name", "importer", "imported"),
    _layer_pairs() + _independent_pairs(),
    ids=[f"{a}->{b}" for _, a, b in _layer_pairs() + _independent_pairs()],
)
def test_the_layers_catch_an_import_upward_or_across(
    name: str, importer: str, imported: str, tmp_path: Path
) -> None:
    proc = _break(tmp_path, importer, imported)
    assert proc.returncode != 0
    assert f"{name} BROKEN" in proc.stdout, proc.stdout


def test_a_module_in_no_layer_breaks_the_layers(tmp_path: Path) -> None:
    (contract,) = LAYERS
    tree = _copy(tmp_path)
    (tree / "src" / "ecs_gpu" / "stray.py").write_text('"""Not in any layer."""\n')
    proc = _lint_imports(tree)
    assert proc.returncode != 0
    assert f"{contract['name']} BROKEN" in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        # Two siblings that would import each other at run time.
        ("ecs_gpu.checks.kinds", "ecs_gpu.checks.snapshot"),
        # A top-level module and package: the instance catalog reaching up to
        # the spec that reads it.
        ("ecs_gpu.catalog", "ecs_gpu.spec"),
    ],
)
def test_the_cycle_contract_catches_a_cycle(importer: str, imported: str, tmp_path: Path) -> None:
    (contract,) = ACYCLIC
    tree = _copy(tmp_path)
    with _file_of(tree, importer).open("a", encoding="utf-8") as f:
        f.write(f"\nimport {imported}\n")
    proc = _lint_imports(tree)
    assert proc.returncode != 0
    assert f"{contract['name']} BROKEN" in proc.stdout, proc.stdout
