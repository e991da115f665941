"""The load balancer's requests per target, the request-count policy's series, fed each step."""

from __future__ import annotations

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.metrics import RequestCountSeries


class RequestCount(Controller):
    """Each step's requests, routed to the targets that serve (ready, and noticed Spot ones).

    The series (metrics.RequestCountSeries) is one of target tracking's
    tracked series; this controller closes its minutes before target
    tracking reads it.
    """

    __slots__ = ("counts",)

    def __init__(self, counts: RequestCountSeries) -> None:
        self.counts = counts

    def on_minute(self, t: float, ctx: Context) -> None:
        self.counts.close_minute(t)

    def on_served(self, t: float, ctx: Context) -> None:
        fleet = ctx.fleet
        self.counts.sample(ctx.arrivals, fleet.ready + fleet.leaving_ready)
