"""The sidecars' series as the engine feeds it: the step's concurrency per RUNNING task."""

from __future__ import annotations

import math

import pytest
from simhelp import CONCURRENCY, METRICS, STEP, context, fleet_with, params

from ecs_gpu.sim.controllers.demand import ConcurrencySeries
from ecs_gpu.sim.metrics import DemandPipeline


def _series(backlog_drain_s: float | None) -> tuple[ConcurrencySeries, DemandPipeline]:
    p = params(scaling=CONCURRENCY, service=METRICS)
    pipeline = DemandPipeline(p, STEP, 2)
    return ConcurrencySeries(pipeline, backlog_drain_s), pipeline


def test_each_step_publishes_the_in_flight_or_the_arrival_rate_estimate() -> None:
    p = params(scaling=CONCURRENCY, service=METRICS)
    fleet = fleet_with(2)
    ctx = context(p, fleet, 2)
    ctx.arrivals, ctx.served = 30.0, 20.0  # 3 req/s arrive, 2 req/s served
    ctx.queue.queue = 10.0
    in_flight, _ = _series(None)
    in_flight.on_served(0.0, ctx)
    # Little's law: 2 req/s x 8 s in service, plus the 10 waiting, over 2 tasks.
    assert ctx.conc == pytest.approx((2.0 * p.mean_request_s + 10.0) / 2)
    arrival, _ = _series(100.0)
    arrival.on_served(0.0, ctx)
    # 3 req/s x 8 s, plus the queue drained over 100 s (x 8 s), over 2 tasks.
    assert ctx.conc == pytest.approx(p.mean_request_s * (3.0 + 10.0 / 100.0) / 2)


def test_no_ready_task_publishes_zero_and_the_minute_closes_the_tracked_datapoint() -> None:
    p = params(scaling=CONCURRENCY, service=METRICS)
    loading = fleet_with(0)
    loading.running = 1  # a task RUNNING, its model still loading: its sidecar sends 0
    ctx = context(p, loading, 1)
    ctx.arrivals = ctx.served = 10.0
    series, pipeline = _series(None)
    series.on_served(0.0, ctx)
    assert ctx.conc == 0.0
    series.on_minute(60.0, ctx)
    pipeline.tracking.visible(math.inf)
    assert pipeline.tracking.latest == 0.0
