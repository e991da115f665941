"""infra/signal_words: each signal's missing-metric alarm and dashboard row, in words."""

from __future__ import annotations

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SIGNALS
from ecs_gpu.infra.signal_words import OBSERVED, gpu_missing_description

NAMES = Names("svc")


def test_each_signal_has_an_alarm_and_the_gpu_signals_share_one() -> None:
    assert set(OBSERVED) == set(SIGNALS)
    gpu, conc = OBSERVED["task-gpus"], OBSERVED["concurrency"]
    assert OBSERVED["asg-average"] is gpu
    assert gpu.alarm.construct_id == gpu_metric.MISSING_ALARM_ID
    assert gpu.alarm.name(NAMES) == NAMES.gpu_metric_missing_alarm
    assert conc.alarm.name(NAMES) is None


def test_the_gpu_alarm_says_what_goes_blind() -> None:
    gpu = OBSERVED["task-gpus"].alarm
    assert "GPU target tracking is blind" in gpu.description(NAMES, True)
    assert gpu.description(NAMES, False) == gpu_missing_description(
        NAMES.asg, NAMES.host_log_group, tracked=False
    )
    assert NAMES.task_log_group in OBSERVED["concurrency"].alarm.description(NAMES, True)


def test_only_the_concurrency_series_has_a_row_of_its_own() -> None:
    assert OBSERVED["task-gpus"].panel is None
    panel = OBSERVED["concurrency"].panel
    assert panel is not None
    # What the fast path sees, what target tracking sees, and the busiest task.
    assert [period for period, _, _ in panel.lines] == [
        demand_metric.PUBLISH_INTERVAL_S,
        demand_metric.TRACKING_PERIOD_S,
        demand_metric.PUBLISH_INTERVAL_S,
    ]
    assert panel.target_label(11) == "target 11 per task"
