"""The capacity provider's managed scaling a spec deploys (design/managed_scaling.py): how long
a new instance takes to serve, cold or from the warm pool, and how much one step may add."""

from __future__ import annotations

import math

import pytest

from ecs_gpu.design import managed_scaling as ms
from ecs_gpu.design import startup
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5


def _spec(extra: str = "") -> Spec:
    return parse_spec(G5 + extra, "g5.toml")


def _pool(body: str) -> str:
    return f"\n[capacity.warm_pool]\n{body}\n"


def test_a_cold_instance_boots_pulls_and_loads_before_it_serves() -> None:
    spec = _spec()
    assert ms.cold_start_s(spec) == spec.simulation.instance_boot_s + startup.task_ready_s(spec)
    assert ms.pooled_start_s(spec) == ms.warm_register_s(spec) + startup.model_ready_s(spec)
    assert ms.pooled_start_s(spec) < ms.cold_start_s(spec)  # the image is already pulled


def test_a_running_pool_instance_registers_on_the_agents_poll() -> None:
    assert ms.warm_register_s(_spec(_pool('pool_state = "Running"'))) == ms.WARM_RUNNING_REGISTER_S
    stopped = _spec(_pool("min_size = 1"))
    assert ms.warm_register_s(stopped) == stopped.simulation.warm_start_s
    assert ms.warm_register_s(_spec()) == _spec().simulation.warm_start_s


@pytest.mark.parametrize(
    ("min_size", "prepared", "in_service", "pooled"),
    [(1, 4, 1, 3), (1, 4, 4, 1), (0, 4, 4, 0), (2, 1, 0, 2), (0, 0, 3, 0)],
)
def test_the_pool_refills_to_prepared_capacity_less_the_group_but_keeps_min_size(
    min_size: int, prepared: int, in_service: int, pooled: int
) -> None:
    assert ms.pool_size(min_size, prepared, in_service) == pooled


def test_only_a_pool_prepared_for_the_whole_range_covers_every_scale_out() -> None:
    assert not ms.pool_covers_scale_out(_spec())
    assert not ms.pool_covers_scale_out(_spec(_pool("min_size = 1")))  # holds 1 of the 3
    assert ms.pool_covers_scale_out(_spec(_pool("min_size = 1\nmax_prepared = 4")))
    assert ms.pool_covers_scale_out(_spec(_pool("min_size = 3")))


def test_the_warm_up_is_the_start_in_whole_minutes_within_what_ecs_takes() -> None:
    cold = _spec()
    minutes = math.ceil(ms.cold_start_s(cold) / 60) * 60
    assert ms.instance_warmup_s(cold) == max(minutes, ms.MIN_WARMUP_S)
    assert ms.instance_warmup_s(cold) % 60 == 0
    pooled = _spec(_pool("min_size = 1\nmax_prepared = 4"))
    minutes = math.ceil(ms.pooled_start_s(pooled) / 60) * 60
    assert ms.instance_warmup_s(pooled) == max(minutes, ms.MIN_POOLED_WARMUP_S)
    assert ms.instance_warmup_s(pooled) < ms.instance_warmup_s(cold)


def test_a_very_slow_start_is_capped_at_the_apis_maximum() -> None:
    slow = parse_spec(
        G5.replace("mean_request_s = 8.0\n", "mean_request_s = 8.0\nmodel_load_s = 86400\n"),
        "slow.toml",
    )
    assert ms.cold_start_s(slow) > ms.MAX_WARMUP_S
    assert ms.instance_warmup_s(slow) == ms.MAX_WARMUP_S


@pytest.mark.parametrize("max_instances", [1, 4, 50])
def test_one_step_may_add_up_to_max_instances(max_instances: int) -> None:
    text = G5.replace("max_instances = 4", f"max_instances = {max_instances}")
    text = text.replace("max_tasks = 4", f"max_tasks = {max_instances}")
    spec = parse_spec(text, "g5.toml")
    assert ms.max_scaling_step(spec) == max_instances
