"""What a check reports (checks/model.py): a finding with its evidence, results, the report."""

from __future__ import annotations

from typing import Any

from ecs_gpu.checks.model import Check, CheckResult, Evidence, Finding, Report


def _never(_: Any, __: Check) -> list[Finding]:
    raise AssertionError("not run here")


CHECK = Check("ABC001", "service", "warning", "The service is short", ("services",), _never)
OLD = Check("ABC002", "service", "error", "Renamed", ("services",), _never, formerly=("XYZ9",))
EV = Evidence("services", "svc", "desiredCount", 0)


def test_a_finding_takes_the_checks_id_severity_and_title_unless_told_otherwise() -> None:
    f = CHECK.finding([EV], "Fix: raise it")
    assert (f.id, f.severity, f.title, f.evidence, f.fix) == (
        "ABC001",
        "warning",
        "The service is short",
        (EV,),
        "Fix: raise it",
    )
    g = CHECK.finding(iter([EV, EV]), "fix", title="Worse", severity="error")
    assert (g.severity, g.title, g.evidence) == ("error", "Worse", (EV, EV))


def test_a_finding_as_json_names_its_evidence_and_any_former_id() -> None:
    assert CHECK.finding([EV], "fix").as_dict() == {
        "id": "ABC001",
        "severity": "warning",
        "title": "The service is short",
        "evidence": [{"kind": "services", "id": "svc", "field": "desiredCount", "value": 0}],
        "fix": "fix",
    }
    assert OLD.finding([], "fix").as_dict()["formerly"] == ["XYZ9"]


def test_a_report_counts_what_was_checked_and_whether_anything_is_an_error() -> None:
    warn = CHECK.finding([EV], "fix")
    report = Report(
        results=[
            CheckResult(CHECK, "finding", (warn,)),
            CheckResult(OLD, "unknown", missing=("services",), reason="not collected"),
        ]
    )
    assert report.findings == [warn]
    assert [r.check.id for r in report.unknown] == ["ABC002"]
    assert report.checked == 1
    assert not report.has_error
    report.results.append(CheckResult(OLD, "finding", (OLD.finding([EV], "fix"),)))
    assert report.has_error and report.checked == 2


def test_nothing_decided_is_nothing_checked() -> None:
    report = Report(results=[CheckResult(CHECK, "unknown", reason="denied")])
    assert report.checked == 0 and report.findings == [] and not report.has_error


def test_a_report_as_json_lists_findings_unknowns_and_oks_apart() -> None:
    report = Report(
        results=[
            CheckResult(CHECK, "ok"),
            CheckResult(OLD, "unknown", missing=("services",), reason="not collected"),
        ],
        missing_permissions=[{"call": "ecs:DescribeServices"}],
        assumed=["the only cluster"],
    )
    assert report.as_dict() == {
        "findings": [],
        "unknown": [
            {
                "id": "ABC002",
                "title": "Renamed",
                "missing": ["services"],
                "reason": "not collected",
                "formerly": ["XYZ9"],
            }
        ],
        "ok": ["ABC001"],
        "missing_permissions": [{"call": "ecs:DescribeServices"}],
        "collection_errors": [],
        "assumed": ["the only cluster"],
    }
