"""How the predict commands print (cli/predict_render.py): the bundled-trace table, plan's
validation, and a progress bar only where one is readable."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from ecs_gpu.cli import main, predict_render
from ecs_gpu.template.validate import Finding, ValidationReport


def _console(*, terminal: bool = False) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, force_terminal=terminal, color_system=None), out


def test_a_progress_bar_only_on_a_terminal_and_only_for_a_long_run() -> None:
    pipe, _ = _console()
    with predict_render.progress(pipe, "simulating", 10**6) as update:
        assert update is None
    tty, _ = _console(terminal=True)
    with predict_render.progress(tty, "simulating", 100) as update:
        assert update is None
    with predict_render.progress(tty, "simulating", 10**6) as update:
        assert update is not None
        update(500_000, 10**6)


def test_a_clean_validation_says_how_many_resources_and_counts_none() -> None:
    console, out = _console()
    note = Finding("note", "N1", "info", "Service", "the model loads for 40 min")
    report = ValidationReport({"Resources": {"A": {}, "B": {}}}, notes=[note])
    assert predict_render.render_validation(console, report) == 0
    assert out.getvalue().splitlines() == [
        "note: the model loads for 40 min",
        "template: synthesized, 2 resources, no findings",
    ]


def test_each_finding_of_a_validation_is_a_line_and_they_are_counted() -> None:
    console, out = _console()
    findings = [
        Finding("cfn-lint", "E3012", "error", "Asg", "MaxSize must be a string"),
        Finding("cdk-nag", "AwsSolutions-IAM5", "error", "Role", "wildcard [*] permission"),
    ]
    assert predict_render.render_validation(console, ValidationReport({}, findings)) == 2
    assert out.getvalue().splitlines() == [
        "template: 2 finding(s)",
        "  cfn-lint E3012 (error) Asg: MaxSize must be a string",
        "  cdk-nag AwsSolutions-IAM5 (error) Role: wildcard [*] permission",
    ]


def test_the_traces_table_has_a_row_per_bundled_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["traces", "--json", "-"]) == 0
    listed = json.loads(capsys.readouterr().out)
    # A simulation whose JSON goes to standard output sends the predict console's
    # tables to standard error; the next command in this process sets its own.
    spec = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"
    assert main(["simulate", str(spec), "--trace", "azure2023-conv", "--json", "-"]) == 0
    capsys.readouterr()
    assert main(["traces"]) == 0
    printed = capsys.readouterr()
    table = printed.out
    assert "Bundled traces (--trace NAME)" in table
    assert "Bundled traces" not in printed.err
    for t in listed:
        row = next(line for line in table.splitlines() if line.split()[:1] == [t["name"]])
        assert t["spdx"] in row and t["shape"] in row
        # The span: minutes under a day, else days.
        span = t["span_s"]
        assert (f"{span / 60:.0f} min" if span < 86400 else " day") in row
