"""The sidecars' concurrency series as the engine feeds it: what each step's tasks publish.

The series itself (its views for the fast path, target tracking and the
fast scale-in) is metrics.DemandPipeline; this controller closes its
minutes and gives it each step's total concurrency.
"""

from __future__ import annotations

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.metrics import DemandPipeline


class ConcurrencySeries(Controller):
    """Each step's requests in flight over the RUNNING tasks, published as the sidecars do.

    A loading task's sidecar publishes 0. The in-flight estimate is Little's
    law for the requests in service plus the queue; the arrival-rate
    estimate is the rate requests arrive x their mean time plus the queue
    drained over ``backlog_drain_s`` (demand_metric.py "The estimate": in
    steady state both are the requests in service).
    """

    __slots__ = ("_drain_s", "pipeline")

    def __init__(self, pipeline: DemandPipeline, backlog_drain_s: float | None) -> None:
        self.pipeline = pipeline
        self._drain_s = backlog_drain_s

    def on_minute(self, t: float, ctx: Context) -> None:
        self.pipeline.close_minute(t)

    def on_served(self, t: float, ctx: Context) -> None:
        fleet = ctx.fleet
        step_s = ctx.step_s
        drain_s = self._drain_s
        if not fleet.ready:
            # No server answers: every sidecar publishes its start's 0 (the load
            # balancer turns the requests away, none reaches a server's counters).
            total = 0.0
        elif drain_s is None:
            total = ctx.served / step_s * ctx.mean_request_s + ctx.queue.queue
        else:
            total = ctx.mean_request_s * (ctx.arrivals / step_s + ctx.queue.queue / drain_s)
        ctx.conc = self.pipeline.sample(ctx.i, t + step_s, total, fleet.running)
