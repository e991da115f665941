"""The warm pool as the run bills it: running pool time, stopped time, starts taken."""

from __future__ import annotations

from simhelp import STEP, context, fleet_with, params

from ecs_gpu.sim.controllers.warm_pool import WarmPoolBilling, warm_pool

POOL = "[capacity.warm_pool]\nmin_size = 2\nmax_prepared = 2"


def test_a_warm_start_fills_the_pool_prepared_and_bills_only_its_stopped_volume() -> None:
    p = params(capacity=POOL)
    fleet = fleet_with(1)
    ctx = context(p, fleet, 1)
    assert warm_pool(params(), fleet, warm=True) is None  # no [capacity.warm_pool]
    pool = warm_pool(p, fleet, warm=True)
    assert pool is not None
    billing = WarmPoolBilling(pool)
    assert billing.billed(0.0, ctx) == 0  # Stopped and prepared: no instance billed
    assert ctx.pool_stopped_s == 2 * STEP and ctx.pool_running_s == 0.0
    assert pool.take(10.0)
    assert billing.summary(ctx) == {"warm_pool_starts": 1, "warm_pool_returned": 0}


def test_a_cold_start_bills_the_pool_while_it_prepares() -> None:
    p = params(capacity=POOL)
    ctx = context(p, fleet_with(1), 1)
    pool = warm_pool(p, ctx.fleet, warm=False)
    assert pool is not None
    assert WarmPoolBilling(pool).billed(0.0, ctx) == 2  # booting and pulling: billed
    assert ctx.pool_running_s == 2 * STEP
