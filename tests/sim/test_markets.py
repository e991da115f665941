"""Spot in the simulator: the strategy's split of instances, interruptions, the Spot price."""

from __future__ import annotations

import pytest
from simhelp import CONCURRENCY, METRICS, STEP, load, params

from ecs_gpu import catalog
from ecs_gpu.design import spot
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.markets import Markets
from ecs_gpu.sim.params import SimParams

SPOT = '[capacity.spot]\ninstance_types = ["g5.xlarge"]'
# Ten hours that step from one task's load to nearly four tasks' full load and back.
LOAD = load((3600.0, 0.5), (4 * 3600.0, 7.0), (5 * 3600.0, 0.5))


def _spot(rate: float | None = None, keys: str = "") -> tuple[str, str]:
    sim = "" if rate is None else f"spot_interruptions_per_instance_hour = {rate}"
    return f"{SPOT}\n{keys}", sim


def _params(cap: str = "", sim: str = "") -> SimParams:
    """The concurrency signal (the one [capacity.spot] allows) with ``cap`` and ``sim``."""
    return params(service=METRICS, scaling=CONCURRENCY, capacity=cap, simulation=sim)


def test_a_spec_without_spot_runs_no_spot() -> None:
    p = _params()
    assert (p.spot.percent, p.spot.interruptions_per_hour) == (0, 0.0)
    s = simulate(p, LOAD, step_s=STEP).summary
    assert "spot_instance_hours" not in s


def test_spot_without_interruptions_serves_like_on_demand_and_costs_less() -> None:
    cap, sim = _spot(0.0)
    p = _params(cap, sim)
    od = p.with_(spot={"percent": 0})
    s, o = simulate(p, LOAD, step_s=STEP).summary, simulate(od, LOAD, step_s=STEP).summary
    # Same boots and decisions: only the market of each instance differs.
    assert s["overload_seconds"] == o["overload_seconds"]
    assert s["instance_hours"] == o["instance_hours"]
    assert s["spot_interruptions"] == 0
    assert 0 < s["spot_instance_hours"] < s["instance_hours"]
    price = catalog.lookup("g5.xlarge").price_usd_per_hour
    saved = s["spot_instance_hours"] * (price - p.spot.price_usd_per_hour)
    assert o["cost_usd"] - s["cost_usd"] == pytest.approx(saved, abs=0.02)


def test_interruptions_replace_tasks_and_add_overload_deterministically() -> None:
    cap, sim = _spot(0.5)
    p = _params(cap, sim)
    a = simulate(p, LOAD, step_s=STEP, seed=3).summary
    b = simulate(p, LOAD, step_s=STEP, seed=3).summary
    assert a == b
    assert a["spot_interruptions"] > 0 and a["spot_replaced_tasks"] > 0
    calm = simulate(
        p.with_(spot={"interruptions_per_hour": 0.0}), LOAD, step_s=STEP, seed=3
    ).summary
    assert a["overload_seconds"] > calm["overload_seconds"]


def test_the_base_stays_on_demand() -> None:
    # One task's load: the base (1) on On-Demand, nothing on Spot.
    cap, sim = _spot(0.0)
    s = simulate(_params(cap, sim), load((3600.0, 0.5)), step_s=STEP).summary
    assert s["spot_instance_hours"] == 0.0


def test_markets_launch_the_group_below_its_share() -> None:
    cap, sim = _spot(0.0, "on_demand_base = 1\nspot_percent = 70")
    p = _params(cap, sim)
    m = Markets(p, seed=0)
    assert m.needs(10) == (4, 6)
    fleet = Fleet(p.tasks_per_instance, 0.0, 0.0)
    fleet.launch(0.0, 0.0, 0.0)
    fleet.provisioning = 10
    assert m.next_is_spot(fleet)
    for _ in range(6):
        fleet.launch(0.0, 0.0, 0.0, spot=True)
    # Six Spot of six; On-Demand has 1 of 4: the next launch is On-Demand.
    assert not m.next_is_spot(fleet)


def test_a_noticed_instance_serves_until_reclaimed_and_its_tasks_are_replaced() -> None:
    fleet = Fleet(1, 0.0, 0.0)
    od = fleet.launch(0.0, 0.0, 0.0)
    sp = fleet.launch(0.0, 0.0, 0.0, spot=True)
    fleet.add_ready_task(od, 0.0)
    fleet.add_ready_task(sp, 0.0)
    assert fleet.interrupt(sp, 100.0, spot.NOTICE_S) == 1
    assert (fleet.ready, fleet.leaving_ready, fleet.provisioning) == (1, 1, 1)
    assert (len(fleet.instances), fleet.spot_count, len(fleet.draining)) == (1, 0, 1)
    fleet.reap(100.0 + spot.NOTICE_S - 1)
    assert fleet.leaving_ready == 1
    fleet.reap(100.0 + spot.NOTICE_S)
    assert (fleet.leaving_ready, fleet.draining) == (0, [])
    # The replacement waits: the drained instance takes no task.
    assert fleet.place(221.0) == 0 and fleet.desired_total == 2


def test_the_warm_pool_sizes_on_the_on_demand_group_alone() -> None:
    # Ten steady hours at three tasks' load: the pool holds max(min_size, max_prepared
    # - On-Demand instances), whatever the Spot group runs (it has no pool).
    cap, sim = _spot(0.0)
    pool = "[capacity.warm_pool]\nmin_size = 0\nmax_prepared = 4\n"
    p = _params(f"{pool}\n{cap}", sim)
    hours = 10.0
    s = simulate(p, load((hours * 3600.0, 4.0)), step_s=STEP).summary
    od, on_spot = Markets(p, seed=0).needs(p.tasks_for_rate(4.0))
    assert on_spot >= 1 and s["max_instances"] == od + on_spot
    assert s["warm_pool_stopped_instance_hours"] == pytest.approx((4 - od) * hours)
