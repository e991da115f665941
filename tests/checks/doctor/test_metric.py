"""Link checks of checks/doctor/metric.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.contracts import gpu_metric
from support.doctor_cases import (
    Snap,
    _reservation,
    as_asg_average,
    concurrency_metric_missing,
    metric_missing,
    reservation_missing,
)
from support.snapshot_variants import as_concurrency
from support.snapshots import NAMES, validate_snapshot


def _met004(s: Snap) -> list[Any]:
    return [f for f in run_checks(s).findings if f.id == "MET004"]


def test_tracked_signal_empty_while_tasks_run_points_at_the_cluster_series(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _reservation(s)["Timestamps"], _reservation(s)["Values"] = [], []
    validate_snapshot(s)
    (f,) = _met004(s)
    assert f.severity == "error"
    assert "run doctor again" in f.fix and f"ClusterName={NAMES.cluster}" in f.fix
    assert "min_tasks" not in f.fix
    assert f.evidence[0].id == gpu_metric.RESERVATION_METRIC and f.evidence[0].value == []
    # The agent's datapoints are shown, proving the host side works.
    assert f.evidence[1].id == gpu_metric.UTILIZATION and f.evidence[1].value == [41.0, 41.0]


def test_tracked_signal_empty_on_an_idle_service_is_a_warning(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    reservation_missing(s)
    s["services"][0]["desiredCount"] = 0
    (f,) = _met004(s)
    assert f.severity == "warning"
    # Scaled to zero on purpose: keep a task, or track the agent's series alone.
    assert "min_tasks >= 1" in f.fix and 'gpu_metric = "asg-average"' in f.fix


def test_tracked_signal_is_quiet_when_nothing_is_written_or_policy_is_asg_average(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    metric_missing(s)  # the agent writes nothing: MET001's finding, not MET004's
    ids = [f.id for f in run_checks(s).findings]
    assert "MET001" in ids and "MET004" not in ids
    s = healthy()
    reservation_missing(s)
    as_asg_average(s)  # the plain policy does not read GPUReservation at all
    validate_snapshot(s)
    assert _met004(s) == []
    assert {r.check.id: r.status for r in run_checks(s).results}["MET004"] == "ok"


def test_tracked_signal_unknown_on_a_snapshot_without_the_reservation_series(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["metric_data"] = [r for r in s["metric_data"] if r["Label"] != gpu_metric.RESERVATION_METRIC]
    result = {r.check.id: r for r in run_checks(s).results}["MET004"]
    assert result.status == "unknown"
    assert gpu_metric.RESERVATION_METRIC in result.reason


def test_concurrency_checks_read_the_signal_off_the_policies(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_metric_missing(s)
    del s[COLLECTION_KEY]["target"]["signal"]
    assert "MET005" in {f.id for f in run_checks(s).findings}
    del s["scaling_policies"]
    met005 = next(r for r in run_checks(s).results if r.check.id == "MET005")
    assert met005.status == "unknown" and "scales on concurrency" in met005.reason


def test_the_spec_signal_wins_over_the_policies(healthy: Callable[[], Snap]) -> None:
    # The spec says task-gpus: a stray concurrency policy does not make MET005 fire.
    s = healthy()
    concurrency_metric_missing(s)
    s[COLLECTION_KEY]["target"]["signal"] = "task-gpus"
    assert not {"MET005", "TD001"} & {f.id for f in run_checks(s).findings}


def test_concurrency_series_of_an_idle_service_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_metric_missing(s)
    s["services"][0]["desiredCount"] = s["services"][0]["runningCount"] = 0
    f = next(f for f in run_checks(s).findings if f.id == "MET005")
    assert f.severity == "warning" and "scaled to 0" in f.fix
    s["services"][0]["desiredCount"] = 1
    f = next(f for f in run_checks(s).findings if f.id == "MET005")
    assert f.severity == "error" and "PLC002, SVC001, SVC002" in f.fix


def test_concurrency_series_absent_from_an_old_snapshot_is_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_concurrency(s)
    s["metric_data"] = [r for r in s["metric_data"] if r["Id"] not in ("c0", "c1")]
    met005 = next(r for r in run_checks(s).results if r.check.id == "MET005")
    assert met005.status == "unknown" and "collect it again" in met005.reason


def _gpu_series_missing(s: Snap) -> None:
    for r in s["metric_data"]:
        if r["Label"] in gpu_metric.METRIC_NAMES:
            r["Timestamps"], r["Values"] = [], []


@pytest.mark.parametrize("signal_in_target", [True, False], ids=["spec", "policies"])
def test_gpu_series_no_policy_reads_is_a_met001_warning(
    healthy: Callable[[], Snap], signal_in_target: bool
) -> None:
    s = healthy()
    as_concurrency(s, signal_in_target=signal_in_target)
    _gpu_series_missing(s)
    f = next(f for f in run_checks(s).findings if f.id == "MET001")
    assert f.severity == "warning"
    assert "nobody writes" not in f.fix and "No scaling policy reads it" in f.fix
    assert NAMES.gpu_metric_missing_alarm in f.fix and "dashboard" in f.fix
    # With gpu_guard a policy does read it: the error it always was.
    s[COLLECTION_KEY]["target"]["signal"] = "concurrency"
    s[COLLECTION_KEY]["target"]["gpu_guard"] = True
    f = next(f for f in run_checks(s).findings if f.id == "MET001")
    assert f.severity == "error" and "the scaling policy tracks a series nobody writes" in f.fix


def _asleep(s: Snap, *, hosts: bool) -> Snap:
    """Scaled to zero by design: MinCapacity 0, no task, and (unless ``hosts``) the
    group emptied by managed scaling; no GPU series in the window."""
    s["scalable_targets"][0]["MinCapacity"] = 0
    s["services"][0].update(desiredCount=0, runningCount=0)
    s["services"][0]["deployments"][0].update(desiredCount=0, runningCount=0)
    s["tasks"] = []
    if not hosts:
        s["auto_scaling_groups"][0].update(MinSize=0, DesiredCapacity=0, Instances=[])
        s["container_instances"], s["instances"] = [], []
    metric_missing(s)
    validate_snapshot(s)
    return s


def test_a_service_asleep_on_an_empty_group_has_no_gpu_series_by_design(
    healthy: Callable[[], Snap],
) -> None:
    # No host runs the agent: the template's missing-metric alarm reads 0 then too.
    assert not [f for f in run_checks(_asleep(healthy(), hosts=False)).findings if f.id == "MET001"]


def test_a_host_left_running_while_asleep_must_still_publish(
    healthy: Callable[[], Snap],
) -> None:
    # The agent runs on the host whether or not a task does.
    (f,) = [f for f in run_checks(_asleep(healthy(), hosts=True)).findings if f.id == "MET001"]
    assert "--probe-hosts" in f.fix
