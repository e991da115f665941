"""The simulator runs the managed-scaling settings the template deploys."""

from __future__ import annotations

import pytest
from simhelp import params, spec_text

from ecs_gpu.design import managed_scaling, startup
from ecs_gpu.spec import parse_spec


@pytest.mark.parametrize(
    ("simulation", "warmup"),
    [
        ("", 480.0),  # 150 + 240 + 60 = 450 s -> 8 whole minutes
        ("instance_boot_s = 30\nimage_pull_s = 0\nmodel_load_s = 10", 300.0),  # the floor
        ("model_load_s = 20000", 10_000.0),  # the API maximum
    ],
)
def test_sim_uses_the_template_managed_scaling(simulation: str, warmup: float) -> None:
    spec = parse_spec(spec_text(simulation=simulation), "test.toml")
    p = params(simulation=simulation)
    assert p.managed_scaling.instance_warmup_s == warmup == managed_scaling.instance_warmup_s(spec)
    # A step may add up to the whole fleet (simhelp's spec: max_instances 4).
    assert p.managed_scaling.max_scaling_step == spec.capacity.max_instances == 4
    assert p.managed_scaling.min_scaling_step == 1


# A pool that covers the fleet: prepared capacity up to max_instances (4).
POOL = "[capacity.warm_pool]\nmin_size = 1\nmax_prepared = 4"


@pytest.mark.parametrize(
    ("capacity", "simulation", "warmup"),
    [
        # Stopped pool covering max_instances: 60-s warm start + 60-s model = 120 s.
        (POOL, "", 120.0),
        # A Running pool registers within the agent's 60-s poll: the same 120 s.
        (POOL + '\npool_state = "Running"', "", 120.0),
        # 90 + 60 = 150 s -> 3 whole minutes; no boot or image pull counted.
        (POOL, "warm_start_s = 90\ninstance_boot_s = 900\nimage_pull_s = 900", 180.0),
        # Below AWS's 60-s advice: the pooled floor (120 s), not the cold 300 s.
        (POOL, "warm_start_s = 10\nmodel_load_s = 10", 120.0),
        # A pool smaller than max_instances (4): launches past it start cold.
        ("[capacity.warm_pool]\nmin_size = 1\nmax_prepared = 2", "", 480.0),
        # The default prepared capacity (min_size): one pooled instance, so
        # scale-outs past it start cold.
        ("[capacity.warm_pool]\nmin_size = 1", "", 480.0),
        # ... unless min_size alone covers min_instances (1) to max_instances (4).
        ("[capacity.warm_pool]\nmin_size = 3", "", 120.0),
        ("[capacity.warm_pool]\nmin_size = 2", "", 480.0),
    ],
)
def test_a_warm_pool_that_covers_the_fleet_warms_up_as_a_pooled_start(
    capacity: str, simulation: str, warmup: float
) -> None:
    spec = parse_spec(spec_text(capacity=capacity, simulation=simulation), "test.toml")
    p = params(capacity=capacity, simulation=simulation)
    assert p.managed_scaling.instance_warmup_s == warmup == managed_scaling.instance_warmup_s(spec)
    covers = managed_scaling.pool_covers_scale_out(spec)
    assert covers == (warmup != 480.0)
    if covers:
        # What the pooled instance takes in the simulator fits in the warm-up.
        assert p.warm_pool.register_s + p.model_load_s <= p.managed_scaling.instance_warmup_s


def test_model_size_sets_the_simulated_model_load_and_the_warmup() -> None:
    service = "model_size_gib = 15"
    spec = parse_spec(spec_text(service=service), "test.toml")
    p = params(service=service)
    ready = startup.model_ready_s(spec)
    # 15 GiB: download at 125 MiB/s (gp3's baseline write, slower than the
    # network's 200) + load at 1 GiB/s + 60 s engine warm-up.
    assert ready == pytest.approx(15 * 1024 / 125 + 15 + 60)
    assert p.model_load_s == ready != spec.simulation.model_load_s
    # The template's start period covers the same figure (one source of truth).
    assert startup.health_timings(spec).start_period_s >= min(300, ready)
    cold = p.instance_boot_s + p.image_pull_s + ready
    assert (
        p.managed_scaling.instance_warmup_s
        == managed_scaling.instance_warmup_s(spec)
        == (-(-cold // 60) * 60)
    )
