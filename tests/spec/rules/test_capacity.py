"""Capacity rules (spec/rules/capacity.py): the warm pool, gp3's ratios, the root volume."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    CONC,
    FULL,
    PATH,
    edited,
    one_problem,
    problems,
    with_,
)


def test_warm_pool_defaults_and_a_reservation_together() -> None:
    # Allowed with an ODCR: a stopped pool instance holds no reserved capacity and
    # starts On-Demand like any launch beyond the reservation (docs/spec.md).
    spec = parse_spec(with_("capacity", warm_pool={}), PATH)
    wp = spec.capacity.warm_pool
    assert wp is not None and spec.capacity.capacity_reservation_id is not None
    assert (wp.min_size, wp.max_prepared, wp.pool_state) == (1, None, "Stopped")
    assert spec.warnings(PATH) == []


@pytest.mark.parametrize(
    ("pool", "prepared"),
    [
        # Unset: min_size, so the pool holds exactly min_size instances ...
        ({}, 1),
        ({"min_size": 3}, 3),
        # ... and at least one, which waits while the group has none.
        ({"min_size": 0}, 1),
        # Set: what the spec says.
        ({"min_size": 1, "max_prepared": 4}, 4),
        ({"min_size": 0, "max_prepared": 0}, 0),
    ],
)
def test_warm_pool_prepared_capacity(pool: dict[str, Any], prepared: int) -> None:
    wp = parse_spec(with_("capacity", warm_pool=pool), PATH).capacity.warm_pool
    assert wp is not None and wp.prepared_capacity == prepared


@pytest.mark.parametrize(
    ("pool", "key", "what", "fix"),
    [
        ({"min_size": 5}, "min_size", "greater than capacity.max_instances (4)", "at most 4"),
        ({"min_size": 2, "max_prepared": 1}, "max_prepared", "less than", "at least 2"),
        (
            {"max_prepared": 5},
            "max_prepared",
            "greater than capacity.max_instances (4): the group never holds more than 4, "
            "so 1 prepared instance(s) can never join it",
            "set max_prepared to at most 4, or remove it",
        ),
        ({"pool_state": "Hibernated"}, "pool_state", "cannot hibernate", '"Stopped"'),
        ({"reuse_on_scale_in": True}, "reuse_on_scale_in", "capacity providers", "remove"),
    ],
)
def test_warm_pool_rules(pool: dict[str, Any], key: str, what: str, fix: str) -> None:
    line = one_problem(with_("capacity", warm_pool=pool), f"capacity.warm_pool.{key}")
    assert what in line and fix in line.split("Fix:")[1]


def test_warm_pool_min_size_equal_to_max_instances_is_fine() -> None:
    spec = parse_spec(with_("capacity", warm_pool={"min_size": 4, "max_prepared": 4}), PATH)
    assert spec.capacity.warm_pool is not None


@pytest.mark.parametrize(
    ("capacity", "shown", "what", "fix"),
    [
        # No IOPS set: gp3's baseline 3,000 IOPS carry 750 MiB/s at most.
        (
            {"root_volume_throughput_mibps": 1000},
            "1000",
            "3000 IOPS (gp3's baseline without root_volume_iops) carry at most 750 MiB/s",
            "set root_volume_iops to at least 4000 (4 x throughput), or lower "
            "root_volume_throughput_mibps to at most 750",
        ),
        (
            {"root_volume_iops": 3000, "root_volume_throughput_mibps": 2000},
            "2000",
            "3000 IOPS (root_volume_iops) carry at most 750 MiB/s",
            "set root_volume_iops to at least 8000",
        ),
    ],
)
def test_gp3_throughput_needs_four_iops_per_mibps(
    capacity: dict[str, Any], shown: str, what: str, fix: str
) -> None:
    line = one_problem(
        with_("capacity", **capacity), "capacity.root_volume_throughput_mibps", shown
    )
    assert what in line and "EC2 refuses" in line and fix in line.split("Fix:")[1]


def test_gp3_iops_need_a_gib_per_500() -> None:
    text = with_("capacity", root_volume_gib=30, root_volume_iops=80000)
    line = one_problem(text, "capacity.root_volume_iops", "80000")
    assert "at most 500 IOPS per GiB, so a 30-GiB root volume takes at most 15000" in line
    fix = line.split("Fix:")[1]
    assert "raise root_volume_gib to at least 160" in fix and "at most 15000" in fix


@pytest.mark.parametrize(
    "capacity",
    [
        {"root_volume_iops": 4000, "root_volume_throughput_mibps": 1000},  # exactly 0.25
        {"root_volume_throughput_mibps": 750},  # the baseline's 3,000 IOPS / 4
        {"root_volume_gib": 30, "root_volume_iops": 15000},  # exactly 500 per GiB
        {"root_volume_gib": 160, "root_volume_iops": 80000, "root_volume_throughput_mibps": 2000},
        {"root_volume_gib": 65536},  # the largest gp3 volume
    ],
)
def test_gp3_limits_are_inclusive(capacity: dict[str, Any]) -> None:
    spec = parse_spec(with_("capacity", **capacity), PATH)
    for key, value in capacity.items():
        assert getattr(spec.capacity, key) == value


def test_root_volume_must_hold_os_image_and_each_tasks_model() -> None:
    text = edited(FULL, service={"model_size_gib": 20.0}, capacity={"root_volume_gib": 30})
    line = one_problem(text, "capacity.root_volume_gib", "30")
    # 30 (OS) + 20 (image) + 20 x 1 task per instance.
    assert "70 GiB at least" in line and "Fix: set root_volume_gib to at least 70" in line
    ok = edited(FULL, service={"model_size_gib": 20.0}, capacity={"root_volume_gib": 70})
    assert parse_spec(ok, PATH).capacity.root_volume_gib == 70
    # Four one-GPU tasks on a g5.12xlarge download the model four times.
    four = edited(
        FULL,
        service={"model_size_gib": 20.0, "cpu_units": ..., "memory_mib": ...},
        capacity={"instance_type": "g5.12xlarge", "root_volume_gib": 100},
    )
    assert any("130 GiB at least" in line for line in problems(four))


# --- [capacity.spot] -------------------------------------------------------------
# On CONC: the concurrency signal, which sees the tasks of both groups.


def _spot(spot: dict[str, Any]) -> str:
    return edited(CONC, capacity={"spot": spot})


def test_spot_with_interchangeable_types_is_valid_with_its_defaults() -> None:
    spec = parse_spec(_spot({"instance_types": ["g5.xlarge", "g6.xlarge"]}), PATH)
    sp = spec.capacity.spot
    assert sp is not None
    assert (sp.instance_types, sp.on_demand_base, sp.spot_percent) == (
        ["g5.xlarge", "g6.xlarge"],
        1,
        70,
    )
    # g5 and g6 both have a dated Spot discount (catalog.SPOT_DISCOUNTS): no note.
    assert spec.warnings(PATH) == []


def test_a_spot_type_without_a_dated_discount_is_noted_until_the_key_gives_one() -> None:
    unpriced = {"instance_types": ["g5.xlarge", "g6e.xlarge"]}
    (note,) = parse_spec(_spot(unpriced), PATH).warnings(PATH)
    assert "['g6e.xlarge']" in note and "spot_discount_percent" in note
    priced = edited(CONC, capacity={"spot": unpriced}, simulation={"spot_discount_percent": 60.0})
    assert parse_spec(priced, PATH).warnings(PATH) == []


def test_spot_type_with_other_gpus_is_refused() -> None:
    line = one_problem(
        _spot({"instance_types": ["g6.xlarge", "g6.12xlarge"]}),
        "capacity.spot.instance_types",
        "'g6.12xlarge'",
    )
    assert "4 GPU(s)" in line and "g5.xlarge has 1 GPU(s)" in line


def test_spot_type_too_small_for_the_task_is_refused() -> None:
    # g4dn.xlarge (16 GiB) holds no 20,000-MiB task: 0 tasks where g5.2xlarge (32 GiB) holds 1.
    line = one_problem(
        edited(
            CONC,
            service={"memory_mib": 20000},
            capacity={"instance_type": "g5.2xlarge", "spot": {"instance_types": ["g4dn.xlarge"]}},
        ),
        "capacity.spot.instance_types",
        "'g4dn.xlarge'",
    )
    assert "holding 0 task(s)" in line


def test_spot_type_without_gpu_memory_for_the_model_is_refused() -> None:
    # 18 GiB fits an A10G (22,888 MiB less 1,024) but not a T4 (16,384 MiB).
    line = one_problem(
        edited(
            CONC,
            service={"model_size_gib": 18.0},
            capacity={"spot": {"instance_types": ["g4dn.2xlarge"]}},
        ),
        "capacity.spot.instance_types",
        "'g4dn.2xlarge'",
    )
    assert "NVIDIA T4" in line and "18-GiB model" in line


def test_spot_base_that_takes_every_task_is_refused() -> None:
    line = one_problem(
        _spot({"instance_types": ["g5.xlarge"], "on_demand_base": 4}),
        "capacity.spot.on_demand_base",
        "4",
    )
    assert "max_tasks (4)" in line


def test_spot_type_listed_twice_is_refused() -> None:
    line = one_problem(
        _spot({"instance_types": ["g5.xlarge", "g5.xlarge"]}),
        "capacity.spot.instance_types",
    )
    assert "twice" in line


def test_everything_on_spot_is_a_note() -> None:
    spot: dict[str, Any] = {"instance_types": ["g5.xlarge"], "on_demand_base": 0}
    spec = parse_spec(_spot({**spot, "spot_percent": 100}), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: capacity.spot.spot_percent = 100") and "all" in note
    assert parse_spec(_spot({**spot, "spot_percent": 99}), PATH).warnings() == []


@pytest.mark.parametrize(
    ("base", "key", "value"),
    [(FULL, "scaling.signal", "'task-gpus'"), (None, "scaling.gpu_guard", "True")],
)
def test_spot_refuses_a_gpu_policy(base: dict[str, Any] | None, key: str, value: str) -> None:
    spot = {"spot": {"instance_types": ["g5.xlarge"]}}
    if base is None:
        text = edited(CONC, capacity=spot, scaling={"gpu_guard": True, "gpu_target_percent": 70.0})
    else:
        text = edited(base, capacity=spot)
    line = one_problem(text, key, value)
    assert "On-Demand group only" in line and 'signal = "concurrency"' in line
