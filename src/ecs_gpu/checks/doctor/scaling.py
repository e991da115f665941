"""Link 8, scaling: the service's and the ASG's scaling policies.

"Does a policy track it" is one check per watched series (SCL001 the GPU
series, SCL004 the concurrency series), its id, its judgement of a policy's
metric and its missing-policy finding from the signal's row
(``signal_words.CHECKED[s]``), so a new signal adds no code here. The
fast path's and fast scale-in's step policies (SCL005, SCL007) are theirs;
what wakes a service at zero tasks is SCL008's, the spec's scheduled actions
SCL009's, what puts it to sleep SCL010's. Every check of the link registers
here (registry: a link's checks live in its module); the step paths' judgement
is :mod:`ecs_gpu.checks.doctor.scaling_steps` (SCL005, SCL007), a service at
zero's :mod:`ecs_gpu.checks.doctor.scaling_zero` (SCL008 to SCL010).
"""

from __future__ import annotations

from ecs_gpu.checks.doctor import scaling_steps, scaling_zero
from ecs_gpu.checks.doctor.common import (
    NEVER,
    collection_target,
    demand_names,
    parse_time,
    plan_tracks,
    policies_track,
    policy_metric_stats,
    policy_names_evidence,
    register_per_series,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.doctor.signal_words import CHECKED, Deployed
from ecs_gpu.checks.model import Check, CheckFn, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts.signals import DEFAULT_GPU_SIGNAL, SERIES, Signal


def _deployed(s: Snapshot) -> Deployed:
    """The snapshot's ASGs and clusters (the target's when none was collected) and series names."""
    target = collection_target(s)
    asg, cluster = target.get("asg"), target.get("cluster")
    asgs = tuple(
        g["AutoScalingGroupName"]
        for g in s.get("auto_scaling_groups", [])
        if g.get("AutoScalingGroupName")
    ) or ((asg,) if asg else ())
    clusters = tuple(
        cl["clusterName"] for cl in s.get("clusters", []) if cl.get("clusterName")
    ) or ((cluster,) if cluster else ())
    series_cluster, service = demand_names(s)
    return Deployed(asgs=asgs, clusters=clusters, cluster=series_cluster, service=service)


def _expects(s: Snapshot, signals: tuple[Signal, ...]) -> tuple[bool, bool]:
    """(a policy must track the series of ``signals``, as the GPU guard beside another signal).

    The spec's plan decides (an older snapshot without gpu_guard expects no
    guard); without a spec, the policies: the default signal's series when
    no policy is meant as another signal's.
    """
    signal = collection_target(s).get("signal")
    if signal is not None:
        by_plan = plan_tracks(s, signals)
        return bool(by_plan), bool(by_plan) and signal not in signals
    others = tuple(x for x in SERIES if x not in signals)
    default = DEFAULT_GPU_SIGNAL in signals and not policies_track(s, others)
    return bool(policies_track(s, signals)) or default, False


def _tracked(signals: tuple[Signal, ...]) -> CheckFn:
    """The "does a policy track it" check of the series ``signals`` share.

    Every target-tracking policy's metric meant as the series must read it
    exactly (the row's ``judge``); where the spec
    (or, without one, the policies) expects a policy and none reads it, the
    row's missing-policy finding.
    """
    checked = CHECKED[signals[0]]

    def tracked(s: Snapshot, c: Check) -> list[Finding]:
        at = _deployed(s)
        out: list[Finding] = []
        reads = False
        for p in s["scaling_policies"]:
            if p.get("PolicyType", "TargetTrackingScaling") != "TargetTrackingScaling":
                continue
            for path, m, stat in policy_metric_stats(p):
                problems = checked.judge(m, stat, at)
                if problems is None:
                    continue
                reads = reads or not problems
                evidence = [Evidence("scaling_policies", p.get("PolicyName", "?"), path, m)]
                out += [c.finding(evidence, fix) for fix in problems]
        if reads or out:
            return out
        expected, guard = _expects(s, signals)
        if not expected:
            return []
        target = collection_target(s)
        title, severity, fix = checked.missing_policy(at, guard)
        evidence = [
            policy_names_evidence(s),
            Evidence("_collection", "target", "signal", target.get("signal")),
        ]
        if guard:
            evidence.append(Evidence("_collection", "target", "gpu_guard", True))
        return [c.finding(evidence, fix, title=title, severity=severity)]

    return tracked


register_per_series("scaling", lambda c: c.tracked, _tracked)


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
    return scaling_steps.judge_fast_path(s, c)


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
    return scaling_steps.judge_fast_scale_in(s, c)


@check(
    "SCL008",
    link="scaling",
    severity="error",
    title="Nothing wakes the service at zero tasks",
    requires=("scalable_targets",),
    doc="The service may run no task (MinCapacity 0, or, whatever MinCapacity is now, the "
    "spec's sleep path: sleep.sleep_path, recorded in the snapshot, which a service has "
    "exactly where it has the wake path; without a spec a scheduled action to 0) and it has "
    "a load balancer, but no wake alarm (the load balancer's requests while no task runs) "
    "invokes a step policy, the wake alarm or the wake policy's step differs from "
    "ecs_gpu.design.paths.wake's, or the alarm's actions are disabled (ActionsEnabled false).",
)
def _wake_path(s: Snapshot, c: Check) -> list[Finding]:
    return scaling_zero.judge_wake_path(s, c)


@check(
    "SCL009",
    link="scaling",
    severity="error",
    title="The spec's schedule is not deployed",
    requires=("scheduled_actions",),
    doc="A [[scaling.schedule]] entry of the spec has no scheduled action on the service's "
    "scalable target with the same cron, or one whose MinCapacity, MaxCapacity or time zone "
    "differ; or the target's scheduled scaling is suspended.",
)
def _schedule_deployed(s: Snapshot, c: Check) -> list[Finding]:
    return scaling_zero.judge_schedule(s, c)


@check(
    "SCL010",
    link="scaling",
    severity="warning",
    title="The service at zero holds its last task 15 minutes",
    requires=("scalable_targets",),
    doc="The spec deploys the sleep path (sleep.sleep_path: it scales to zero behind a load "
    "balancer; without a spec, MinCapacity 0 or a scheduled action to 0, and a wake alarm), "
    "whatever MinCapacity is now, but no sleep alarm (sleep.quiet_minutes without a request "
    "at the load balancer: at least ten, longer than the model's load) invokes an "
    "ExactCapacity 0 step policy, or it differs from sleep.alarm_differences (a query's "
    "metric or load balancer included; without a spec, any window of at least ten).",
)
def _sleep_path(s: Snapshot, c: Check) -> list[Finding]:
    return scaling_zero.judge_sleep_path(s, c)
