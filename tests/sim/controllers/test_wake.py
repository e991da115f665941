"""The wake path: its alarm on the load balancer's requests while no task runs, each minute."""

from __future__ import annotations

from simhelp import context, fleet_with, params

from ecs_gpu.design.paths import wake
from ecs_gpu.sim.controllers.base import Context
from ecs_gpu.sim.controllers.wake import WakeLayer


def test_the_wake_alarm_reads_requests_only_while_no_task_runs() -> None:
    wp = wake.WakePath(cooldown_s=300)
    layer = WakeLayer(wp, delay_s=60.0)
    layer.sample(3.0, 0)
    layer.close_minute(60.0)
    assert layer.decide(60.0, 0, 0, 4) == 0  # not visible yet: the ALB's lag
    assert layer.decide(120.0, 0, 0, 4) == 1 and layer.actions == 1
    # Within the cooldown nothing more, whatever the alarm reads.
    layer.sample(3.0, 0)
    layer.close_minute(120.0)
    assert layer.decide(180.0, 0, 1, 4) == 1 and layer.actions == 1
    # A minute with a RUNNING task reads 0; one without requests publishes nothing.
    layer.sample(9.0, 1)
    layer.close_minute(180.0)
    layer.series.visible(240.0)
    assert layer.series.latest == 0.0
    layer.close_minute(240.0)
    layer.series.visible(300.0)
    assert layer.series.latest is None
    assert layer.decide(900.0, 1, 1, 4) == 1 and layer.actions == 1


def test_at_max_tasks_zero_the_wake_adds_nothing() -> None:
    layer = WakeLayer(wake.WakePath(cooldown_s=0), delay_s=0.0)
    layer.sample(5.0, 0)
    layer.close_minute(60.0)
    assert layer.decide(60.0, 0, 0, 0) == 0 and layer.actions == 0


def test_the_model_keeps_the_wake_cooldown_through_a_scale_in() -> None:
    # The [gap]: AWS says a scale-out ends a scale-in cooldown, never the reverse.
    # The model's assumption: the sleep's 0 leaves the wake's cooldown running.
    layer = WakeLayer(wake.WakePath(cooldown_s=600), delay_s=0.0)
    layer.sample(1.0, 0)
    layer.close_minute(60.0)
    assert layer.decide(60.0, 0, 0, 4) == 1
    # The task ran and the sleep set 0 (desired 0, nothing RUNNING); a new request.
    layer.sample(1.0, 0)
    layer.close_minute(600.0)
    assert layer.decide(600.0, 0, 0, 4) == 0 and layer.actions == 1
    layer.sample(1.0, 0)
    layer.close_minute(660.0)
    assert layer.decide(660.0, 0, 0, 4) == 1 and layer.actions == 2


def test_each_minute_it_wakes_the_service_the_requests_at_zero_ask_for() -> None:
    p = params()
    fleet = fleet_with(0)
    ctx: Context = context(p, fleet, 0)
    layer = WakeLayer(wake.WakePath(cooldown_s=300), delay_s=0.0)
    ctx.arrivals = 2.0
    layer.on_served(50.0, ctx)  # two requests at the load balancer, no task RUNNING
    layer.on_minute(60.0, ctx)
    assert ctx.service.desired == 1 == fleet.desired_total and layer.actions == 1
