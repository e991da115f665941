"""The load balancer's requests per target, fed each step and closed each minute."""

from __future__ import annotations

from simhelp import context, fleet_with, params

from ecs_gpu.sim.controllers.request_count import RequestCount
from ecs_gpu.sim.metrics import RequestCountSeries


def test_each_minute_publishes_the_requests_over_the_targets_that_served() -> None:
    p = params()
    fleet = fleet_with(2)
    ctx = context(p, fleet, 2)
    counts = RequestCount(RequestCountSeries(delay_s=0.0))
    for arrivals in (30.0, 50.0):
        ctx.arrivals = arrivals
        counts.on_served(0.0, ctx)
    counts.on_minute(60.0, ctx)
    assert counts.counts.series.latest == 40.0  # 80 requests over 2 targets
    counts.on_minute(120.0, ctx)  # a minute without a request: no datapoint
    assert counts.counts.series.latest is None
