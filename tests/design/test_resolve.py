"""Design.of: every value of the design is what the rule modules derive from the spec.

Each spec shape here turns on what the examples leave off (Spot, a warm pool,
scale to zero with and without a wake path, the fast scale-in), so every group of
the design is compared with its rules at least once, field by field.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.design import (
    Design,
    ManagedScaling,
    Spot,
    Startup,
    Zero,
    check_woken_task,
    managed_scaling,
    spot,
    startup,
)
from ecs_gpu.design.paths import fast_path, fast_scale_in, sleep, wake
from ecs_gpu.errors import SpecError
from ecs_gpu.spec import Spec, load_spec, parse_spec
from example_specs import EXAMPLES_DIR, G5, G5_GPU, INTERNAL_LB, scaled_to_zero

SPOT_TABLE = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
WARM_POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"
NIGHT = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 2\n'
MORNING = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'


def _with_spot(text: str, extra: str = "", types: str = SPOT_TABLE) -> str:
    return text.replace("\n[scaling]\n", types + extra + "\n[scaling]\n", 1)


def _shapes() -> dict[str, str]:
    zero = scaled_to_zero() + INTERNAL_LB
    return {
        "gpu-signal": G5_GPU,
        "spot": _with_spot(G5),
        "spot-od0": _with_spot(G5, "on_demand_base = 0\n").replace(
            "min_instances = 1", "min_instances = 0", 1
        ),
        # A listed type with no cited Spot discount: the simulator cannot price it.
        "spot-no-discount": _with_spot(
            G5, types='\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6e.xlarge"]\n'
        ),
        "warm-pool": G5 + WARM_POOL,
        # A pool as large as every scale-out (max_instances 4 from 1): the pooled warm-up.
        "warm-pool-covers": G5 + WARM_POOL.replace("min_size = 1", "min_size = 3"),
        "fast-scale-in": G5.replace("[scaling]\n", "[scaling]\nfast_scale_in = true\n", 1),
        "zero": zero,
        # No load balancer: the schedule wakes it, no wake or sleep path.
        "zero-no-load-balancer": scaled_to_zero() + MORNING,
        "zero-at-night": G5 + INTERNAL_LB + NIGHT,
        "zero-pooled": zero + WARM_POOL,
        "zero-on-spot": _with_spot(scaled_to_zero(), "on_demand_base = 0\n") + INTERNAL_LB,
        # Refused by check_woken_task, but resolved all the same.
        "zero-gpu-signal": scaled_to_zero(G5_GPU) + INTERNAL_LB,
    }


SHAPES = _shapes()


def _specs() -> dict[str, Spec]:
    out = {p.stem: load_spec(p) for p in sorted(EXAMPLES_DIR.glob("*.toml"))}
    out.update({name: parse_spec(text, f"{name}.toml") for name, text in SHAPES.items()})
    return out


SPECS = _specs()
GROUPS = (Startup, ManagedScaling, Spot, Zero)


def _fields(obj: Any, prefix: str = "") -> dict[str, Any]:
    """The design's fields by dotted name, its groups' fields one by one."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, GROUPS):
            out.update(_fields(value, f"{prefix}{f.name}."))
        else:
            out[f"{prefix}{f.name}"] = value
    return out


def _managed_scaling(spec: Spec, prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}cold_start_s": managed_scaling.cold_start_s(spec),
        f"{prefix}warm_register_s": managed_scaling.warm_register_s(spec),
        f"{prefix}pooled_start_s": managed_scaling.pooled_start_s(spec),
        f"{prefix}pool_covers_scale_out": managed_scaling.pool_covers_scale_out(spec),
        f"{prefix}instance_warmup_s": managed_scaling.instance_warmup_s(spec),
        f"{prefix}max_scaling_step": managed_scaling.max_scaling_step(spec),
    }


def _spot(spec: Spec) -> dict[str, Any]:
    strategy = spot.strategy(spec)
    if strategy is None:
        return {"spot": None}
    group = spot.group_spec(spec)
    return {
        "spot.strategy": strategy,
        "spot.group": group,
        **_managed_scaling(group, "spot.managed_scaling."),
        "spot.price_usd_per_hour": spot.price_usd_per_hour(spec),
        "spot.missing_discounts": tuple(spot.missing_discounts(spec)),
    }


def _zero(spec: Spec) -> dict[str, Any]:
    if not wake.scales_to_zero(spec):
        return {"zero": None}
    return {
        "zero.quiet_minutes": wake.quiet_minutes(spec),
        "zero.start_s": wake.start_s(spec),
        "zero.wakes_on_spot": wake.wakes_on_spot(spec),
        "zero.pooled_wake": wake.pooled_wake(spec),
        "zero.wake": wake.wake_path(spec),
        "zero.sleep": sleep.sleep_path(spec),
        "zero.unprotected_wake": tuple(wake.unprotected_wake(spec)),
    }


def _rules(spec: Spec) -> dict[str, Any]:
    """What each field of the design is, as the rule modules derive it from ``spec``."""
    return {
        "spec": spec,
        "signals": SignalPlan.of(spec.scaling),
        "startup.model_ready_s": startup.model_ready_s(spec),
        "startup.task_ready_s": startup.task_ready_s(spec),
        "startup.running_to_healthy_s": startup.running_to_healthy_s(spec),
        "startup.model": startup.model_start(spec),
        "startup.health": startup.health_timings(spec),
        **_managed_scaling(spec, "managed_scaling."),
        **_spot(spec),
        "spot_interruptions_per_hour": spot.interruption_rate_per_hour(spec),
        "on_demand_may_be_empty": spot.on_demand_may_be_empty(spec),
        "fast_path": fast_path.fast_path(spec),
        "tracking_cap": fast_path.tracking_cap(spec),
        "fast_scale_in": fast_scale_in.fast_scale_in(spec),
        **_zero(spec),
    }


@pytest.mark.parametrize("name", list(SPECS))
def test_each_value_is_the_rules(name: str) -> None:
    spec = SPECS[name]
    design = Design.of(spec)
    got, want = _fields(design), _rules(spec)
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        assert got[key] == value, key
    assert design.spec is spec


@pytest.mark.parametrize("name", list(SPECS))
def test_the_shortcuts_read_the_groups(name: str) -> None:
    spec = SPECS[name]
    design = Design.of(spec)
    assert design.scales_to_zero == wake.scales_to_zero(spec)
    assert design.wake == wake.wake_path(spec)
    assert design.sleep == sleep.sleep_path(spec)
    assert design.strategy == spot.strategy(spec)


def test_the_shapes_turn_on_what_they_name() -> None:
    d = {name: Design.of(spec) for name, spec in SPECS.items()}
    assert all(d[n].zero is None and d[n].spot is None for n in ("g5-vllm", "p5-8gpu"))
    assert d["g5-vllm"].fast_path is not None and d["gpu-signal"].fast_path is None
    assert d["fast-scale-in"].fast_scale_in is not None and d["g5-vllm"].fast_scale_in is None
    spot_group = d["spot"].spot
    assert spot_group is not None and spot_group.price_usd_per_hour is not None
    assert spot_group.group.capacity.min_instances == 0 and not d["spot"].on_demand_may_be_empty
    assert d["spot-od0"].on_demand_may_be_empty
    no_discount = d["spot-no-discount"].spot
    assert no_discount is not None and no_discount.price_usd_per_hour is None
    assert no_discount.missing_discounts == ("g6e.xlarge",)
    assert not d["warm-pool"].managed_scaling.pool_covers_scale_out
    covers = d["warm-pool-covers"].managed_scaling
    assert covers.pool_covers_scale_out
    assert covers.instance_warmup_s < d["warm-pool"].managed_scaling.instance_warmup_s
    # The Spot group has no warm pool: its warm-up is the cold start's.
    pooled_spot = Design.of(parse_spec(_with_spot(SHAPES["warm-pool-covers"]), "s.toml"))
    assert pooled_spot.spot is not None
    assert (
        pooled_spot.spot.managed_scaling.instance_warmup_s
        > pooled_spot.managed_scaling.instance_warmup_s
    )
    zero, no_lb, night = d["zero"].zero, d["zero-no-load-balancer"].zero, d["zero-at-night"].zero
    assert zero is not None and zero.wake is not None and zero.sleep is not None
    assert no_lb is not None and no_lb.wake is None and no_lb.sleep is None
    assert night is not None and night.wake is not None
    pooled, on_spot = d["zero-pooled"].zero, d["zero-on-spot"].zero
    assert pooled is not None and pooled.pooled_wake and not pooled.wakes_on_spot
    assert on_spot is not None and on_spot.wakes_on_spot and not on_spot.pooled_wake
    refused = d["zero-gpu-signal"].zero
    assert refused is not None and refused.unprotected_wake


def test_the_design_is_frozen() -> None:
    design = Design.of(SPECS["g5-vllm"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        design.fast_path = None  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        design.startup.model_ready_s = 0.0  # type: ignore[misc]


def test_check_woken_task_refuses_what_unprotected_wake_finds_naming_the_file() -> None:
    for name, spec in SPECS.items():
        if name != "zero-gpu-signal":
            check_woken_task(Design.of(spec), f"{name}.toml")
    spec = SPECS["zero-gpu-signal"]
    with pytest.raises(SpecError) as exc:
        check_woken_task(Design.of(spec), "gpu.toml")
    assert exc.value.exit_code == 2
    assert exc.value.problems == [p.format("gpu.toml") for p in wake.unprotected_wake(spec)]
