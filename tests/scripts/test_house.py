"""scripts/house.py: each house rule holds on this tree, and each can fail.

A rule that nothing could break checks nothing, so every rule is also run on
a small tree made to break it.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["house"] = module
    spec.loader.exec_module(module)
    return module


house = _load()

PYPROJECT = """
[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
containers = ["ecs_gpu"]
layers = ["cli", "aws", "checks", "spec", "errors"]
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    """A small repository: pyproject, a package with an entry point, its tests."""
    base = {
        "pyproject.toml": PYPROJECT,
        "src/ecs_gpu/__init__.py": '"""The package."""\nfrom ecs_gpu import errors\n',
        "src/ecs_gpu/__main__.py": "from ecs_gpu import cli\n",
        "src/ecs_gpu/errors.py": '"""Errors."""\n',
        "src/ecs_gpu/cli/__init__.py": '"""The CLI."""\nfrom ecs_gpu import errors\n',
        "tests/test_errors.py": "def test_x() -> None:\n    assert True\n",
        "tests/cli/test_cli.py": "def test_x() -> None:\n    assert True\n",
        "docs/a.md": "# A\n\n| a | b |\n|---|---|\n| short | cell |\n",
        "README.md": "# Readme\n",
    }
    for name, text in {**base, **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


def _rule(root: Path, name: str) -> object:
    (rule,) = [r for r in house.House(root).rules() if r.name == name]
    return rule


def test_this_tree_keeps_every_house_rule(capsys: pytest.CaptureFixture[str]) -> None:
    code = house.main([str(ROOT)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "FAIL" not in out


def test_a_small_clean_tree_keeps_every_rule(tmp_path: Path) -> None:
    root = _tree(tmp_path, {})
    assert [r.name for r in house.House(root).rules() if not r.ok] == []


@pytest.mark.parametrize(
    ("rule", "files"),
    [
        (
            "modules directly in src/ecs_gpu",
            {f"src/ecs_gpu/m{i}.py": "from ecs_gpu import errors\n" for i in range(7)},
        ),
        (
            "import-linter layers contract",
            {"pyproject.toml": PYPROJECT.replace('"aws", "checks", ', "")},
        ),
        ("module length", {"src/ecs_gpu/cli/long.py": "x = 1\n" * 401}),
        (
            "module docstrings",
            {"src/ecs_gpu/errors.py": '"""Errors.\n' + "Why.\n" * 15 + '"""\n'},
        ),
        (
            "function size",
            {"src/ecs_gpu/cli/__init__.py": "def f(a):\n" + "    if a:\n        a += 1\n" * 25},
        ),
        ("reachable from the entry points", {"src/ecs_gpu/cli/orphan.py": '"""Orphan."""\n'}),
        (
            "check ids only in ecs_gpu/checks",
            {"src/ecs_gpu/errors.py": '"""Errors; see doctor SCL004."""\n'},
        ),
        (
            "the spec resolved once (Design.of)",
            {
                "src/ecs_gpu/design/__init__.py": '"""Design."""\n',
                "src/ecs_gpu/design/wake.py": "def scales_to_zero(spec: Spec) -> bool:\n"
                "    return True\n",
                "src/ecs_gpu/cli/__init__.py": "from ecs_gpu.design import wake\n"
                "wake.scales_to_zero(None)\n",
            },
        ),
        ("no issue numbers or stops in the product's text", {"docs/b.md": "Since issue 8.\n"}),
        ("no issue numbers or stops in the product's text", {"README.md": "As this stop did.\n"}),
        ("Markdown table cells", {"docs/b.md": "| a |\n|---|\n| " + "x" * 401 + " |\n"}),
        (
            "tests mirror src",
            {f"src/ecs_gpu/cli/m{i}.py": '"""M."""\n' for i in range(3)}
            | {"src/ecs_gpu/cli/__init__.py": "from ecs_gpu.cli import m0, m1, m2\n"},
        ),
        ("test files", {"tests/test_long.py": "x = 1\n" * 801}),
        ("test files", {f"tests/helper{i}.py": "x = 1\n" for i in range(4)}),
    ],
)
def test_each_rule_fails_on_a_tree_that_breaks_it(
    rule: str, files: dict[str, str], tmp_path: Path
) -> None:
    root = _tree(tmp_path, files)
    assert not _rule(root, rule).ok
    assert house.main([str(root)]) == 1


def test_complexity_counts_as_documented() -> None:
    import ast

    fn = ast.parse(
        textwrap.dedent(
            """
            def f(a, b):
                if a and b or a:
                    return [x for x in a if x if b]
                for x in a:
                    while b:
                        assert x
                try:
                    pass
                except ValueError:
                    pass
                match a:
                    case 1:
                        pass
                    case _:
                        pass
                def inner():
                    if a:
                        pass
                return 1 if a else 2
            """
        )
    ).body[0]
    # 1 + if + (and, or) + comprehension with two ifs + for + while + assert
    # + except + two cases + the conditional; the inner function apart.
    assert house._complexity(fn) == 1 + 1 + 2 + 3 + 1 + 1 + 1 + 1 + 2 + 1


def test_a_pipe_in_backticks_does_not_split_a_cell() -> None:
    cells = list(house._table_cells("| `a | b` | c |\n"))
    assert cells == ["`a | b`", "c"]


def test_json_output_is_one_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    root = _tree(tmp_path, {})
    assert house.main([str(root), "--json"]) == 0
    rules = json.loads(capsys.readouterr().out)
    assert all(r["ok"] for r in rules) and len(rules) == len(house.House(root).rules())
