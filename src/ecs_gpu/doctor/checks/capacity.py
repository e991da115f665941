"""Link 4, capacity: the capacity provider and the ASG add instances."""

from __future__ import annotations

from typing import Any

from ecs_gpu.doctor.checks.common import (
    NEVER,
    ODCR_FIRST,
    parse_time,
    service_short,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.snapshot import Snapshot


@check(
    "CAP001",
    link="capacity",
    severity="error",
    title="Capacity provider cannot grow the fleet",
    requires=("capacity_providers",),
    doc="Managed scaling is disabled, or termination protection lacks ASG scale-in protection.",
)
def _cp_managed_scaling(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    asgs = {
        g["AutoScalingGroupARN"]: g
        for g in s.get("auto_scaling_groups", [])
        if "AutoScalingGroupARN" in g
    }
    for cp in s["capacity_providers"]:
        prov = cp.get("autoScalingGroupProvider")
        if not prov:
            continue
        name = cp.get("name", "?")
        ms = prov.get("managedScaling", {})
        if ms.get("status") != "ENABLED":
            out.append(
                c.finding(
                    [
                        Evidence(
                            "capacity_providers",
                            name,
                            "autoScalingGroupProvider.managedScaling.status",
                            ms.get("status"),
                        )
                    ],
                    "Managed scaling is off: nothing adds an instance when GPU tasks cannot be "
                    f"placed. Enable it: aws ecs update-capacity-provider --name {name} "
                    "--auto-scaling-group-provider "
                    "'managedScaling={status=ENABLED,targetCapacity=100}'.",
                )
            )
        asg = asgs.get(prov.get("autoScalingGroupArn", ""))
        if (
            prov.get("managedTerminationProtection") == "ENABLED"
            and asg is not None
            and not asg.get("NewInstancesProtectedFromScaleIn", False)
        ):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "capacity_providers",
                            name,
                            "autoScalingGroupProvider.managedTerminationProtection",
                            "ENABLED",
                        ),
                        Evidence(
                            "auto_scaling_groups",
                            asg["AutoScalingGroupName"],
                            "NewInstancesProtectedFromScaleIn",
                            False,
                        ),
                    ],
                    "Managed termination protection needs the ASG to protect new instances from "
                    "scale-in; without it the ASG can terminate an instance running GPU tasks. "
                    "Set NewInstancesProtectedFromScaleIn on the ASG.",
                    severity="warning",
                )
            )
    return out


_STOCKOUT = ("InsufficientInstanceCapacity", "insufficient capacity")


_QUOTA = ("VcpuLimitExceeded", "InstanceLimitExceeded")


_RESERVATION_FULL = ("ReservationCapacityExceeded",)


@check(
    "ASG001",
    link="capacity",
    severity="error",
    title="The ASG failed to launch an instance",
    requires=("scaling_activities",),
    doc="The newest EC2 Auto Scaling activity failed (GPU stock-out, quota, launch template).",
)
def _asg_launch_failed(s: Snapshot, c: Check) -> list[Finding]:
    by_asg: dict[str, list[dict[str, Any]]] = {}
    for a in s["scaling_activities"]:
        by_asg.setdefault(a.get("AutoScalingGroupName", "?"), []).append(a)
    out = []
    for asg, acts in sorted(by_asg.items()):
        acts.sort(key=lambda a: parse_time(a.get("StartTime")) or NEVER, reverse=True)
        latest = acts[0]
        if latest.get("StatusCode") not in ("Failed", "Cancelled"):
            continue
        msg = latest.get("StatusMessage", "") or latest.get("Description", "")
        if any(k in msg for k in _STOCKOUT):
            fix = (
                "AWS has no capacity of this GPU type in the AZ (stock-out). Add private subnets "
                "in more Availability Zones to [network] subnet_ids, use a capacity reservation "
                "([capacity] capacity_reservation_id), or choose another GPU type; the ASG keeps "
                "retrying on its own."
            )
        elif any(k in msg for k in _RESERVATION_FULL):
            fix = (
                "The launch targeted a Capacity Reservation that is full. Target it from the "
                f"group with {ODCR_FIRST} (redeploy with `ecs-gpu deploy`; see ASG004), so "
                "launches beyond the reservation run On-Demand."
            )
        elif any(k in msg for k in _QUOTA):
            fix = (
                "The account's On-Demand vCPU quota for this family is exhausted. Request an "
                "increase of 'Running On-Demand G and VT instances' (or P instances) in Service "
                "Quotas, or lower [capacity] max_instances."
            )
        else:
            fix = (
                "Read StatusMessage, fix the launch template or IAM it names, and let the ASG "
                "retry."
            )
        out.append(
            c.finding(
                [
                    Evidence(
                        "scaling_activities", latest.get("ActivityId", asg), "StatusMessage", msg
                    )
                ],
                fix,
            )
        )
    return out


@check(
    "ASG002",
    link="capacity",
    severity="warning",
    title="The ASG is at its maximum size",
    requires=("auto_scaling_groups", "services"),
    doc="DesiredCapacity equals MaxSize while the service waits for tasks.",
)
def _asg_at_max(s: Snapshot, c: Check) -> list[Finding]:
    if not service_short(s):
        return []
    return [
        c.finding(
            [
                Evidence(
                    "auto_scaling_groups",
                    g["AutoScalingGroupName"],
                    "DesiredCapacity/MaxSize",
                    f"{g['DesiredCapacity']}/{g['MaxSize']}",
                ),
            ],
            f"The ASG is at MaxSize {g['MaxSize']} while the service still waits for tasks: the "
            "capacity provider cannot add an instance. Raise [capacity] max_instances (ASG "
            "MaxSize) or lower [scaling] max_tasks to what the fleet holds.",
        )
        for g in s["auto_scaling_groups"]
        if g.get("DesiredCapacity", 0) >= g.get("MaxSize", 0)
    ]
