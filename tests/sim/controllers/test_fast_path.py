"""The fast path: its 10-second alarm, the step policy's cooldown, and each step's evaluation."""

from __future__ import annotations

import dataclasses
import math
from collections import deque

import pytest
from simhelp import ISSUE8, METRICS, context, fleet_with, params

from ecs_gpu.sim.controllers.fast_path import FastPathLayer
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.params import SimParams


def _p() -> SimParams:
    return params(max_instances=8, max_tasks=8, scaling=ISSUE8, service=METRICS)


def _fleet(running: int) -> Fleet:
    return fleet_with(running)


def test_fast_path_cooldown_lets_only_a_larger_step_through() -> None:
    fp = _p().fast_path
    assert fp is not None
    layer = FastPathLayer(fp, max_tasks=64)
    fleet = _fleet(4)
    low = fp.threshold * 1.05  # first step: +100 %
    high = fp.threshold * 2.5  # 150 % over: +400 %
    hist: deque[float | None] = deque([low, low], maxlen=2)
    assert layer.decide(0.0, fleet, 4, hist) == 8
    # Still in ALARM: re-invoked once a minute, not every 10 s.
    assert layer.decide(10.0, fleet, 8, deque([high, high])) == 8
    # A minute later, in the cooldown, the same step adds nothing ...
    assert layer.decide(60.0, fleet, 8, hist) == 8
    # ... and a larger one adds only its difference: 400 % - 100 % of 4.
    assert layer.decide(120.0, fleet, 8, deque([high, high])) == 20
    # Back to OK, then into ALARM again after the cooldown: from the running count.
    assert layer.decide(130.0, fleet, 20, deque([1.0, 1.0])) == 20
    t = 120.0 + fp.cooldown_s
    assert layer.decide(t, fleet, 20, hist) == 20  # running 4 + 4 < desired 20
    assert layer.actions == 2


def test_fast_path_reduces_the_window_by_its_aggregation() -> None:
    # A 20-s burst: both datapoints breach, the second less. Maximum (the
    # template's) sizes the step from the larger, Minimum from what both reached.
    fp = _p().fast_path
    assert fp is not None
    burst: deque[float | None] = deque([fp.threshold * 1.5, fp.threshold * 1.1], maxlen=2)
    by = {
        agg: FastPathLayer(dataclasses.replace(fp, aggregation=agg), 64).alarm_value(burst)
        for agg in ("Maximum", "Minimum", "Average")
    }
    assert by == pytest.approx(
        {
            "Maximum": fp.threshold * 1.5,
            "Minimum": fp.threshold * 1.1,
            "Average": fp.threshold * 1.3,
        }
    )
    # One breaching datapoint of two raises no alarm, whatever the aggregation.
    one: deque[float | None] = deque([1.0, fp.threshold * 3], maxlen=2)
    assert (
        FastPathLayer(dataclasses.replace(fp, aggregation="Minimum"), 64).alarm_value(one) is None
    )
    fleet = _fleet(10)
    assert FastPathLayer(fp, 64).decide(0.0, fleet, 10, burst) > FastPathLayer(
        dataclasses.replace(fp, aggregation="Minimum"), 64
    ).decide(0.0, fleet, 10, burst)


def test_fast_path_needs_two_breaching_datapoints() -> None:
    fp = _p().fast_path
    assert fp is not None
    layer = FastPathLayer(fp, max_tasks=8)
    fleet = _fleet(2)
    one: deque[float | None] = deque([1.0, fp.threshold * 3], maxlen=2)
    assert layer.decide(0.0, fleet, 2, one) == 2
    missing: deque[float | None] = deque([None, fp.threshold * 3], maxlen=2)
    assert layer.decide(10.0, fleet, 2, missing) == 2
    # Capped at max_tasks.
    assert layer.decide(20.0, fleet, 2, deque([fp.threshold * 3] * 2)) == 8


def test_cooldown_same_step_adds_nothing_after_running_grew() -> None:
    fp = _p().fast_path
    assert fp is not None
    layer = FastPathLayer(fp, max_tasks=64)
    low: deque[float | None] = deque([fp.threshold * 1.05] * 2, maxlen=2)  # +100 %
    assert layer.decide(0.0, _fleet(4), 4, low) == 8
    # The 4 added tasks run now; the same step, still in the cooldown, is
    # already answered (its +100 % was of the 4 it scaled from).
    assert layer.decide(60.0, _fleet(8), 8, low) == 8
    assert layer.actions == 1


def test_each_step_it_scales_out_from_its_alarm_and_holds_the_minute_s_scale_in() -> None:
    p = _p()
    fp = p.fast_path
    assert fp is not None
    fleet = _fleet(4)
    ctx = context(p, fleet, 4)
    layer = FastPathLayer(fp, p.max_tasks)
    for t in (0.0, 10.0):
        layer.series.publish(t, fp.threshold * 1.05)  # +100 %
    layer.on_minute(10.0, ctx)
    assert ctx.hold_in  # in ALARM at the minute: target tracking's scale-in waits
    layer.on_step(10.0, ctx)
    assert ctx.service.desired == 8 == fleet.desired_total and layer.actions == 1
    layer.series.publish(20.0, 1.0)
    layer.on_minute(20.0, ctx)
    assert not ctx.hold_in


def test_a_scheduled_maximum_caps_the_step_and_the_what_if_ends_the_cooldown() -> None:
    p = _p()
    fp = p.fast_path
    assert fp is not None
    for ends, last_scale_in in ((False, 0.0), (True, -math.inf)):
        ctx = context(p, _fleet(2), 2)
        ctx.service.scaler.max_tasks = 3  # a scheduled action lowered the maximum
        ctx.service.scaler.last_scale_in = 0.0
        layer = FastPathLayer(fp, p.max_tasks, ends_scale_in_cooldown=ends)
        for t in (0.0, 10.0):
            layer.series.publish(t, fp.threshold * 2.5)  # +400 %
        layer.on_step(10.0, ctx)
        assert ctx.service.desired == 3
        assert ctx.service.scaler.last_scale_in == last_scale_in
