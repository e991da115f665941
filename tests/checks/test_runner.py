"""Every check through the runner: quiet on the healthy snapshot, fires with evidence and
fix on its breakage, unknown when its kinds are absent."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import CHECKS, CHECKS_BY_ID, run_checks
from support.doctor_cases import (
    CASES,
    Snap,
    agent_cannot_stat,
    metric_missing,
    no_gpu_registered,
    warm_instance_stuck,
)
from support.snapshot_variants import as_concurrency
from support.snapshots import validate_snapshot

# Every finding rendered here quotes only commands the AWS CLI accepts (as in checks/doctor/).
pytestmark = pytest.mark.usefixtures("fixes_quote_runnable_commands")


def test_every_check_has_a_broken_case() -> None:
    assert sorted(c[0] for c in CASES) == sorted(c.id for c in CHECKS)


def test_healthy_snapshot_is_real_and_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    validate_snapshot(s)
    report = run_checks(s)
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert not report.has_error
    assert {r.status for r in report.results} == {"ok"}


@pytest.mark.parametrize(
    ("check_id", "breakage", "kind", "field", "value", "fix"), CASES, ids=[c[0] for c in CASES]
)
def test_broken_snapshot_fires_with_evidence_and_fix(
    healthy: Callable[[], Snap],
    check_id: str,
    breakage: Callable[[Snap], None],
    kind: str,
    field: str,
    value: str,
    fix: str,
) -> None:
    s = healthy()
    breakage(s)
    validate_snapshot(s)  # still a shape AWS returns
    report = run_checks(s)
    mine = [f for f in report.findings if f.id == check_id]
    assert mine, f"{check_id} did not fire; findings: {[f.id for f in report.findings]}"
    f = mine[0]
    assert f.severity == CHECKS_BY_ID[check_id].severity or check_id in ("ALM002", "SCL001")
    assert fix in f.fix
    assert any(e.kind == kind and field in e.field and value in str(e.value) for e in f.evidence), (
        f.evidence
    )


def test_findings_follow_the_chain_order(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    metric_missing(s)
    no_gpu_registered(s)
    agent_cannot_stat(s)
    ids = [f.id for f in run_checks(s).findings]
    assert ids.index("ECS003") < ids.index("MET001") < ids.index("HOST002")


def test_absent_kind_is_unknown_never_ok(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["host_probes"]
    s[COLLECTION_KEY]["probe_hosts"] = False
    del s["metric_data"]
    report = run_checks(s)
    status = {r.check.id: r for r in report.results}
    assert status["MET001"].status == "unknown"
    assert status["MET001"].missing == ("metric_data",)
    assert status["HOST002"].status == "unknown"
    assert "--probe-hosts" in status["HOST002"].reason
    assert status["ECS003"].status == "ok"


def test_empty_snapshot_is_all_unknown() -> None:
    report = run_checks({})
    assert {r.status for r in report.results} == {"unknown"}
    assert not report.has_error


def test_denied_kind_names_the_permission(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["scaling_activities"]
    s[COLLECTION_KEY]["denied"].append(
        {
            "call": "autoscaling DescribeScalingActivities",
            "permission": "autoscaling:DescribeScalingActivities",
            "code": "AccessDenied",
            "kinds": ["scaling_activities"],
        }
    )
    report = run_checks(s)
    asg001 = next(r for r in report.results if r.check.id == "ASG001")
    assert asg001.status == "unknown"
    assert "autoscaling:DescribeScalingActivities" in asg001.reason
    assert report.as_dict()["missing_permissions"][0]["permission"] == (
        "autoscaling:DescribeScalingActivities"
    )


def _warm_pool_waiting(s: Snap) -> None:
    warm_instance_stuck(s)
    s["auto_scaling_groups"][0]["Instances"][0]["LifecycleState"] = "Pending:Wait"


@pytest.mark.parametrize(
    "variant",
    [lambda s: None, as_concurrency, _warm_pool_waiting],
    ids=["healthy", "concurrency", "warm-pool"],
)
def test_no_check_crashes_when_any_field_is_missing(
    healthy: Callable[[], Snap], variant: Callable[[Snap], None]
) -> None:
    """Drop each field of each item in turn: every check decides or says Unknown.

    Calls the check functions directly, so run_check's safety net for
    malformed snapshots cannot hide a crash here.
    """
    from ecs_gpu.checks.doctor import Unknown

    base = healthy()
    variant(base)
    crashes = []
    for kind, value in base.items():
        # Object kinds (warm_pools): each output is one item, under its key.
        keys: list[Any] = list(value) if kind == "warm_pools" else []
        if not keys and isinstance(value, list):
            keys = list(range(len(value)))
        for i in keys:
            for key in list(value[i]):
                s = copy.deepcopy(base)
                del s[kind][i][key]
                for check in CHECKS:
                    try:
                        check.fn(s, check)
                    except Unknown:
                        pass
                    except Exception as e:
                        crashes.append((check.id, kind, key, repr(e)))
    assert crashes == []


def test_malformed_snapshot_value_is_unknown_not_a_crash(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["container_instances"] = [{"status": "ACTIVE", "registeredResources": "GPU"}]
    report = run_checks(s)
    gpu001 = next(r for r in report.results if r.check.id == "ECS003")
    assert gpu001.status == "unknown" and "mistypes" in gpu001.reason
