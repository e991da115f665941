"""Placement rules (spec/rules/placement.py): a task fits an instance; task and instance bounds
and the reservation reach each other."""

from __future__ import annotations

import copy

import pytest

from ecs_gpu import catalog
from ecs_gpu.spec import parse_spec
from ecs_gpu.spec.rules.service import shm_limit_mib

from ..specdata import (
    FULL,
    PATH,
    dumps,
    one_problem,
    problems,
    with_,
)


def test_gpus_per_task_beyond_the_instance() -> None:
    line = one_problem(with_("service", gpus_per_task=2), "service.gpus_per_task", "2")
    assert "g5.xlarge has only 1 GPU(s)" in line
    assert "request at most 1" in line


def test_gpus_per_task_fits_a_multi_gpu_instance() -> None:
    text = with_("service", gpus_per_task=4)
    text = text.replace('"g5.xlarge"', '"g5.12xlarge"')
    assert parse_spec(text, PATH).tasks_per_instance == 1


def test_cpu_beyond_the_instance() -> None:
    line = one_problem(with_("service", cpu_units=4097), "service.cpu_units", "4097")
    assert "registers 4096 CPU units" in line and "request at most 4096" in line


def test_cpu_exactly_the_instance_fits() -> None:
    assert parse_spec(with_("service", cpu_units=4096), PATH).service.cpu_units == 4096


def test_memory_must_fit_after_the_ecs_reserve() -> None:
    sched = catalog.lookup("g5.xlarge").schedulable_memory_mib
    assert parse_spec(with_("service", memory_mib=sched), PATH).service.memory_mib == sched
    line = one_problem(with_("service", memory_mib=sched + 1), "service.memory_mib", str(sched + 1))
    assert f"about {sched} MiB is left for tasks" in line
    assert f"{catalog.ECS_RESERVED_MEMORY_MIB} MiB" in line
    assert f"request at most {sched}" in line


def test_nominal_memory_is_refused() -> None:
    one_problem(with_("service", memory_mib=16384), "service.memory_mib", "16384")


def test_min_instances_above_max() -> None:
    text = with_("capacity", min_instances=5, capacity_reservation_id=..., reserved_instances=...)
    line = one_problem(text, "capacity.min_instances", "5")
    assert "greater than capacity.max_instances (4)" in line


def test_min_tasks_above_max() -> None:
    line = one_problem(with_("scaling", min_tasks=4, max_tasks=3), "scaling.min_tasks", "4")
    assert "greater than scaling.max_tasks (3)" in line


def test_reserved_instances_needs_a_reservation_id() -> None:
    text = with_("capacity", capacity_reservation_id=...)
    line = one_problem(text, "capacity.reserved_instances", "2")
    assert "without capacity.capacity_reservation_id" in line


def test_reservation_id_needs_reserved_instances() -> None:
    text = with_("capacity", reserved_instances=...)
    line = one_problem(text, "capacity.capacity_reservation_id", "'cr-0123456789abcdef0'")
    assert "add `reserved_instances = N` under [capacity]" in line


def test_reserved_instances_above_min_instances() -> None:
    text = with_("capacity", min_instances=1, reserved_instances=2)
    line = one_problem(text, "capacity.reserved_instances", "2")
    assert "greater than capacity.min_instances (1)" in line
    assert "set min_instances to at least 2" in line


def test_reserved_instances_above_max_instances() -> None:
    found = problems(with_("capacity", min_instances=6, reserved_instances=6))
    assert any(
        line.startswith(f"{PATH}: capacity.reserved_instances = 6")
        and "greater than capacity.max_instances (4)" in line
        for line in found
    ), found


def test_max_tasks_must_be_reachable() -> None:
    line = one_problem(with_("scaling", max_tasks=5), "scaling.max_tasks", "5")
    assert "4 x g5.xlarge fit only 4 tasks (1 per instance)" in line
    assert "raise capacity.max_instances to 5, or lower max_tasks to 4" in line


def test_max_tasks_reachable_counts_tasks_per_instance() -> None:
    # g6.48xlarge: 8 GPUs and 15 network interfaces, so the GPUs bind (g5.48xlarge's 7
    # interfaces would, see the ENI test below).
    text = with_("scaling", max_tasks=16).replace('"g5.xlarge"', '"g6.48xlarge"')
    spec = parse_spec(text.replace("memory_mib = 12288", "memory_mib = 4096"), PATH)
    assert spec.tasks_per_instance == 8
    line = one_problem(
        with_("scaling", max_tasks=33)
        .replace('"g5.xlarge"', '"g6.48xlarge"')
        .replace("memory_mib = 12288", "memory_mib = 4096"),
        "scaling.max_tasks",
        "33",
    )
    assert "raise capacity.max_instances to 5, or lower max_tasks to 32" in line


def _fit_spec(
    instance: str, gpus: int, cpu: int, mem: int, max_instances: int, max_tasks: int
) -> str:
    doc = copy.deepcopy(FULL)
    doc["service"].update(gpus_per_task=gpus, cpu_units=cpu, memory_mib=mem)
    doc["capacity"].update(instance_type=instance, max_instances=max_instances)
    doc["scaling"]["max_tasks"] = max_tasks
    return dumps(doc)


# One case per resource that can bind tasks per instance: (instance, GPUs, CPU units,
# MiB per task) -> per instance, and what the message must say about it.
RESOURCES = ("GPUs:", "CPU:", "memory:", "network interfaces:")
BINDING_CASES = [
    pytest.param(
        ("g6.48xlarge", 2, 1024, 4096), 4, "GPUs: 8 on the instance, 2 per task", id="GPU"
    ),
    pytest.param(
        ("g4dn.12xlarge", 1, 16384, 4096), 3, "CPU: 49152 units on the instance", id="CPU"
    ),
    pytest.param(
        ("g6.12xlarge", 1, 1024, 92149),
        2,
        "memory: about 184299 MiB left for tasks, 92149 per task",
        id="memory",
    ),
    pytest.param(
        ("g5.48xlarge", 1, 1024, 4096),
        6,
        "network interfaces: every task (awsvpc network mode) needs its own ENI and "
        "g5.48xlarge takes 7",
        id="ENI",
    ),
]


@pytest.mark.parametrize(("task", "per", "why"), BINDING_CASES)
def test_max_tasks_message_names_the_binding_resource(
    task: tuple[str, int, int, int], per: int, why: str
) -> None:
    instance = task[0]
    # Exactly what 2 instances hold is valid; one more task is not.
    assert parse_spec(_fit_spec(*task, 2, 2 * per), PATH).tasks_per_instance == per
    line = one_problem(_fit_spec(*task, 2, 2 * per + 1), "scaling.max_tasks", str(2 * per + 1))
    assert f"2 x {instance} fit only {2 * per} tasks ({per} per instance); limited by " in line
    assert why in line
    assert f"raise capacity.max_instances to 3, or lower max_tasks to {2 * per}" in line
    # Only the binding resource is named; the ENI fix appears only when ENIs bind.
    assert [r for r in RESOURCES if r in line] == [r for r in RESOURCES if why.startswith(r)]
    eni_bound = why.startswith("network interfaces")
    assert ("more network interfaces (`ecs-gpu catalog`" in line) is eni_bound
    assert ("awsvpcTrunking" in line) is eni_bound


def test_eight_one_gpu_tasks_never_fit_one_g5_48xlarge() -> None:
    # The case: 8 GPUs, but 7 network interfaces, one of them the instance's.
    text = _fit_spec("g5.48xlarge", 1, 1024, 4096, 2, 16)
    line = one_problem(text, "scaling.max_tasks", "16")
    assert "2 x g5.48xlarge fit only 12 tasks (6 per instance)" in line
    assert "raise capacity.max_instances to 3, or lower max_tasks to 12" in line
    # Two GPUs per task: four tasks need four ENIs, so the GPUs bind again.
    assert parse_spec(_fit_spec("g5.48xlarge", 2, 1024, 4096, 2, 8), PATH).tasks_per_instance == 4


def test_tied_resources_are_all_named() -> None:
    # g5.xlarge with FULL's task: one GPU, 4096 // 3072 CPU and 14888 // 12288 MiB: all 1.
    line = one_problem(with_("scaling", max_tasks=5), "scaling.max_tasks", "5")
    assert "limited by GPUs: 1 on the instance, 1 per task and by CPU: " in line
    assert "and by memory: about 14888 MiB" in line
    assert "network interfaces" not in line


def test_huge_max_tasks_does_not_overflow() -> None:
    line = one_problem(with_("scaling", max_tasks=10**400), "scaling.max_tasks")
    assert "is larger than 2,147,483,647" in line


def test_min_tasks_must_be_reachable() -> None:
    found = problems(with_("scaling", min_tasks=5, max_tasks=5))
    assert any(line.startswith(f"{PATH}: scaling.min_tasks = 5") for line in found), found


@pytest.mark.parametrize(
    ("explicit", "default", "value", "message"),
    [
        ("cpu_units", "memory_mib", 8192, "registers 4096 CPU units"),
        ("memory_mib", "cpu_units", 16384, "about 14888 MiB is left for tasks"),
    ],
)
def test_explicit_task_size_above_the_instance_keeps_its_message(
    explicit: str, default: str, value: int, message: str
) -> None:
    line = one_problem(
        with_("service", **{explicit: value, default: ...}), f"service.{explicit}", str(value)
    )
    assert message in line


def test_defaults_for_a_multi_gpu_task_share_the_instance() -> None:
    text = with_("service", gpus_per_task=2, cpu_units=..., memory_mib=...).replace(
        '"g5.xlarge"', '"g5.12xlarge"'
    )
    spec = parse_spec(text, PATH)
    it = spec.instance
    assert spec.service.cpu_units == it.cpu_units // 2
    assert spec.service.memory_mib == it.schedulable_memory_mib // 2
    assert spec.tasks_per_instance == 2
    # The automatic /dev/shm of a multi-GPU task respects the server's share.
    shm = spec.service.shm_mib
    assert shm is not None and shm <= shm_limit_mib(spec.service.memory_mib)
