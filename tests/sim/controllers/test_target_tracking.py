"""The service layer: target tracking's alarms, the scale-in guard, votes combined, the minute."""

from __future__ import annotations

from collections import deque

from simhelp import context, fleet_with, params

from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.base import Vote
from ecs_gpu.sim.controllers.target_tracking import (
    ServiceLayer,
    ServiceScaler,
    scale_in_capacity,
    target_tracking_vote,
)
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries
from ecs_gpu.sim.params import from_spec
from ecs_gpu.spec import parse_spec
from example_specs import G5

LB = '\n[load_balancer]\nscheme = "internal"\n'
ZERO = G5.replace("min_tasks = 1", "min_tasks = 0").replace(
    "min_instances = 1", "min_instances = 0"
)


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


def test_the_cpu_vote_leaves_the_scale_in_only_when_told() -> None:
    p = from_spec(parse_spec(ZERO + LB, "z.toml"))
    cpu = MetricSeries()
    gpu = MetricSeries()
    for _ in range(P.TT_LOW_DATAPOINTS):
        cpu.history.append(p.cpu_idle_percent)
        gpu.history.append(0.0)
    fleet = Fleet(p.tasks_per_instance, p.image_pull_s, p.model_load_s)
    fleet.launch(-600.0, 0.0, 0.0)
    fleet.add_ready_task(fleet.registered[0], 0.0)
    ctx = context(p, fleet, 1)
    for scale_in, want in ((True, 1), (False, 0)):
        layer = ServiceLayer(p.with_(tracking={"cpu_scale_in": scale_in}), 1, [(gpu, 70.0)], cpu)
        layer.on_minute(600.0, ctx)
        assert layer.desired == want


def _filled(value: float, n: int = P.TT_LOW_DATAPOINTS) -> MetricSeries:
    series = MetricSeries()
    for _ in range(n):
        series.history.append(value)
    return series


def test_each_minute_it_votes_on_the_running_count_and_applies_the_count() -> None:
    p = params(max_tasks=8, max_instances=8)
    fleet = fleet_with(2)
    ctx = context(p, fleet, 2)
    # Three GPU datapoints at 140 % of the 70 % target: twice the running tasks.
    layer = ServiceLayer(p, 2, [(_filled(140.0, 3), 70.0)], MetricSeries())
    ctx.service = layer
    layer.on_minute(60.0, ctx)
    assert layer.desired == 4 and fleet.desired_total == 4


def test_a_step_policy_in_alarm_holds_the_minute_s_scale_in() -> None:
    p = params(max_tasks=8, max_instances=8)
    for hold_in, want in ((False, 1), (True, 2)):
        fleet = fleet_with(2)
        ctx = context(p, fleet, 2)
        layer = ServiceLayer(p, 2, [(_filled(10.0), 70.0)], _filled(5.0))
        ctx.service = layer
        ctx.hold_in = hold_in
        layer.on_minute(600.0, ctx)
        assert layer.desired == want
