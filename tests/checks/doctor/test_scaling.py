"""Link checks of checks/doctor/scaling.py: the tracked policies (SCL001, SCL004); the
breakage of each check is in tests/support/doctor_cases.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.contracts import demand_metric, gpu_metric
from support.doctor_cases import (
    Snap,
    _concurrency_cms,
    _drop_policy,
    _gpu_cms,
    _ids,
    as_asg_average,
    concurrency_policy_other_series,
)
from support.snapshot_variants import as_concurrency
from support.snapshots import NAMES, validate_snapshot


def test_gpu_policy_in_either_form_is_healthy(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    metrics = _gpu_cms(s)["Metrics"]
    assert [q["Id"] for q in metrics] == [
        gpu_metric.UTILIZATION_ID,
        gpu_metric.RESERVATION_ID,
        gpu_metric.TASK_GPU_EXPRESSION_ID,
    ]
    assert not [f for f in run_checks(s).findings if f.id in ("SCL001", "ALM001")]
    as_asg_average(s)
    validate_snapshot(s)
    assert not [f for f in run_checks(s).findings if f.id in ("SCL001", "ALM001")]


def test_plain_policy_on_a_series_nobody_writes_fires(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_asg_average(s)
    cms = _gpu_cms(s)
    cms["Namespace"] = "ECS/GPU"
    cms["Dimensions"] = [{"Name": "ClusterName", "Value": NAMES.cluster}]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SCL001"]
    assert f.evidence[0].field.endswith("CustomizedMetricSpecification")
    assert "ECS/GPU" in str(f.evidence[0].value) and "nobody writes" in f.fix


def test_task_gpu_divisor_of_another_cluster_fires(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    reserved = _gpu_cms(s)["Metrics"][1]["MetricStat"]["Metric"]
    reserved["Dimensions"] = gpu_metric.reservation_dimensions("default")
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SCL001"]
    assert f.evidence[0].field.endswith("Metrics[1].MetricStat.Metric")
    assert "'Value': 'default'" in str(f.evidence[0].value)
    assert f"ClusterName={NAMES.cluster}" in f.fix and "ecs-gpu deploy" in f.fix


def test_a_concurrency_service_that_works_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    for signal_in_target in (True, False):  # from the spec, or read off the policies
        s = healthy()
        as_concurrency(s, signal_in_target=signal_in_target)
        validate_snapshot(s)
        report = run_checks(s)
        assert [f.as_dict() for f in report.findings] == []
        assert report.unknown == []
        # No GPU policy is no SCL001 warning when the service scales on concurrency.
        assert {"SCL001", "SCL004", "SCL005", "MET005", "TD001"} <= set(report.as_dict()["ok"])


@pytest.mark.parametrize("signal_in_target", [True, False], ids=["spec", "policies"])
def test_concurrency_policy_on_another_series_is_scl004(
    healthy: Callable[[], Snap], signal_in_target: bool
) -> None:
    s = healthy()
    concurrency_policy_other_series(s)
    if not signal_in_target:
        del s[COLLECTION_KEY]["target"]["signal"]
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "SCL004")
    assert f.severity == "error"
    cluster_service = demand_metric.cli_dimensions(NAMES.cluster, NAMES.service)
    assert f"dimensions ClusterName=other,ServiceName=other (want {cluster_service})" in f.fix
    assert "ecs-gpu deploy" in f.fix


def test_concurrency_policy_on_another_statistic_is_scl004(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _concurrency_cms(s)["Statistic"] = "Maximum"
    f = next(f for f in run_checks(s).findings if f.id == "SCL004")
    assert f"statistic Maximum (want {demand_metric.STATISTIC})" in f.fix
    assert f.evidence[0].value["Statistic"] == "Maximum"


def test_the_deployed_capped_concurrency_policy_passes_and_a_wrong_series_inside_fails(
    healthy: Callable[[], Snap],
) -> None:
    # With the fast path on, the template writes the policy as metric math that
    # caps the sidecars' series at the target (demand_metric.capped_tracking_metrics).
    s = healthy()
    as_concurrency(s)
    policy = next(p for p in s["scaling_policies"] if p["PolicyName"] == "concurrency")
    cfg = policy["TargetTrackingScalingPolicyConfiguration"]
    capped = demand_metric.capped_tracking_metrics(NAMES.cluster, NAMES.service, 8.0)
    cfg["CustomizedMetricSpecification"] = {"Metrics": capped}
    assert "SCL004" not in _ids(s)
    capped[0]["MetricStat"]["Metric"]["Dimensions"][0]["Value"] = "other"
    assert "SCL004" in _ids(s)


def test_missing_concurrency_policy_is_scl004_not_gpu_advice(healthy: Callable[[], Snap]) -> None:
    # The spec scales on concurrency and only the CPU policy (and the fast path) is left.
    s = healthy()
    as_concurrency(s)
    _drop_policy(s, "concurrency")
    findings = [f for f in run_checks(s).findings if f.id in ("SCL001", "SCL004")]
    assert [(f.id, f.severity) for f in findings] == [("SCL004", "error")]
    assert findings[0].title == "No target-tracking policy scales the service on concurrency"
    assert findings[0].evidence[0].value == ["cpu", "fast-scale-out", "fast-scale-in"]
    assert demand_metric.METRIC_NAME in findings[0].fix and "ecs-gpu deploy" in findings[0].fix


def test_gpu_guard_without_a_gpu_policy_is_scl001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    assert "SCL001" not in _ids(s)  # gpu_guard off: no GPU policy is right
    s[COLLECTION_KEY]["target"]["gpu_guard"] = True
    f = next(f for f in run_checks(s).findings if f.id == "SCL001")
    assert f.severity == "warning" and f.title == "No GPU guard policy on the service"
    assert "gpu_guard = true" in f.fix
