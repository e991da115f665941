"""The warm pool's default size in the simulator and what its instances cost."""

from __future__ import annotations

import pytest
from simhelp import STEP, load, params

from ecs_gpu import catalog
from ecs_gpu.sim.engine import simulate

# Ten hours at a load one task serves: the fleet stays at min_instances (1).
HOURS = 10.0
QUIET = load((HOURS * 3600.0, 0.2))
POOL = "[capacity.warm_pool]"


def test_the_default_pool_holds_min_size_instances() -> None:
    # MaxGroupPreparedCapacity defaults to min_size (2): the pool holds 2
    # stopped instances whatever the group runs, not max_instances - desired (3).
    p = params(capacity=f"{POOL}\nmin_size = 2")
    assert p.warm_pool.max_prepared == 2
    s = simulate(p, QUIET, step_s=STEP).summary
    assert s["max_instances"] == 1
    assert s["warm_pool_stopped_instance_hours"] == 2 * HOURS
    # An explicit max_prepared is what it says: 4 - 1 in service = 3.
    p4 = params(capacity=f"{POOL}\nmin_size = 2\nmax_prepared = 4")
    assert p4.warm_pool.max_prepared == 4
    assert simulate(p4, QUIET, step_s=STEP).summary["warm_pool_stopped_instance_hours"] == (
        3 * HOURS
    )


def test_gp3_price_per_hour_by_hand() -> None:
    # 200 GiB x $0.08 = $16 a 30-day (720-h) month; 3,000 IOPS and 125 MB/s are free.
    assert catalog.gp3_usd_per_hour(200) == pytest.approx(16 / 720)
    assert catalog.gp3_usd_per_hour(200, 3000, 125) == pytest.approx(16 / 720)
    # + (6,000 - 3,000) x $0.005 + (250 - 125) x $0.04 = 16 + 15 + 5 = $36 a month.
    assert catalog.gp3_usd_per_hour(200, 6000, 250) == pytest.approx(36 / 720)


@pytest.mark.parametrize(
    ("volume", "pool_usd"),
    [
        # One stopped instance x 10 h x $16/720 h = $0.2222.
        ("", 0.22),
        # Provisioned IOPS and throughput above the baseline: $36/720 h x 10 h.
        ("root_volume_iops = 6000\nroot_volume_throughput_mibps = 250", 0.50),
    ],
)
def test_a_stopped_pool_bills_its_volumes_in_the_total(volume: str, pool_usd: float) -> None:
    p = params(capacity=f"{volume}\n{POOL}")
    s = simulate(p, QUIET, step_s=STEP).summary
    # The in-service instance: 10 h x $1.006 (g5.xlarge); its volume is not priced.
    assert s["instance_hours"] == HOURS
    assert s["warm_pool_stopped_instance_hours"] == HOURS
    assert s["warm_pool_running_instance_hours"] == 0.0
    assert s["warm_pool_cost_usd"] == pool_usd
    assert s["cost_usd"] == round(10.06 + pool_usd, 2)
    # GPU-hours count instances that hold GPUs for service or warming, not stopped ones.
    assert s["gpu_hours"] == HOURS


def test_a_running_pool_bills_its_instances() -> None:
    p = params(capacity=f'{POOL}\npool_state = "Running"')
    s = simulate(p, QUIET, step_s=STEP).summary
    # The in-service instance and the running pool instance, each 10 h x $1.006.
    assert s["instance_hours"] == 2 * HOURS
    assert s["warm_pool_running_instance_hours"] == HOURS
    assert s["warm_pool_stopped_instance_hours"] == 0.0
    assert s["warm_pool_cost_usd"] == 10.06
    assert s["cost_usd"] == 20.12


def test_without_a_pool_the_pool_figures_are_zero() -> None:
    s = simulate(params(), QUIET, step_s=STEP).summary
    assert (s["warm_pool_cost_usd"], s["warm_pool_stopped_instance_hours"]) == (0.0, 0.0)
    assert s["cost_usd"] == 10.06
