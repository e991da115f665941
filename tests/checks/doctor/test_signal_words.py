"""checks/doctor/signal_words: what doctor checks of each signal's series, and its words."""

from __future__ import annotations

from ecs_gpu.checks.doctor.signal_words import CHECKED, Deployed
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SIGNALS, SignalPlan

NAMES = Names("svc")
AT = Deployed((NAMES.asg,), (NAMES.cluster,), NAMES.cluster, NAMES.service)


def test_each_signal_has_its_checks_and_the_gpu_signals_share_theirs() -> None:
    assert set(CHECKED) == set(SIGNALS)
    gpu = {CHECKED[s].arrives.id for s in SIGNALS if SignalPlan.from_parts(s, False).tracks_gpu}
    assert len(gpu) == 1
    assert len({c.arrives.id for c in CHECKED.values()}) == 2
    assert len({c.tracked.id for c in CHECKED.values()}) == 2


def test_the_policies_meant_as_each_series_are_judged_against_the_contract() -> None:
    gpu, conc = CHECKED["task-gpus"], CHECKED["concurrency"]
    agent = {
        "Namespace": gpu_metric.NAMESPACE,
        "MetricName": gpu_metric.UTILIZATION,
        "Dimensions": gpu_metric.dimensions(NAMES.asg),
    }
    sidecars = {
        "Namespace": demand_metric.NAMESPACE,
        "MetricName": demand_metric.METRIC_NAME,
        "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
    }
    assert gpu.judge(agent, "Average", AT) == [] and conc.judge(agent, "Average", AT) is None
    assert conc.judge(sidecars, "Average", AT) == [] and gpu.judge(sidecars, "Average", AT) is None
    (fix,) = conc.judge(sidecars, "Maximum", AT) or [None]
    assert fix is not None and "statistic Maximum (want Average)" in fix
    # The agent's namespace alone makes a policy meant as the GPU series (alarm.py and the
    # plan's policies read it so), though a metric not named as one is not judged.
    other = {"Namespace": gpu_metric.NAMESPACE, "MetricName": "cpu_usage_active"}
    assert gpu.meant_as(other) and gpu.judge(other, "Average", AT) is None


def test_the_findings_name_the_series_and_its_publisher() -> None:
    title, fix = CHECKED["concurrency"].alarm_no_data("al-1", NAMES)
    assert title == "Concurrency scaling alarm has no data"
    assert "al-1" in fix and demand_metric.where(NAMES.cluster, NAMES.service) in fix
    assert CHECKED["concurrency"].untracked is None
    untracked = CHECKED["asg-average"].untracked
    assert untracked is not None and "the GPU missing-metric alarm" in untracked[1](None)
    assert f"{demand_metric.SIDECAR_NAME} container" in CHECKED["concurrency"].remedy(2)
    title, severity, _ = CHECKED["task-gpus"].missing_policy(AT, True)
    assert (title, severity) == ("No GPU guard policy on the service", "warning")
