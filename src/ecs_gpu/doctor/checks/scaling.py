"""Link 8, scaling: the service's and the ASG's scaling policies."""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu import demand_metric, fast_path, fast_scale_in, gpu_metric, wake
from ecs_gpu.doctor.checks.common import (
    NEVER,
    collection_target,
    demand_like,
    demand_names,
    gpu_like,
    parse_time,
    policy_alarms,
    policy_metric_stats,
    policy_metrics,
    policy_names_evidence,
    scales_on_concurrency,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.checks.runner import why_missing
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
            if not gpu_like(m):
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
    if tracks_contract or out:
        return out
    names = policy_names_evidence(s)
    # Decided by the spec's signal (else the policies): a concurrency service has
    # a GPU policy only as its gpu_guard; its own missing policy is SCL004's.
    if not scales_on_concurrency(s):
        out.append(
            c.finding(
                [names],
                "No target-tracking policy scales the service on GPU utilization: tasks follow "
                "CPU only. Deploy the spec's scaling policies (`ecs-gpu deploy`).",
                title="No GPU target-tracking policy on the service",
                severity="warning",
            )
        )
    elif target.get("gpu_guard"):
        out.append(
            c.finding(
                [names, Evidence("_collection", "target", "gpu_guard", True)],
                "The spec sets [scaling] gpu_guard = true, but no target-tracking policy tracks "
                "GPU utilization: the guard is off, and tasks follow concurrency and CPU only. "
                "Deploy the spec's scaling policies (`ecs-gpu deploy`).",
                title="No GPU guard policy on the service",
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
    "SCL004",
    link="scaling",
    severity="error",
    title="Concurrency policy tracks a series nobody writes",
    requires=("scaling_policies",),
    doc="The service scales on concurrency, but no target-tracking policy reads the sidecars' "
    "series with exactly its namespace, name, dimensions and statistic Average.",
)
def _concurrency_policy(s: Snapshot, c: Check) -> list[Finding]:
    if not scales_on_concurrency(s):
        return []
    cluster, service = demand_names(s)
    want = (
        f"{demand_metric.NAMESPACE}/{demand_metric.METRIC_NAME} "
        f"({demand_metric.cli_dimensions(cluster, service)}, statistic "
        f"{demand_metric.STATISTIC})"
    )
    out = []
    for p in s["scaling_policies"]:
        if p.get("PolicyType", "TargetTrackingScaling") != "TargetTrackingScaling":
            continue
        for path, m, stat in policy_metric_stats(p):
            if not demand_like(m):
                continue
            diffs = demand_metric.series_differences(m, stat, cluster, service)
            if not diffs:
                return []  # one policy tracks the series: the signal works
            out.append(
                c.finding(
                    [Evidence("scaling_policies", p.get("PolicyName", "?"), path, m)],
                    f"The policy tracks {'; '.join(d[2] for d in diffs)}. The sidecars "
                    f"write {want}, the mean per task that target tracking holds at the "
                    "target: this policy follows a series nobody writes (the reference "
                    "module's 8.3.0 bug), so load never changes the task count. Redeploy the "
                    "policy from the spec (`ecs-gpu deploy`).",
                )
            )
    if out:
        return out
    target = collection_target(s)
    return [
        c.finding(
            [
                policy_names_evidence(s),
                Evidence("_collection", "target", "signal", target.get("signal")),
            ],
            f"The service scales on concurrency, but no target-tracking policy tracks {want}: "
            "load does not change the task count (only the CPU policy does, and the fast "
            "path, where deployed, only adds). Deploy the spec's scaling policies "
            "(`ecs-gpu deploy`).",
            title="No target-tracking policy scales the service on concurrency",
        )
    ]


@check(
    "SCL005",
    link="scaling",
    severity="error",
    title="Fast-path alarm differs from the spec",
    # alarms is read only for a concurrency service: a GPU one needs none here.
    requires=("scaling_policies",),
    doc="The spec deploys the fast path, but the service has no StepScaling policy, no alarm "
    "invokes it, or the alarm's namespace, name, dimensions, statistic, period or threshold "
    "differ from fast_path's (warning: the alarm is INSUFFICIENT_DATA).",
)
def _fast_path(s: Snapshot, c: Check) -> list[Finding]:
    if not scales_on_concurrency(s):
        return []  # the GPU signals have no 10-second series, hence no fast path
    target = collection_target(s)
    # A snapshot taken with the spec records its threshold (None: fast path off).
    from_spec = target.get("signal") is not None and "fast_path_threshold" in target
    threshold = target.get("fast_path_threshold") if from_spec else None
    if from_spec and threshold is None:
        return []
    if "alarms" not in s:
        raise Unknown(f"alarms is missing: {why_missing(s, ('alarms',))}")
    cluster, service = demand_names(s)
    want = _fast_path_wanted(cluster, service, threshold)
    # The fast scale-in's step policy only removes: SCL007 checks it; the wake
    # path's adds one task: SCL008 does.
    steps = [
        p
        for p in s["scaling_policies"]
        if p.get("PolicyType") == "StepScaling"
        and not fast_scale_in.is_scale_in_policy(p)
        and not wake.is_wake_policy(p)
    ]
    if not steps:
        if not from_spec:
            raise Unknown(
                "the service has no StepScaling policy, and without the spec doctor cannot "
                "tell whether it should ([scaling] fast_scale_out): run `ecs-gpu doctor SPEC`"
            )
        return [_missing_step_policy(s, c, threshold, want)]
    good: list[dict[str, Any]] = []
    bad: list[Finding] = []
    for p in steps:
        matching, wrong = _step_policy_alarms(s, c, p, (cluster, service), threshold, want)
        good += matching
        bad += wrong
    if not good:
        return bad
    return [
        _fast_alarm_without_data(c, a) for a in good if a.get("StateValue") == "INSUFFICIENT_DATA"
    ]


_REDEPLOY_FAST_PATH: Final = (
    "Redeploy with `ecs-gpu deploy`, which writes the step policy and its alarm from the spec."
)


def _fast_path_wanted(cluster: str, service: str, threshold: float | None) -> str:
    """The alarm the fast path needs, in words: series, statistic, period, threshold."""
    return (
        f"{demand_metric.NAMESPACE}/{demand_metric.METRIC_NAME} "
        f"({demand_metric.cli_dimensions(cluster, service)}), statistic {fast_path.STATISTIC}, "
        f"period {fast_path.ALARM_PERIOD_S} s, threshold "
        + (
            f"{threshold:g}"
            if threshold is not None
            else "[scaling] panic_threshold_percent of target_concurrency_per_task"
        )
    )


def _missing_step_policy(s: Snapshot, c: Check, threshold: float | None, want: str) -> Finding:
    """The spec deploys the fast path, and the service has no StepScaling policy."""
    return c.finding(
        [
            Evidence(
                "scaling_policies",
                collection_target(s).get("service") or "?",
                "PolicyType",
                {p.get("PolicyName", "?"): p.get("PolicyType") for p in s["scaling_policies"]},
            ),
            Evidence("_collection", "target", "fast_path_threshold", threshold),
        ],
        "The spec deploys the fast path (a StepScaling policy invoked by an alarm on "
        f"{want}), but the service has no StepScaling policy: a load step waits for "
        "target tracking's one-minute datapoints, minutes, before a task is added. "
        + _REDEPLOY_FAST_PATH,
        title="The fast path's StepScaling policy is missing",
    )


def _step_policy_alarms(
    s: Snapshot,
    c: Check,
    p: dict[str, Any],
    names: tuple[str, str],
    threshold: float | None,
    want: str,
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """One step policy's alarms: those as the fast path needs them, and a finding per other.

    ``names``: the (cluster, service) the concurrency series is written under.
    """
    pname = p.get("PolicyName", "?")
    alarm_names, alarms = policy_alarms(s, p)
    if not alarm_names:
        return [], [
            c.finding(
                [Evidence("scaling_policies", pname, "Alarms", p.get("Alarms", []))],
                f"No alarm invokes the step policy {pname}, so the fast path never runs. "
                f"It needs an alarm on {want}. " + _REDEPLOY_FAST_PATH,
                title="No alarm invokes the fast path's step policy",
            )
        ]
    good: list[dict[str, Any]] = []
    bad: list[Finding] = []
    collected = {a.get("AlarmName") for a in alarms}
    for name in alarm_names:
        if name not in collected:
            bad.append(
                c.finding(
                    [
                        Evidence("scaling_policies", pname, "Alarms", p.get("Alarms", [])),
                        Evidence("alarms", name, "AlarmName", None),
                    ],
                    f"The step policy {pname} names the alarm {name}, but DescribeAlarms "
                    "did not return it (deleted?), so nothing invokes the fast path. "
                    + _REDEPLOY_FAST_PATH,
                    title="The fast path's alarm does not exist",
                )
            )
    for a in alarms:
        diffs = fast_path.alarm_differences(a, *names, threshold)
        if not diffs:
            good.append(a)
            continue
        name = a.get("AlarmName", "?")
        bad.append(
            c.finding(
                [Evidence("alarms", name, field, value) for field, value, _ in diffs],
                f"The alarm {name} that invokes the step policy {pname} watches "
                f"{'; '.join(d[2] for d in diffs)}. The fast path needs {want}: on another "
                "series it never fires, and at another period or threshold it fires at a "
                "load or pace the spec did not ask for. " + _REDEPLOY_FAST_PATH,
            )
        )
    return good, bad


def _fast_alarm_without_data(c: Check, a: dict[str, Any]) -> Finding:
    """The fast path's alarm is right but INSUFFICIENT_DATA: a warning."""
    name = a.get("AlarmName", "?")
    return c.finding(
        [
            Evidence("alarms", name, "StateValue", a.get("StateValue")),
            Evidence("alarms", name, "StateReason", a.get("StateReason")),
            Evidence("alarms", name, "TreatMissingData", a.get("TreatMissingData")),
        ],
        f"The fast path's alarm {a.get('AlarmName')} has no data, so its step policy "
        "cannot run and a load step waits for target tracking. A new alarm starts so and "
        "leaves it at its first evaluation; one deployed with TreatMissingData notBreaching "
        "goes OK even while the series is silent. If it stays: check that the series "
        "arrives (MET005) and redeploy with `ecs-gpu deploy`, which sets notBreaching.",
        title="The fast path's alarm has no data",
        severity="warning",
    )


@check(
    "SCL006",
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


@check(
    "SCL007",
    link="scaling",
    severity="error",
    title="Fast scale-in differs from the spec",
    requires=("scaling_policies",),
    doc="The spec deploys the fast scale-in, but the service has no StepScaling policy that "
    "removes tasks, no alarm invokes it, or the alarm's metric math, period, comparison or "
    "threshold differ from fast_scale_in's.",
)
def _fast_scale_in(s: Snapshot, c: Check) -> list[Finding]:
    if not scales_on_concurrency(s):
        return []  # the GPU signals have no 10-second series, hence no fast scale-in
    target = collection_target(s)
    from_spec = target.get("signal") is not None and "fast_scale_in_threshold" in target
    threshold = target.get("fast_scale_in_threshold") if from_spec else None
    if from_spec and threshold is None:
        return []
    if "alarms" not in s:
        raise Unknown(f"alarms is missing: {why_missing(s, ('alarms',))}")
    cluster, service = demand_names(s)
    removers = [
        p
        for p in s["scaling_policies"]
        if p.get("PolicyType") == "StepScaling" and fast_scale_in.is_scale_in_policy(p)
    ]
    if not removers:
        if not from_spec:
            raise Unknown(
                "the service has no StepScaling policy that removes tasks, and without the "
                "spec doctor cannot tell whether it should ([scaling] fast_scale_in): run "
                "`ecs-gpu doctor SPEC`"
            )
        return [
            c.finding(
                [
                    Evidence(
                        "scaling_policies",
                        target.get("service") or "?",
                        "PolicyType",
                        {
                            p.get("PolicyName", "?"): p.get("PolicyType")
                            for p in s["scaling_policies"]
                        },
                    ),
                    Evidence("_collection", "target", "fast_scale_in_threshold", threshold),
                ],
                "The spec deploys the fast scale-in (a StepScaling policy that removes at most "
                f"{fast_scale_in.MAX_STEP_PERCENT} % of the tasks, invoked by a 10-second alarm "
                "on the concurrency per task with one task fewer), but the service has no "
                "StepScaling policy that removes tasks: after a load drop the service keeps "
                "its tasks for target tracking's 15 low minutes. " + _REDEPLOY_FAST_SCALE_IN,
                title="The fast scale-in's StepScaling policy is missing",
            )
        ]
    bad: list[Finding] = []
    for p in removers:
        pname = p.get("PolicyName", "?")
        _, alarms = policy_alarms(s, p)
        if not alarms:
            bad.append(
                c.finding(
                    [Evidence("scaling_policies", pname, "Alarms", p.get("Alarms", []))],
                    f"No collected alarm invokes the step policy {pname}, so the fast "
                    "scale-in never runs. " + _REDEPLOY_FAST_SCALE_IN,
                    title="No alarm invokes the fast scale-in's step policy",
                )
            )
            continue
        for a in alarms:
            diffs = fast_scale_in.alarm_differences(a, cluster, service, threshold)
            if not diffs:
                return []
            name = a.get("AlarmName", "?")
            bad.append(
                c.finding(
                    [Evidence("alarms", name, field, value) for field, value, _ in diffs],
                    f"The alarm {name} that invokes the step policy {pname} has "
                    f"{'; '.join(d[2] for d in diffs)}. The fast scale-in needs the "
                    "concurrency per task on one task fewer below the target over 10-s "
                    "periods: otherwise it never fires, or removes tasks the load "
                    "needs. " + _REDEPLOY_FAST_SCALE_IN,
                )
            )
    return bad


_REDEPLOY_FAST_SCALE_IN: Final = (
    "Redeploy with `ecs-gpu deploy`, which writes the step policy and its alarm from the spec."
)


@check(
    "SCL008",
    link="scaling",
    severity="error",
    title="Nothing wakes the service at zero tasks",
    requires=("scalable_targets",),
    doc="The service's MinCapacity is 0 and it has a load balancer, but no wake alarm (the "
    "load balancer's requests while no task runs) invokes a step policy, or the wake alarm "
    "differs from ecs_gpu.wake's.",
)
def _wake_path(s: Snapshot, c: Check) -> list[Finding]:
    zero = [t for t in s["scalable_targets"] if t.get("MinCapacity") == 0]
    if not zero:
        return []  # at least one task is kept: target tracking always has a datapoint
    target = zero[0]
    # The rest is read only at MinCapacity 0: a denied DescribeAlarms leaves a kept
    # service's check ok, not unknown.
    lacking = tuple(k for k in ("scaling_policies", "alarms", "services") if k not in s)
    if lacking:
        raise Unknown(f"{', '.join(lacking)} missing: {why_missing(s, lacking)}")
    cluster, service = demand_names(s)
    evidence = Evidence("scalable_targets", target.get("ResourceId", "?"), "MinCapacity", 0)
    wakers = [p for p in s["scaling_policies"] if wake.is_wake_policy(p)]
    alarms = [a for p in wakers for a in policy_alarms(s, p)[1]]
    if not alarms:
        if not any(svc.get("loadBalancers") for svc in s["services"]):
            raise Unknown(
                "MinCapacity is 0 and the service has no load balancer, so only a scheduled "
                "action can start a task again, and doctor does not collect scheduled actions: "
                "aws application-autoscaling describe-scheduled-actions --service-namespace ecs "
                f"--resource-id {target.get('ResourceId', '?')}"
            )
        return [
            c.finding(
                [evidence, policy_names_evidence(s)],
                "The service may scale to zero tasks (MinCapacity 0), and no wake alarm invokes "
                "a step policy: with no task no policy has a datapoint, so target tracking does "
                "nothing (aws-semantics.md §10), the service stays at zero and the load balancer "
                "answers every request 503. Fix: redeploy with `ecs-gpu deploy` (a spec with "
                "min_tasks = 0 and a [load_balancer] deploys the wake alarm), or keep a task: "
                "min_tasks = 1.",
            )
        ]
    diffs = [(a, wake.alarm_differences(a, cluster, service)) for a in alarms]
    if any(not d for _, d in diffs):
        return []
    return [
        c.finding(
            [evidence]
            + [
                Evidence("alarms", a.get("AlarmName", "?"), field, value)
                for a, d in diffs
                for field, value, _ in d
            ],
            "The wake alarm differs from the one ecs-gpu deploys ("
            + "; ".join(p for _, d in diffs for _, _, p in d)
            + "): it may never fire at zero tasks, or fire while tasks run. Fix: redeploy "
            "with `ecs-gpu deploy`.",
            title="The wake alarm differs from ecs-gpu's",
        )
    ]
