"""Link 4's provider check (ASG008): a capacity provider that can grow the fleet.

:mod:`ecs_gpu.checks.doctor.capacity` registers it (a link's checks live in its
module); its judgement is here: the service's providers exist and are ACTIVE with
an Auto Scaling group, each group exists, managed scaling is on, and managed
termination protection has the group's scale-in protection beside it.
"""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu.checks.doctor.common import collection_target
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot

# ecs-gpu's targetCapacity ([capacity] target_capacity_percent's default) where the
# provider reports none.
_TARGET_CAPACITY: Final = 100


def judge_managed_scaling(s: Snapshot, c: Check) -> list[Finding]:
    """ASG008's findings: per provider the service places on, what stops it adding
    an instance."""
    asgs = {
        g["AutoScalingGroupARN"]: g
        for g in s.get("auto_scaling_groups", [])
        if "AutoScalingGroupARN" in g
    }
    usable = [
        cp
        for cp in s["capacity_providers"]
        if cp.get("autoScalingGroupProvider") and cp.get("status", "ACTIVE") == "ACTIVE"
    ]
    wanted = _wanted(s)
    if not usable:
        # Nothing launches an instance: the check's subject is absent, not healthy.
        return [_no_provider(s, c, wanted)]
    names = {cp.get("name") for cp in usable}
    out = [_provider_missing(c, n) for n in wanted if n not in names]
    for cp in usable:
        prov = cp["autoScalingGroupProvider"]
        name = cp.get("name", "?")
        found = (
            _group_missing(s, c, name, prov, asgs),
            _scaling_off(c, name, prov),
            _unprotected(c, name, prov, asgs.get(prov.get("autoScalingGroupArn", ""))),
        )
        out += [f for f in found if f is not None]
    return out


def _wanted(s: Snapshot) -> list[str]:
    """The providers the service places on (its strategy, else the spec's name);
    AWS's own Fargate providers have no group and are never ours."""
    wanted = [
        st.get("capacityProvider")
        for svc in s.get("services", [])
        for st in svc.get("capacityProviderStrategy", [])
    ] + [collection_target(s).get("capacity_provider")]
    return [n for n in dict.fromkeys(wanted) if n and n not in ("FARGATE", "FARGATE_SPOT")]


def _no_provider(s: Snapshot, c: Check, wanted: list[str]) -> Finding:
    return c.finding(
        [
            Evidence(
                "capacity_providers",
                "*",
                "name/status/autoScalingGroupProvider",
                [
                    f"{cp.get('name')} ({cp.get('status')}"
                    + (
                        ", no Auto Scaling group)"
                        if not cp.get("autoScalingGroupProvider")
                        else ")"
                    )
                    for cp in s["capacity_providers"]
                ]
                or "none",
            ),
            Evidence(
                "clusters",
                collection_target(s).get("cluster") or "?",
                "capacityProviders",
                [n for cl in s.get("clusters", []) for n in cl.get("capacityProviders", [])],
            ),
        ],
        "The cluster has no ACTIVE capacity provider with an Auto Scaling group"
        + (f" (the service asks for {', '.join(wanted)})" if wanted else "")
        + ": nothing adds a GPU instance when a task cannot be placed, and the "
        "service's capacity is whatever runs today. Deploy the spec (`ecs-gpu deploy` "
        "creates the provider, attaches it to the cluster and puts it in the service's "
        "strategy).",
        title="No capacity provider grows the fleet",
    )


def _provider_missing(c: Check, missing: str) -> Finding:
    return c.finding(
        [Evidence("capacity_providers", missing, "name", None)],
        f"The service places its tasks with the capacity provider {missing}, which "
        "DescribeCapacityProviders did not return ACTIVE (deleted, being deleted, or "
        "never created): its tasks cannot be placed through it. Redeploy with "
        "`ecs-gpu deploy`.",
        title="The service's capacity provider does not exist",
    )


def _group_missing(
    s: Snapshot, c: Check, name: str, prov: dict[str, Any], asgs: dict[str, Any]
) -> Finding | None:
    group_arn = prov.get("autoScalingGroupArn", "")
    if "auto_scaling_groups" not in s or not group_arn or group_arn in asgs:
        return None
    # By name too: an ARN written with another group id is still the same group.
    group = group_arn.split("autoScalingGroupName/", 1)[-1]
    if any(g.get("AutoScalingGroupName") == group for g in s["auto_scaling_groups"]):
        return None
    return c.finding(
        [
            Evidence(
                "capacity_providers",
                name,
                "autoScalingGroupProvider.autoScalingGroupArn",
                group_arn,
            ),
            Evidence(
                "auto_scaling_groups",
                group,
                "AutoScalingGroupName",
                [g.get("AutoScalingGroupName") for g in s["auto_scaling_groups"]],
            ),
        ],
        f"The capacity provider {name} scales the Auto Scaling group {group}, "
        "which DescribeAutoScalingGroups did not return: it was deleted, so "
        "the provider can launch nothing. A redeploy of the unchanged stack "
        "does not recreate it, and a new group cannot be given to the "
        "provider (UpdateCapacityProvider changes no autoScalingGroupArn; "
        "aws-semantics.md §12): delete the stack and deploy it again, "
        "`ecs-gpu destroy SPEC` then `ecs-gpu deploy SPEC` (the service runs "
        "no task in between).",
        title="The capacity provider's Auto Scaling group does not exist",
    )


def _scaling_off(c: Check, name: str, prov: dict[str, Any]) -> Finding | None:
    ms = prov.get("managedScaling", {})
    if ms.get("status") == "ENABLED":
        return None
    return c.finding(
        [
            Evidence(
                "capacity_providers",
                name,
                "autoScalingGroupProvider.managedScaling.status",
                ms.get("status"),
            ),
            Evidence("capacity_providers", name, "autoScalingGroupProvider.managedScaling", ms),
        ],
        f"Managed scaling of {name} is off ({_shorthand(ms) or 'no settings'}): "
        "nothing adds an instance when GPU tasks cannot be placed. Enable it, "
        "repeating the provider's other settings (a managedScaling field left out "
        "takes ECS's default, aws-semantics.md §12): " + _enable_managed_scaling(name, prov) + ".",
    )


def _unprotected(
    c: Check, name: str, prov: dict[str, Any], asg: dict[str, Any] | None
) -> Finding | None:
    if (
        prov.get("managedTerminationProtection") != "ENABLED"
        or asg is None
        or asg.get("NewInstancesProtectedFromScaleIn", False)
    ):
        return None
    return c.finding(
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
        "Protect new instances: aws autoscaling update-auto-scaling-group "
        f"--auto-scaling-group-name {asg['AutoScalingGroupName']} "
        "--new-instances-protected-from-scale-in"
        + _protect_running(asg)
        + " (`ecs-gpu deploy` sets it too).",
        severity="warning",
    )


def _shorthand(fields: dict[str, Any]) -> str:
    """``fields`` in the AWS CLI's shorthand syntax (``a=1,b=X``)."""
    return ",".join(f"{k}={v}" for k, v in fields.items() if not isinstance(v, dict))


def _enable_managed_scaling(name: str, prov: dict[str, Any]) -> str:
    """The update-capacity-provider command that turns managed scaling on and repeats
    every setting the provider has now (the managedScaling fields, termination
    protection and draining), so that nothing else changes with it."""
    ms = {
        "status": "ENABLED",
        "targetCapacity": _TARGET_CAPACITY,
        **{k: v for k, v in prov.get("managedScaling", {}).items() if k != "status"},
    }
    rest = {
        k: prov[k]
        for k in ("managedTerminationProtection", "managedDraining")
        if isinstance(prov.get(k), str)
    }
    provider = f"managedScaling={{{_shorthand(ms)}}}" + "".join(
        f",{k}={v}" for k, v in rest.items()
    )
    return (
        f"aws ecs update-capacity-provider --name {name} --auto-scaling-group-provider '{provider}'"
    )


def _protect_running(asg: dict[str, Any]) -> str:
    """The set-instance-protection clause for the group's unprotected instances ("" if none)."""
    ids = [
        i["InstanceId"]
        for i in asg.get("Instances", [])
        if "InstanceId" in i and not i.get("ProtectedFromScaleIn")
    ]
    if not ids:
        return ""
    return (
        "; it protects no instance running now, so protect those too: aws autoscaling "
        f"set-instance-protection --auto-scaling-group-name {asg['AutoScalingGroupName']} "
        f"--instance-ids {' '.join(ids)} --protected-from-scale-in"
    )
