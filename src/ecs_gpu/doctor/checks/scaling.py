"""Link 8, scaling: the service's and the ASG's scaling policies."""

from __future__ import annotations

from ecs_gpu import gpu_metric
from ecs_gpu.doctor.checks.common import (
    NEVER,
    collection_target,
    parse_time,
    policy_metrics,
    reads_demand_metric,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.snapshot import Snapshot


@check(
    "SCL001",
    link="scaling",
    severity="error",
    title="GPU policy tracks a metric nobody writes",
    requires=("scaling_policies",),
    doc="A GPU target-tracking policy's metric differs from the contract (plain or metric-math "
    "form, GPUReservation divisor included), or none exists.",
)
def _gpu_policy(s: Snapshot, c: Check) -> list[Finding]:
    target = collection_target(s)
    asg = target.get("asg")
    asgs = [
        g["AutoScalingGroupName"]
        for g in s.get("auto_scaling_groups", [])
        if g.get("AutoScalingGroupName")
    ] or ([asg] if asg else [])
    cluster = target.get("cluster")
    clusters = [cl["clusterName"] for cl in s.get("clusters", []) if cl.get("clusterName")] or (
        [cluster] if cluster else []
    )
    out = []
    tracks_contract = False
    for p in s["scaling_policies"]:
        for path, m in policy_metrics(p):
            name = m.get("MetricName", "")
            dims = {d.get("Name"): d.get("Value") for d in m.get("Dimensions", [])}
            evidence = [Evidence("scaling_policies", p.get("PolicyName", "?"), path, m)]
            if (m.get("Namespace"), name) == (
                gpu_metric.RESERVATION_NAMESPACE,
                gpu_metric.RESERVATION_METRIC,
            ):
                # The task-gpus divisor: ECS writes it per cluster, by ClusterName only.
                if set(dims) == {gpu_metric.RESERVATION_DIMENSION} and (
                    not clusters or dims.get(gpu_metric.RESERVATION_DIMENSION) in clusters
                ):
                    continue
                out.append(
                    c.finding(
                        evidence,
                        f"The policy divides by {gpu_metric.RESERVATION_NAMESPACE}/{name} "
                        f"{dims}, but ECS writes it for this service's cluster only as "
                        f"{gpu_metric.RESERVATION_DIMENSION}="
                        f"{clusters[0] if clusters else '<cluster>'}: the tracked expression "
                        "reads a series nobody writes. Redeploy the policy from the spec "
                        "(`ecs-gpu deploy`).",
                    )
                )
                continue
            gpuish = name.startswith(gpu_metric.METRIC_PREFIX) or "gpu" in name.lower()
            if not gpuish:
                continue
            ok = (
                name == gpu_metric.UTILIZATION
                and m.get("Namespace") == gpu_metric.NAMESPACE
                and set(dims) == {gpu_metric.DIMENSION}
                and (not asgs or dims.get(gpu_metric.DIMENSION) in asgs)
            )
            if ok:
                tracks_contract = True
                continue
            out.append(
                c.finding(
                    evidence,
                    f"The policy tracks {m.get('Namespace')}/{name} {dims}, but the host agent "
                    f"writes {gpu_metric.NAMESPACE}/{gpu_metric.UTILIZATION} with only "
                    f"{gpu_metric.DIMENSION}={asgs[0] if asgs else '<asg>'}: the policy follows a "
                    "series nobody writes. Redeploy the policy from the spec (`ecs-gpu deploy`).",
                )
            )
    # A service that scales on concurrency needs no GPU policy (gpu_guard is optional).
    on_concurrency = any(reads_demand_metric(p) for p in s["scaling_policies"])
    if not tracks_contract and not out and not on_concurrency:
        out.append(
            c.finding(
                [
                    Evidence(
                        "scaling_policies",
                        target.get("service") or "?",
                        "PolicyName",
                        [p.get("PolicyName") for p in s["scaling_policies"]],
                    )
                ],
                "No target-tracking policy scales the service on GPU utilization: tasks follow "
                "CPU only. Deploy the spec's scaling policies (`ecs-gpu deploy`).",
                title="No GPU target-tracking policy on the service",
                severity="warning",
            )
        )
    return out


@check(
    "SCL002",
    link="scaling",
    severity="warning",
    title="Service auto scaling is off",
    requires=("scalable_targets",),
    doc="The service is not a scalable target, or its dynamic scaling is suspended.",
)
def _scaling_active(s: Snapshot, c: Check) -> list[Finding]:
    svc = collection_target(s).get("service") or "?"
    if not s["scalable_targets"]:
        return [
            c.finding(
                [Evidence("scalable_targets", svc, "ResourceId", "none registered")],
                "The service is not a scalable target, so no policy can change its task count. "
                "Register it (`ecs-gpu deploy` does).",
            )
        ]
    out = []
    for t in s["scalable_targets"]:
        susp = t.get("SuspendedState", {})
        on = [k for k in ("DynamicScalingInSuspended", "DynamicScalingOutSuspended") if susp.get(k)]
        if on:
            out.append(
                c.finding(
                    [Evidence("scalable_targets", t["ResourceId"], "SuspendedState", susp)],
                    f"Scaling is suspended ({', '.join(on)}). Resume it: aws "
                    "application-autoscaling register-scalable-target --service-namespace ecs "
                    "--scalable-dimension "
                    f"ecs:service:DesiredCount --resource-id {t['ResourceId']} --suspended-state "
                    "DynamicScalingInSuspended=false,DynamicScalingOutSuspended=false",
                )
            )
    return out


@check(
    "SCL003",
    link="scaling",
    severity="warning",
    title="Service scaling activity failed",
    requires=("service_scaling_activities",),
    doc="The newest Application Auto Scaling activity failed.",
)
def _service_scaling_failed(s: Snapshot, c: Check) -> list[Finding]:
    acts = sorted(
        s["service_scaling_activities"],
        key=lambda a: parse_time(a.get("StartTime")) or NEVER,
        reverse=True,
    )
    if not acts or acts[0].get("StatusCode") not in ("Failed",):
        return []
    a = acts[0]
    return [
        c.finding(
            [
                Evidence(
                    "service_scaling_activities",
                    a.get("ActivityId", "?"),
                    "StatusMessage",
                    a.get("StatusMessage"),
                )
            ],
            "Application Auto Scaling could not change the task count: fix what StatusMessage "
            "names (usually IAM of the scaling role or a deleted service).",
        )
    ]


@check(
    "ASG003",
    link="scaling",
    severity="error",
    title="Another policy sizes the GPU ASG",
    requires=("asg_policies",),
    doc="A scaling policy other than ECSManaged* is attached to the ASG (host CPU: error).",
)
def _host_cpu_policy(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for p in s["asg_policies"]:
        name = p.get("PolicyName", "?")
        # The capacity provider's own policy is ECSManagedAutoScalingPolicy-<uuid>.
        if name.startswith("ECSManaged"):
            continue
        pmt = (
            p.get("TargetTrackingConfiguration", {})
            .get("PredefinedMetricSpecification", {})
            .get("PredefinedMetricType")
        )
        cpu = pmt == "ASGAverageCPUUtilization"
        out.append(
            c.finding(
                [
                    Evidence(
                        "asg_policies",
                        name,
                        "TargetTrackingConfiguration.PredefinedMetricSpecification.PredefinedMetricType"
                        if cpu
                        else "PolicyType",
                        pmt if cpu else p.get("PolicyType"),
                    )
                ],
                f"Delete it (aws autoscaling delete-policy --auto-scaling-group-name "
                f"{p.get('AutoScalingGroupName')} --policy-name {name}): the capacity provider "
                "already sizes the GPU ASG from task placement. "
                + (
                    "A host-CPU policy fights it, and a new GPU instance cannot lower the CPU "
                    "of tasks that stay where they are."
                    if cpu
                    else "A second controller on the same ASG makes them fight."
                ),
                title="A host-CPU policy fights the capacity provider" if cpu else None,
                severity="error" if cpu else "warning",
            )
        )
    return out
