"""The controllers' rules as pure functions: alarms, proposals, CPR, cooldowns."""

from __future__ import annotations

from collections import deque

import pytest

from ecs_gpu.sim.controllers import (
    AsgScaler,
    ServiceScaler,
    Vote,
    capacity_provider_reservation,
    scale_in_capacity,
    target_tracking_vote,
)
from ecs_gpu.sim.metrics import MetricSeries


def _hist(*values: float | None) -> deque[float | None]:
    return deque(values, maxlen=15)


def test_alarm_high_needs_three_datapoints_above_target() -> None:
    assert not target_tracking_vote(_hist(90, 90), 70, 2).high
    v = target_tracking_vote(_hist(90, 90, 90), 70, 2)
    assert v.high and v.proposal == 3  # ceil(2 x 90 / 70)
    # A missing datapoint breaks the run (INSUFFICIENT_DATA).
    assert not target_tracking_vote(_hist(90, None, 90, 90), 70, 2).high
    assert not target_tracking_vote(_hist(90, 90, 70), 70, 2).high  # not above


def test_alarm_low_needs_fifteen_datapoints_below_point_nine_target() -> None:
    assert not target_tracking_vote(_hist(*[30.0] * 14), 70, 4).low
    v = target_tracking_vote(_hist(*[30.0] * 15), 70, 4)
    assert v.low and v.proposal == 2  # ceil(4 x 30 / 70)
    assert not target_tracking_vote(_hist(*[63.0] * 15), 70, 4).low  # 0.9 x 70 is not below


def test_scale_in_guard_never_pushes_the_metric_above_the_target() -> None:
    # 2 tasks at 37.5 % (1.5 req/s on 2 req/s tasks): one task would read 75 %.
    assert scale_in_capacity(2, 37.5, 70) == 2
    # At 35 % one task reads exactly 70 %, not above: it may go.
    assert scale_in_capacity(2, 35.0, 70) == 1
    # Rounding never removes too much: 4 x 30 / 70 = 1.71 keeps 2 tasks.
    assert scale_in_capacity(4, 30.0, 70) == 2
    assert scale_in_capacity(10, 0.0, 70) == 0
    # Never a scale-in that adds capacity.
    assert scale_in_capacity(3, 69.0, 70) == 3
    for base in range(1, 12):
        for m in (0.0, 5.0, 20.0, 33.3, 50.0, 62.9):
            c = scale_in_capacity(base, m, 70)
            assert c <= base
            assert c == 0 or base * m / c <= 70 + 1e-9
            # One fewer would breach the target: it removes no more than it may.
            assert c == 0 or c == 1 or base * m / (c - 1) > 70


def test_scale_in_reads_the_low_window_not_one_quiet_minute() -> None:
    # Fifteen low datapoints, noisy around 37.5 %; the latest dips to 33 %.
    window = [37.5, 41.0, 36.0, 39.0, 44.0, 35.5, 38.0, 40.0, 37.0, 36.5, 42.0, 38.5, 39.5,
              36.0, 33.0]  # fmt: skip
    guarded = target_tracking_vote(_hist(*window), 70, 2)
    assert guarded.low and guarded.proposal == 2  # 2 x 44 / 70 -> keep both
    latest = target_tracking_vote(_hist(*window), 70, 2, scale_in_basis="latest")
    assert latest.low and latest.proposal == 1  # 2 x 33 / 70 -> remove one
    # A window that is quiet throughout removes the task either way.
    quiet = target_tracking_vote(_hist(*[20.0] * 14, 30.0), 70, 2)
    assert quiet.low and quiet.proposal == 1
    # Scale-out still reads the latest datapoint, as fast as it can.
    assert target_tracking_vote(_hist(20.0, 80.0, 80.0, 140.0), 70, 2).proposal == 4


def test_scale_out_if_any_scale_in_only_if_all() -> None:
    s = ServiceScaler(min_tasks=1, max_tasks=10, scale_in_cooldown_s=300)
    assert s.decide(0, [Vote(True, False, 5), Vote(False, True, 1)], 3) == 5
    assert s.decide(60, [Vote(False, True, 1), Vote(False, False, 3)], 5) == 5
    assert s.decide(120, [Vote(False, True, 2), Vote(False, True, 3)], 5) == 3  # largest wins
    # Scale-in cooldown: no second scale-in for 300 s ...
    assert s.decide(180, [Vote(False, True, 1), Vote(False, True, 1)], 3) == 3
    assert s.decide(420, [Vote(False, True, 1), Vote(False, True, 1)], 3) == 1
    # ... but a scale-out cancels it.
    assert s.decide(480, [Vote(True, False, 4), Vote(False, False, 1)], 1) == 4
    assert s.decide(540, [Vote(False, True, 2), Vote(False, True, 2)], 4) == 2
    # Bounds.
    assert s.decide(600, [Vote(True, False, 50)], 2) == 10
    assert s.decide(9999, [Vote(False, True, 0)], 2) == 1


def test_capacity_provider_reservation() -> None:
    assert capacity_provider_reservation(0, 3, 0, 1) == 200.0
    assert capacity_provider_reservation(0, 0, 0, 1) == 100.0
    assert capacity_provider_reservation(2, 3, 0, 1) == 250.0
    assert capacity_provider_reservation(2, 3, 0, 4) == 150.0
    assert capacity_provider_reservation(4, 0, 1, 1) == 75.0
    assert capacity_provider_reservation(4, 0, 0, 1) == 100.0


def _series(*values: float) -> MetricSeries:
    m = MetricSeries()
    for v in values:
        m.publish(0.0, v)
    m.visible(0.0)
    return m


def test_asg_steps_warmup_floor_and_scale_in_rate() -> None:
    asg = AsgScaler(100, floor_instances=2, max_instances=10, min_step=1, max_step=3,
                    host_cpu_target_percent=None)  # fmt: skip
    assert asg.decide(0, True, _series(200.0), None) == 2  # from zero: two
    assert asg.decide(2, True, _series(300.0), None) == 3  # capped by max step
    assert asg.decide(2, False, _series(300.0), None) == 0  # waits for warm-up
    assert asg.decide(9, True, _series(200.0), None) == 1  # capped by max instances
    # 15 low minutes: remove, at most just under half, never below the floor.
    assert asg.decide(8, True, _series(*[25.0] * 15), None) == -3
    assert asg.decide(3, True, _series(*[34.0] * 15), None) == -1
    assert asg.decide(8, True, _series(*[25.0] * 14), None) == 0


def test_asg_low_datapoints_what_if_waits_longer() -> None:
    # SimParams.cpr_low_datapoints (a what-if: AWS's alarm is 15 of 15).
    asg = AsgScaler(100, floor_instances=1, max_instances=10, min_step=1, max_step=3,
                    host_cpu_target_percent=None, low_datapoints=30)  # fmt: skip
    lows = MetricSeries(window=30)
    for _ in range(29):
        lows.publish(0.0, 25.0)
    lows.visible(0.0)
    assert asg.decide(8, True, lows, None) == 0  # 29 low minutes: not yet
    lows.publish(0.0, 25.0)
    lows.visible(0.0)
    assert asg.decide(8, True, lows, None) == -3


def test_metric_series_delay() -> None:
    m = MetricSeries()
    m.publish(120.0, 50.0)
    m.visible(60.0)
    assert m.latest is None
    m.visible(120.0)
    assert m.latest == pytest.approx(50.0)
