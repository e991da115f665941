"""How doctor and preflight print findings (cli/findings.py): one table of findings, each with
its evidence and fix, and one of the checks left unknown with why."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console
from rich.table import Table

from ecs_gpu.checks.model import Check, CheckResult, Evidence, Finding
from ecs_gpu.cli.findings import findings_table, unknown_table


def _text(table: Table, width: int = 200) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(table)
    return out.getvalue()


def _never(_: Any, __: Check) -> list[Finding]:
    raise AssertionError("not run here")


CHECK = Check("SVC001", "service", "error", "Tasks cannot be placed", ("services",), _never)


def test_a_finding_row_holds_its_id_severity_title_evidence_and_fix() -> None:
    f = CHECK.finding(
        [Evidence("services", "vllm-g5", "desiredCount", 2)], "raise max_instances [capacity]"
    )
    text = _text(findings_table("Findings", [f]))
    assert "Findings" in text and "SVC001" in text and "error" in text
    assert "Tasks cannot be placed" in text
    assert "- services[vllm-g5].desiredCount = 2" in text
    # What the user wrote in brackets is shown, not read as markup.
    assert "Fix: raise max_instances [capacity]" in text


def test_an_evidence_value_is_json_and_a_long_one_is_cut() -> None:
    f = CHECK.finding(
        [
            Evidence("alarms", "a", "Dimensions", [{"Name": "ClusterName", "Value": "c"}]),
            Evidence("tasks", "t", "stoppedReason", "x" * 400),
        ],
        "fix",
    )
    text = _text(findings_table("Findings", [f]), width=400)
    assert '- alarms[a].Dimensions = [{"Name": "ClusterName", "Value": "c"}]' in text
    assert f"- tasks[t].stoppedReason = {'x' * 157}..." in text
    assert "x" * 158 not in text


def test_an_unknown_check_says_why_or_which_kinds_are_missing() -> None:
    denied = CheckResult(CHECK, "unknown", reason="ecs:DescribeServices denied")
    absent = CheckResult(CHECK, "unknown", missing=("services", "tasks"))
    text = _text(unknown_table([denied, absent]))
    assert "Not checked (unknown)" in text
    assert "ecs:DescribeServices denied" in text and "services, tasks" in text
    assert text.count("SVC001") == 2
