"""Whether a task fits an instance and the task and instance bounds reach each other."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu import catalog
from ecs_gpu.spec.messages import Problem

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


def _task_fits(spec: Spec) -> bool:
    """GPUs, CPU and memory of one task fit one instance (the placement rules below hold)."""
    svc, it = spec.service, spec.instance
    return (
        svc.gpus_per_task <= it.gpus
        and svc.cpu_units <= it.cpu_units
        and svc.memory_mib <= it.schedulable_memory_mib
    )


def _fit_reason(spec: Spec, binding: list[str]) -> str:
    """Which resources hold one instance to tasks_per_instance copies, with the numbers."""
    svc, it = spec.service, spec.instance
    why = {
        catalog.GPU: f"GPUs: {it.gpus} on the instance, {svc.gpus_per_task} per task",
        catalog.CPU: f"CPU: {it.cpu_units} units on the instance, {svc.cpu_units} per task",
        catalog.MEMORY: f"memory: about {it.schedulable_memory_mib} MiB left for tasks, "
        f"{svc.memory_mib} per task",
        # The ENI limit is the one users do not expect: say where it comes from.
        catalog.ENI: f"network interfaces: every task (awsvpc network mode) needs its own ENI "
        f"and {it.name} takes {it.default_card_network_interfaces} on its default network "
        "card, one of them the instance's own; ecs-gpu does not count ENI trunking "
        "(awsvpcTrunking), which it cannot see",
    }
    return "limited by " + " and by ".join(why[name] for name in binding)


def _task_gpus(spec: Spec) -> Iterator[Problem]:
    svc, it = spec.service, spec.instance
    if svc.gpus_per_task > it.gpus:
        yield Problem(
            "service.gpus_per_task",
            svc.gpus_per_task,
            f"{it.name} has only {it.gpus} GPU(s), so the task can never be placed",
            f"request at most {it.gpus}, or pick an instance type with more GPUs",
        )


def _task_cpu(spec: Spec) -> Iterator[Problem]:
    # cpu_units may be the filled-in default; an explicit value above the
    # instance gets this line too.
    svc, it = spec.service, spec.instance
    if svc.cpu_units > it.cpu_units:
        yield Problem(
            "service.cpu_units",
            svc.cpu_units,
            f"{it.name} registers {it.cpu_units} CPU units ({it.vcpus} vCPUs x 1024)",
            f"request at most {it.cpu_units}, or pick a larger instance type",
        )


def _task_memory(spec: Spec) -> Iterator[Problem]:
    svc, it = spec.service, spec.instance
    if svc.memory_mib > it.schedulable_memory_mib:
        yield Problem(
            "service.memory_mib",
            svc.memory_mib,
            f"{it.name} has {it.memory_gib:g} GiB but about {it.schedulable_memory_mib} MiB "
            f"is left for tasks after the OS and the ECS agent reserve "
            f"({catalog.ECS_RESERVED_MEMORY_MIB} MiB)",
            f"request at most {it.schedulable_memory_mib}, or pick a larger instance type",
        )


def _instance_bounds(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.min_instances > cap.max_instances:
        yield Problem(
            "capacity.min_instances",
            cap.min_instances,
            f"greater than capacity.max_instances ({cap.max_instances})",
            "make min_instances <= max_instances",
        )


def _task_bounds(spec: Spec) -> Iterator[Problem]:
    sc = spec.scaling
    if sc.min_tasks > sc.max_tasks:
        yield Problem(
            "scaling.min_tasks",
            sc.min_tasks,
            f"greater than scaling.max_tasks ({sc.max_tasks})",
            "make min_tasks <= max_tasks",
        )


def _reservation_pair(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.capacity_reservation_id is not None and cap.reserved_instances is None:
        yield Problem(
            "capacity.capacity_reservation_id",
            cap.capacity_reservation_id,
            "a reservation needs capacity.reserved_instances, the number of instances "
            "it holds, so the fleet never drops below what you pay for",
            "add `reserved_instances = N` under [capacity]",
        )
    if cap.reserved_instances is not None and cap.capacity_reservation_id is None:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            "set without capacity.capacity_reservation_id",
            "add the reservation id (cr-...) or remove reserved_instances",
        )


def _reservation_floor(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    if cap.reserved_instances is None:
        return
    if cap.reserved_instances > cap.min_instances:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            f"greater than capacity.min_instances ({cap.min_instances}): the fleet would scale "
            "below the reservation you already pay for",
            f"set min_instances to at least {cap.reserved_instances}",
        )
    if cap.reserved_instances > cap.max_instances:
        yield Problem(
            "capacity.reserved_instances",
            cap.reserved_instances,
            f"greater than capacity.max_instances ({cap.max_instances})",
            f"set max_instances to at least {cap.reserved_instances}",
        )


def _max_tasks_reachable(spec: Spec) -> Iterator[Problem]:
    if not _task_fits(spec):
        return  # the task-size rules above already say why nothing fits
    svc, cap, sc, it = spec.service, spec.capacity, spec.scaling, spec.instance
    per = spec.tasks_per_instance
    if per < 1 or sc.max_tasks <= per * cap.max_instances:
        return
    need = -(-sc.max_tasks // per)  # integer ceil: TOML ints are unbounded
    binding = it.binding_limits(svc.gpus_per_task, svc.cpu_units, svc.memory_mib)
    fix = f"raise capacity.max_instances to {need}, or lower max_tasks to "
    fix += f"{per * cap.max_instances}"
    if catalog.ENI in binding:
        fix += (
            ", or pick an instance type with more network interfaces (`ecs-gpu catalog`, "
            "column ENIs: the number in brackets is awsvpc tasks per instance)"
        )
    yield Problem(
        "scaling.max_tasks",
        sc.max_tasks,
        f"{cap.max_instances} x {it.name} fit only {per * cap.max_instances} tasks "
        f"({per} per instance); {_fit_reason(spec, binding)}",
        fix,
    )


def _min_tasks_reachable(spec: Spec) -> Iterator[Problem]:
    if not _task_fits(spec):
        return
    cap, sc = spec.capacity, spec.scaling
    per = spec.tasks_per_instance
    if per >= 1 and sc.min_tasks > per * cap.max_instances:
        yield Problem(
            "scaling.min_tasks",
            sc.min_tasks,
            f"more than {cap.max_instances} instances can hold",
            "lower min_tasks or raise capacity.max_instances",
        )
