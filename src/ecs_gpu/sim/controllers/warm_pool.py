"""The warm pool's instance time and what it did: starts taken and instances returned.

The pool itself is fleet.WarmPool, which the instance layer takes from and
refills; this controller bills it each step.
"""

from __future__ import annotations

import math
from typing import Any

from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.fleet import Fleet, WarmPool
from ecs_gpu.sim.params import SimParams


def warm_pool(p: SimParams, fleet: Fleet, warm: bool) -> WarmPool | None:
    """The design's pool, full and prepared on a warm start, preparing on a cold one."""
    wp = p.warm_pool
    if wp.min_size is None:
        return None
    prepared = p.max_instances if wp.max_prepared is None else wp.max_prepared
    pool = WarmPool(
        wp.min_size,
        prepared,
        # Boot, then the warm unit's image pull, then stop.
        p.instance_boot_s + p.image_pull_s,
        wp.register_s,
        billed_running=wp.state == "Running",
        reuse_on_scale_in=wp.reuse_on_scale_in,
    )
    on_demand = len(fleet.instances) - fleet.spot_count
    pool.fill(0.0, on_demand, ready_at=-math.inf if warm else None)
    return pool


class WarmPoolBilling(Controller):
    """Pool instances billed as running (warming, or a Running pool) and stopped ones."""

    __slots__ = ("pool",)

    def __init__(self, pool: WarmPool) -> None:
        self.pool = pool

    def billed(self, t: float, ctx: Context) -> int:
        pool = self.pool
        in_pool = pool.billed(t)
        ctx.pool_running_s += in_pool * ctx.step_s
        ctx.pool_stopped_s += pool.stopped(t) * ctx.step_s
        return in_pool

    def summary(self, ctx: Context) -> dict[str, Any]:
        return {"warm_pool_starts": self.pool.starts, "warm_pool_returned": self.pool.returned}
