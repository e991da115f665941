"""The sleep path: to zero after a run of quiet minutes while a task runs, each minute."""

from __future__ import annotations

import pytest
from simhelp import context, fleet_with, params

from ecs_gpu.design.paths import sleep
from ecs_gpu.sim.controllers.sleep import SleepLayer


def _idle_minute(layer: SleepLayer, minute: int, running: int = 1) -> None:
    """A minute with no request and nothing in flight, a task RUNNING or not."""
    layer.sample(0.0, 0.0, running)
    layer.close_minute(minute * 60.0)


def test_the_sleep_alarm_needs_every_minute_quiet_and_keeps_the_minimum() -> None:
    layer = SleepLayer(sleep.SleepPath(minutes=3, in_flight=False), delay_s=60.0)
    for minute in (1, 2, 3):
        _idle_minute(layer, minute)  # a task runs, nothing arrives
    # Three quiet minutes, but the third is not visible until its lag has passed.
    assert layer.decide(180.0, 2, 0) == 2
    assert layer.decide(240.0, 2, 0) == 0 and layer.actions == 1
    # A request in the window holds it; a scheduled minimum is never crossed.
    layer.sample(1.0, 0.0, 1)
    layer.close_minute(240.0)
    assert layer.decide(300.0, 1, 0) == 1
    for minute in (5, 6, 7):
        _idle_minute(layer, minute)
    assert layer.decide(480.0, 1, 1) == 1 and layer.actions == 1
    assert layer.decide(540.0, 2, 1) == 1 and layer.actions == 2


@pytest.mark.parametrize("in_flight", [False, True])
def test_a_request_still_streaming_is_never_cut(in_flight: bool) -> None:
    # No new request for minutes, but one still in flight holds its connection to
    # the load balancer (ActiveConnectionCount): never quiet, with or without the
    # sidecars' in-flight series.
    layer = SleepLayer(sleep.SleepPath(minutes=2, in_flight=in_flight), delay_s=0.0)
    for minute in range(1, 6):
        layer.sample(0.0, 1.0, 1)
        layer.close_minute(minute * 60.0)
        assert layer.decide(minute * 60.0, 1, 0) == 1
    # Once it has finished, two quiet minutes put the service to sleep.
    for minute in (6, 7):
        _idle_minute(layer, minute)
    assert layer.decide(420.0, 1, 0) == 0


def test_a_task_the_wake_started_is_not_put_back_to_sleep_while_it_starts() -> None:
    # One request at zero got its 503 and holds no connection; the task the wake
    # asked for has no CPU datapoint until RUNNING (a cold start outlasts the
    # quiet minutes). Ungated, those minutes would read quiet and stop it.
    layer = SleepLayer(sleep.SleepPath(minutes=2, in_flight=False), delay_s=0.0)
    layer.sample(1.0, 0.0, 0)
    layer.close_minute(60.0)
    for minute in range(2, 14):
        _idle_minute(layer, minute, running=0)
        assert layer.decide(minute * 60.0, 1, 0) == 1
    assert layer.actions == 0
    # Once it runs and stays idle, the quiet minutes count.
    for minute in (14, 15):
        _idle_minute(layer, minute)
    assert layer.decide(900.0, 1, 0) == 0 and layer.actions == 1


def test_each_minute_it_reads_the_step_s_requests_and_sets_zero_once_quiet() -> None:
    p = params()
    fleet = fleet_with(1)
    ctx = context(p, fleet, 1)
    ctx.service.scaler.min_tasks = 0  # a design that may run no task
    layer = SleepLayer(sleep.SleepPath(minutes=2, in_flight=False), delay_s=0.0)
    ctx.arrivals = ctx.served = 1.0  # a request, served: not quiet
    layer.on_served(50.0, ctx)
    layer.on_minute(60.0, ctx)
    assert ctx.service.desired == 1
    ctx.arrivals = ctx.served = 0.0
    for minute in (2, 3):
        layer.on_served(minute * 60.0 - 10.0, ctx)
        layer.on_minute(minute * 60.0, ctx)
    assert ctx.service.desired == 0 == fleet.desired_total and layer.actions == 1
