"""Link 1, instances: container instances registered, connected, with GPUs."""

from __future__ import annotations

from typing import Any

from ecs_gpu import catalog
from ecs_gpu.checks.doctor.common import (
    active_instances,
    attribute,
    collection_target,
    in_service,
    replace_instance,
    resource_gpus,
    service_items,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import ami


@check(
    "ECS001",
    link="instances",
    severity="error",
    title="No container instance is registered",
    requires=("container_instances",),
    doc="The cluster has no ACTIVE container instance: nothing can run.",
)
def _ecs_instances(s: Snapshot, c: Check) -> list[Finding]:
    active = active_instances(s)
    # A service scaled to zero tasks needs no instance.
    if active or not any(svc.get("desiredCount", 0) > 0 for svc in service_items(s)):
        return []
    cluster = collection_target(s).get("cluster") or "the cluster"
    statuses = sorted({ci.get("status", "?") for ci in s["container_instances"]})
    hosts = [iid for ids in in_service(s.get("auto_scaling_groups", [])).values() for iid in ids]
    ev = [Evidence("container_instances", cluster, "status", statuses or "none registered")]
    if hosts:
        ev.append(Evidence("auto_scaling_groups", "*", "Instances[].LifecycleState", "InService"))
        fix = (
            f"Instances {', '.join(hosts[:5])} run but never registered: check that "
            f"/etc/ecs/ecs.config has ECS_CLUSTER={cluster}, that the instance role has the "
            "AmazonEC2ContainerServiceforEC2Role permissions, and that the ecs service is "
            "active (ecs-gpu doctor --probe-hosts)."
        )
    else:
        fix = (
            "No instance is running: the capacity provider has not launched one or the launch "
            "failed. Read the Auto Scaling checks below (ASG001 launch failures, ASG008 managed "
            "scaling) and check the ASG's MaxSize."
        )
    return [c.finding(ev, fix)]


@check(
    "ECS002",
    link="instances",
    severity="error",
    title="ECS agent disconnected",
    requires=("container_instances",),
    doc="An ACTIVE container instance reports agentConnected=false.",
)
def _agent_connected(s: Snapshot, c: Check) -> list[Finding]:
    return [
        c.finding(
            [Evidence("container_instances", ci["ec2InstanceId"], "agentConnected", False)],
            f"The ECS agent on {ci['ec2InstanceId']} is disconnected: ECS places no task there. "
            "Check `systemctl status ecs` and /var/log/ecs/ecs-agent.log on the instance "
            "(ecs-gpu doctor --probe-hosts), or have the group replace it: "
            + replace_instance(ci["ec2InstanceId"])
            + ".",
        )
        for ci in active_instances(s)
        if ci.get("agentConnected") is False
    ]


def _meant_for_gpu(s: Snapshot, ci: dict[str, Any]) -> bool:
    """Is this instance one of the GPU fleet's (not another service's CPU host)?"""
    cps = {
        st.get("capacityProvider")
        for svc in s.get("services", [])
        for st in svc.get("capacityProviderStrategy", [])
    } | {collection_target(s).get("capacity_provider")}
    if ci.get("capacityProviderName") in cps - {None}:
        return True
    return attribute(ci, "ecs.instance-type") in catalog.CATALOG


@check(
    "ECS003",
    link="instances",
    severity="error",
    title="Container instance registers no GPU",
    requires=("container_instances",),
    doc="registeredResources has no GPU: wrong AMI or ECS_ENABLE_GPU_SUPPORT missing.",
)
def _gpus_registered(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for ci in active_instances(s):
        if resource_gpus(ci.get("registeredResources", [])) > 0 or not _meant_for_gpu(s, ci):
            continue
        names = [r.get("name") for r in ci.get("registeredResources", [])]
        itype = attribute(ci, "ecs.instance-type")
        out.append(
            c.finding(
                [
                    Evidence(
                        "container_instances",
                        ci["ec2InstanceId"],
                        "registeredResources[].name",
                        names,
                    ),
                    Evidence(
                        "container_instances",
                        ci["ec2InstanceId"],
                        "ecs.ami-id",
                        attribute(ci, "ecs.ami-id"),
                    ),
                ],
                f"{ci['ec2InstanceId']} ({itype or 'unknown type'}) registered no GPU. Either "
                "the AMI is not the ECS GPU-optimized AMI (the SSM parameter "
                f"{ami.RECOMMENDED_SSM_PARAMETER} names it; an ecs-gpu stack takes it with "
                "`ecs-gpu deploy SPEC --update-ami`, or a [capacity] ami_id that is one) or "
                "ECS_ENABLE_GPU_SUPPORT=true is missing from /etc/ecs/ecs.config; the two look "
                "the same from ECS. Fix the launch template, then replace the instance: "
                + replace_instance(ci["ec2InstanceId"])
                + ".",
            )
        )
    return out
