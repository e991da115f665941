"""The README's "From Python" snippet runs as written and uses only the public API."""

from __future__ import annotations

import ast
import contextlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = {"ecs_gpu", "ecs_gpu.spec", "ecs_gpu.sim", "ecs_gpu.errors"}


def _snippet() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_snippet_imports_only_public_modules() -> None:
    modules = {
        node.module for node in ast.walk(ast.parse(_snippet())) if isinstance(node, ast.ImportFrom)
    }
    assert modules and modules <= PUBLIC


def test_the_snippet_runs_from_the_checkout_and_prints_its_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_snippet(), "README.md", "exec"), {"__name__": "readme"})
    gpu_hours, overload = out.getvalue().split()
    assert float(gpu_hours) > 0 and float(overload) >= 0
