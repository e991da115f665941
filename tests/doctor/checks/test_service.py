"""Link checks of doctor/checks/service.py (the breakage of each check is in cases.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_gpu.doctor.checks import run_checks

from ..snapshots import (
    NAMES,
    validate_snapshot,
)
from .cases import Snap, _status, unable_to_place


def test_placement_failure_before_steady_state_is_history(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"][0]["createdAt"] = "2026-11-29T15:00:00+00:00"  # older than steady
    assert not [f for f in run_checks(s).findings if f.id == "SVC001"]


def test_an_event_without_a_timestamp_sorts_last_not_unknown(healthy: Callable[[], Snap]) -> None:
    # A hand-trimmed snapshot: one old event lost its createdAt. Mixing it
    # with parsed (aware) times must not turn the check into "unknown".
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"].append({"id": "old", "message": "(service x) started 1 tasks"})
    result = {r.check.id: r for r in run_checks(s).results}["SVC001"]
    assert result.status == "finding", result.reason


def test_no_service_is_an_error_and_the_checks_that_read_it_are_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["services"] = []
    validate_snapshot(s)
    report = run_checks(s)
    assert [f.id for f in report.findings] == ["SVC000"]
    assert report.has_error
    status = _status(s)
    for check_id in ("TD002", "PLC001", "SVC001", "ASG002"):
        assert status[check_id].status == "unknown", check_id
        assert "SVC000" in status[check_id].reason


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda svc: svc.update(status="INACTIVE"), "it was deleted"),
        (lambda svc: svc.update(status="DRAINING"), "it is being deleted"),
        (lambda svc: svc.update(serviceName="other"), "only other services"),
    ],
    ids=["inactive", "draining", "another-service"],
)
def test_a_deleted_or_other_service_is_no_service(
    healthy: Callable[[], Snap], change: Callable[[Snap], None], why: str
) -> None:
    s = healthy()
    change(s["services"][0])
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert why in f.fix and NAMES.service in f.fix


def test_a_missing_cluster_is_svc000(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["clusters"] = []
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert f.title == "The cluster does not exist"
    assert f.evidence[0].kind == "clusters" and f.evidence[0].value == "none"
