"""terminal: a nonsense COLUMNS is ignored, and tables never cut a cell."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ecs_gpu.cli import terminal

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.mark.parametrize("columns", ["0", "abc", "-3", "5", ""])
def test_a_columns_that_is_no_width_is_ignored(
    columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()
    c = terminal.console()
    c.file = out
    assert c.width >= terminal.MIN_COLUMNS
    c.print("error: spec.toml: bad.", soft_wrap=True)
    assert out.getvalue() == "error: spec.toml: bad.\n"


def test_a_usable_columns_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert terminal.console().width == 123


@pytest.mark.parametrize("columns", ["0", "abc"])
def test_the_command_prints_its_error_whatever_columns_says(columns: str) -> None:
    env = {**os.environ, "COLUMNS": columns, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-m", "ecs_gpu", "validate", "no-such-spec.toml"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "no-such-spec.toml: no such spec file" in done.stderr


def _resources() -> Table:
    t = Table(box=None, pad_edge=False)
    t.add_column("")
    for col in ("type", "logical id", "physical id"):
        t.add_column(col, no_wrap=True)
    t.add_row(
        "-",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "GpuServiceTaskCountTargetF657A1B2",
        "service/vllm-g5-cluster/vllm-g5-service",
    )
    return t


def _print(table: Table, width: int) -> str:
    out = io.StringIO()
    terminal.print_table(Console(file=out, width=width), table)
    return out.getvalue()


def test_ids_are_never_cut_on_a_narrow_console() -> None:
    text = _print(_resources(), 80)
    assert "…" not in text
    row = next(line for line in text.splitlines() if line.startswith("-"))
    for cell in (
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "GpuServiceTaskCountTargetF657A1B2",
        "service/vllm-g5-cluster/vllm-g5-service",
    ):
        assert cell in row


def test_text_wraps_between_words_never_inside_one() -> None:
    t = Table()
    t.add_column("id", no_wrap=True)
    t.add_column("finding")
    words = ["container_instances[i-0ad34247c1f0e9b21].agentConnected", "is"] * 6
    t.add_row("ECS002", escape(" ".join(words)))
    text = _print(t, 40)
    cells = " ".join(line.split("│")[2] for line in text.splitlines() if line.count("│") == 3)
    assert cells.split() == words


def test_a_table_that_fits_prints_as_rich_prints_it() -> None:
    out = io.StringIO()
    Console(file=out, width=200).print(_resources())
    assert _print(_resources(), 200) == out.getvalue()
