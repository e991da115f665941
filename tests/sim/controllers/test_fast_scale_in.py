"""The fast scale-in: its low alarm, its cut, and the largest capacity fired at one instant."""

from __future__ import annotations

from collections import deque

from simhelp import CONCURRENCY, METRICS, STEP, context, fleet_with, params

from ecs_gpu.sim.controllers.fast_scale_in import FastScaleInLayer
from ecs_gpu.sim.controllers.target_tracking import ServiceLayer
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import DemandPipeline, MetricSeries
from ecs_gpu.sim.params import SimParams

ON = CONCURRENCY + "\nfast_scale_in = true"


def _p() -> SimParams:
    return params(max_instances=8, max_tasks=8, scaling=ON, service=METRICS)


def _low(value: float, n: int = 12) -> deque[float | None]:
    return deque([value] * n, maxlen=12)


def test_alarm_needs_every_datapoint_low_and_invokes_once_a_minute() -> None:
    fsi = _p().fast_scale_in
    assert fsi is not None
    layer = FastScaleInLayer(fsi, min_tasks=1)
    assert layer.alarm_value(_low(5.0, 11)) is None  # not 12 yet
    at_target = _low(5.0)
    at_target[3] = fsi.threshold
    assert layer.alarm_value(at_target) is None
    gap = _low(5.0)
    gap[0] = None  # missing: not breaching
    assert layer.alarm_value(gap) is None
    mixed = _low(3.0)
    mixed[5] = 9.0
    assert layer.alarm_value(mixed) == 9.0  # the Maximum picks the step
    assert layer.proposal(0.0, 8, 8, mixed) == 7  # 9.0: 10 % of 8 rounds to the minimum 1
    layer.took(0.0)
    assert layer.proposal(10.0, 7, 7, _low(3.0)) is None  # in ALARM: next invocation at 60 s
    assert layer.proposal(60.0, 7, 7, _low(3.0)) == 6  # 25 % of 7
    layer.took(60.0)
    assert layer.actions == 2
    floor = FastScaleInLayer(fsi, min_tasks=6)
    assert floor.proposal(0.0, 7, 7, _low(0.0)) == 6
    assert floor.proposal(60.0, 6, 6, _low(0.0)) is None  # min_tasks


def _instant(p: SimParams, desired_now: int) -> tuple[int, int]:
    """One evaluation with 8 tasks before the instant and ``desired_now`` after the
    other policies (target tracking, the fast path) fired: (desired, step actions)."""
    fsi = p.fast_scale_in
    assert fsi is not None
    fleet = Fleet(8, 0.0, 0.0)
    inst = fleet.launch(0.0, 0.0, 0.0)
    for _ in range(8):
        fleet.add_ready_task(inst, 0.0)
    service = ServiceLayer(p, desired_now, [], MetricSeries())
    demand = DemandPipeline(p, STEP, 2)
    for k in range(12):
        demand.scale_in.publish(k * 10.0, 2.0)  # 25 % band
    layer = FastScaleInLayer(fsi, p.min_tasks, demand.scale_in)
    layer.evaluate(600.0, fleet, service, before=8)
    return service.desired, layer.actions


def test_engine_lets_the_larger_capacity_fired_at_the_same_instant_win() -> None:
    p = _p()
    assert _instant(p, 8) == (6, 1)  # the step alone: -25 %
    assert _instant(p, 9) == (9, 0)  # a scale-out at the same instant wins
    assert _instant(p, 4) == (6, 1)  # target tracking cut deeper: the smaller cut wins


def test_each_step_it_cuts_from_the_count_before_the_instant_s_policies() -> None:
    p = _p()
    fsi = p.fast_scale_in
    assert fsi is not None
    fleet = fleet_with(8)
    ctx = context(p, fleet, 8)
    layer = FastScaleInLayer(fsi, p.min_tasks)
    for k in range(12):
        layer.series.publish(k * 10.0, 2.0)  # 25 % band
    layer.on_step_start(600.0, ctx)  # 8 before any policy of this instant
    ctx.service.desired = 9  # a scale-out fired at the same instant: it wins
    layer.on_step(600.0, ctx)
    assert ctx.service.desired == 9 and layer.actions == 0
    layer.on_step_start(660.0, ctx)
    layer.on_step(660.0, ctx)
    assert ctx.service.desired == 6 == fleet.desired_total  # -25 % of the 8 running
    assert layer.summary(ctx) == {"fast_scale_ins": 1}
