"""Link 3, placement: a task fits on an instance (free GPUs, placement constraints)."""

from __future__ import annotations

import re

from ecs_gpu import catalog
from ecs_gpu.checks.doctor.common import (
    active_instances,
    attribute,
    gpus_per_task,
    resource_gpus,
    service_items,
    service_short,
    short_name,
    task_definition,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot


@check(
    "PLC002",
    link="placement",
    severity="error",
    title="All GPUs are reserved",
    requires=("container_instances", "services"),
    doc="The service is short of tasks and no instance has enough free GPUs.",
)
def _gpus_exhausted(s: Snapshot, c: Check) -> list[Finding]:
    active = active_instances(s)
    if not active or not service_short(s):
        return []
    need = 1
    for svc in service_items(s):
        td = task_definition(s, svc.get("taskDefinition"))
        if td is not None:
            need = max(need, gpus_per_task(td))
    registered = sum(resource_gpus(ci.get("registeredResources", [])) for ci in active)
    if registered == 0:
        return []  # ECS003 already says no GPU is registered
    remaining = {
        ci["ec2InstanceId"]: resource_gpus(ci.get("remainingResources", [])) for ci in active
    }
    if any(v >= need for v in remaining.values()):
        return []
    svc = service_items(s)[0]
    return [
        c.finding(
            [
                Evidence("container_instances", "*", "remainingResources[GPU]", remaining),
                Evidence(
                    "services",
                    svc.get("serviceName", "?"),
                    "runningCount/desiredCount",
                    f"{svc.get('runningCount')}/{svc.get('desiredCount')}",
                ),
            ],
            f"All {registered} registered GPUs are reserved and a task needs {need}: ECS pins "
            "whole GPUs, so no free CPU or memory helps. The capacity provider should add an "
            "instance; if it does not, read ASG008/ASG001 below, or raise [capacity] "
            "max_instances.",
        )
    ]


_TYPE_EXPR = re.compile(
    r"attribute:ecs\.instance-type\s*(==|=~|in)\s*(\[[^\]]*\]|\(?[\w.*\-]+\)?)", re.IGNORECASE
)


def _placement_types(expr: str) -> tuple[str, list[str]] | None:
    m = _TYPE_EXPR.search(expr)
    if not m:
        return None
    op, raw = m.group(1).lower(), m.group(2)
    values = [v.strip().strip("'\"") for v in raw.strip("[]()").split(",") if v.strip()]
    return op, values


def _type_matches(op: str, value: str, itype: str) -> bool:
    if op == "=~":
        return re.fullmatch(value.replace(".", r"\.").replace("*", ".*"), itype) is not None
    return value == itype


@check(
    "PLC001",
    link="placement",
    severity="error",
    title="Placement constraint matches no usable instance type",
    requires=("services", "container_instances"),
    doc="A memberOf attribute:ecs.instance-type constraint names an unknown or unregistered type.",
)
def _placement_constraint(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    registered = sorted(
        {t for ci in s.get("container_instances", []) if (t := attribute(ci, "ecs.instance-type"))}
    )
    for svc in service_items(s):
        # (kind, id, index within that object's own list, constraint)
        constraints = [
            ("services", svc.get("serviceName", "?"), i, p)
            for i, p in enumerate(svc.get("placementConstraints", []))
        ]
        td = task_definition(s, svc.get("taskDefinition"))
        if td is not None:
            constraints += [
                ("task_definitions", short_name(td["taskDefinitionArn"]), i, p)
                for i, p in enumerate(td.get("placementConstraints", []))
            ]
        for kind, oid, i, p in constraints:
            if p.get("type") != "memberOf":
                continue
            parsed = _placement_types(p.get("expression", ""))
            if parsed is None:
                continue
            op, values = parsed
            ev = Evidence(kind, oid, f"placementConstraints[{i}].expression", p.get("expression"))
            if op != "=~":
                for v in values:
                    try:
                        catalog.lookup(v)
                    except ValueError as e:
                        out.append(
                            c.finding(
                                [ev],
                                f"{v!r} is not a GPU instance type ECS can use ({e}). A task "
                                "with this constraint stays PENDING with no GPU-specific error. "
                                "Fix the expression to the spec's [capacity] instance_type.",
                            )
                        )
            if registered and not any(_type_matches(op, v, t) for v in values for t in registered):
                out.append(
                    c.finding(
                        [ev, Evidence("container_instances", "*", "ecs.instance-type", registered)],
                        f"The constraint matches none of the registered instance types "
                        f"({', '.join(registered)}): no task can ever be placed. Make the "
                        "constraint and the launch template's InstanceType agree.",
                    )
                )
    return out
