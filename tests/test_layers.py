"""The import-layer contracts (pyproject.toml [tool.importlinter]) hold, and each can fail.

A contract that nothing could break checks nothing: for each one, a copy of
src/ with one offending import added must make `lint-imports` report exactly
that contract broken.
"""

from __future__ import annotations

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


FORBIDDEN = [c for c in CONTRACTS if c["type"] == "forbidden"]
ACYCLIC = [c for c in CONTRACTS if c["type"] == "acyclic_siblings"]


def test_every_contract_is_one_of_the_kinds_tested_here() -> None:
    assert len(FORBIDDEN) + len(ACYCLIC) == len(CONTRACTS) and ACYCLIC


@pytest.mark.parametrize("contract", FORBIDDEN, ids=[c["name"] for c in FORBIDDEN])
def test_each_contract_catches_an_offending_import(
    contract: dict[str, Any], tmp_path: Path
) -> None:
    tree = _copy(tmp_path)
    source = _file_of(tree, contract["source_modules"][-1])
    forbidden = contract["forbidden_modules"][-1]
    with source.open("a", encoding="utf-8") as f:
        f.write(f"\nimport {forbidden}\n")
    proc = _lint_imports(tree)
    assert proc.returncode != 0
    assert f"{contract['name']} BROKEN" in proc.stdout, proc.stdout


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        # Two siblings that would import each other at run time.
        ("ecs_gpu.doctor.kinds", "ecs_gpu.doctor.snapshot"),
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
