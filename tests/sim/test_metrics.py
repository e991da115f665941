"""The metric pipeline: a series' datapoints become visible to alarms after their lag."""

from __future__ import annotations

import pytest

from ecs_gpu.sim.metrics import MetricSeries


def test_metric_series_delay() -> None:
    m = MetricSeries()
    m.publish(120.0, 50.0)
    m.visible(60.0)
    assert m.latest is None
    m.visible(120.0)
    assert m.latest == pytest.approx(50.0)
