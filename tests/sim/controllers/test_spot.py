"""[capacity.spot] in the loop: notices before placement, noticed instances billed."""

from __future__ import annotations

from simhelp import STEP, context, fleet_with, params

from ecs_gpu.sim.controllers.spot import SpotMarket
from ecs_gpu.sim.markets import Markets


def test_a_noticed_instance_leaves_the_fleet_and_bills_until_it_is_reclaimed() -> None:
    p = params(max_tasks=8, max_instances=8).with_(
        spot={"percent": 100, "interruptions_per_hour": 0.0, "price_usd_per_hour": 0.5}
    )
    fleet = fleet_with(0)
    ctx = context(p, fleet, 1)
    markets = Markets(p, seed=0)
    market = SpotMarket(markets, p.spot)
    inst = fleet.launch(0.0, 0.0, 0.0, spot=True, interrupt_at=30.0)
    fleet.add_ready_task(inst, 0.0)
    markets.watch(inst)
    market.on_step_start(20.0, ctx)
    assert markets.interruptions == 0 and market.billed(20.0, ctx) == 0
    market.on_step_start(30.0, ctx)  # the notice: its task is replaced elsewhere
    assert markets.interruptions == 1 and inst not in fleet.instances
    assert market.billed(30.0, ctx) == 1  # still billed, draining
    market.on_step_start(30.0 + p.spot.notice_s, ctx)
    assert market.billed(30.0 + p.spot.notice_s, ctx) == 0  # reclaimed
    # Two Spot instance-steps: the instance at t = 20, and noticed at t = 30.
    assert ctx.spot_s == 2 * STEP
    s = market.summary(ctx)
    assert (s["spot_percent"], s["spot_interruptions"], s["spot_replaced_tasks"]) == (100, 1, 1)
    assert s["spot_price_usd_per_hour"] == 0.5
