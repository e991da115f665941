"""Link 8, scaling: the service's and the ASG's scaling policies.

"Does a policy track it" is one check per watched series (SCL001 the GPU
series, SCL004 the concurrency series), its id, its judgement of a policy's
metric and its missing-policy finding from the signal's row
(``signals.SERIES[s].checked``), so a new signal adds no code here. The
fast path's and fast scale-in's step policies (SCL005, SCL007) are theirs;
what wakes a service at zero tasks is SCL008's, the spec's scheduled actions
SCL009's, what puts it to sleep SCL010's.
"""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu import demand_metric, fast_path, fast_scale_in, schedule, sleep, wake
from ecs_gpu.doctor.checks.common import (
    NEVER,
    alarm_differs,
    collection_target,
    demand_names,
    difference_evidence,
    difference_phrases,
    parse_time,
    plan_tracks,
    policies_track,
    policy_alarms,
    policy_metric_stats,
    policy_names_evidence,
    policy_types_evidence,
    register_per_series,
    scales_on_concurrency,
    step_path_alarms,
    step_path_policies,
)
from ecs_gpu.doctor.checks.model import Check, CheckFn, Evidence, Finding, Unknown
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.checks.runner import why_missing
from ecs_gpu.doctor.snapshot import COLLECTION_KEY, Snapshot
from ecs_gpu.naming import scalable_target_id
from ecs_gpu.signals import DEFAULT_GPU_SIGNAL, SERIES, Deployed, Signal


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
    exactly (the row's ``judge``, from its contract module); where the spec
    (or, without one, the policies) expects a policy and none reads it, the
    row's missing-policy finding.
    """
    checked = SERIES[signals[0]].checked

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
    # The fast scale-in's step policy (SCL007), the wake's (SCL008) and the sleep's
    # (SCL010) are theirs.
    steps = step_path_policies(s, "fast_path")
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


# The fast path's and the fast scale-in's fix (SCL005, SCL007).
_REDEPLOY_STEP_PATH: Final = (
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
            policy_types_evidence(s),
            Evidence("_collection", "target", "fast_path_threshold", threshold),
        ],
        "The spec deploys the fast path (a StepScaling policy invoked by an alarm on "
        f"{want}), but the service has no StepScaling policy: a load step waits for "
        "target tracking's one-minute datapoints, minutes, before a task is added. "
        + _REDEPLOY_STEP_PATH,
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
                f"It needs an alarm on {want}. " + _REDEPLOY_STEP_PATH,
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
                    + _REDEPLOY_STEP_PATH,
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
                "load or pace the spec did not ask for. " + _REDEPLOY_STEP_PATH,
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
    removers = step_path_policies(s, "fast_scale_in")
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
                    policy_types_evidence(s),
                    Evidence("_collection", "target", "fast_scale_in_threshold", threshold),
                ],
                "The spec deploys the fast scale-in (a StepScaling policy that removes at most "
                f"{fast_scale_in.MAX_STEP_PERCENT} % of the tasks, invoked by a 10-second alarm "
                "on the concurrency per task with one task fewer), but the service has no "
                "StepScaling policy that removes tasks: after a load drop the service keeps "
                "its tasks for target tracking's 15 low minutes. " + _REDEPLOY_STEP_PATH,
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
                    "scale-in never runs. " + _REDEPLOY_STEP_PATH,
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
                    "needs. " + _REDEPLOY_STEP_PATH,
                )
            )
    return bad


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
    "ecs_gpu.wake's, or the alarm's actions are disabled (ActionsEnabled false).",
)
def _wake_path(s: Snapshot, c: Check) -> list[Finding]:
    zero = [t for t in s["scalable_targets"] if t.get("MinCapacity") == 0]
    # By day a scheduled fleet is at MinCapacity 1: its wake alarm acts tonight.
    if not (zero or (s["scalable_targets"] and _has_sleep_path(s))):
        return []  # at least one task is kept: target tracking always has a datapoint
    target = (zero or s["scalable_targets"])[0]
    # The rest is read only where the service may be at zero: a denied DescribeAlarms
    # leaves a kept service's check ok, not unknown.
    lacking = tuple(k for k in ("scaling_policies", "alarms", "services") if k not in s)
    if lacking:
        raise Unknown(f"{', '.join(lacking)} missing: {why_missing(s, lacking)}")
    cluster, service = demand_names(s)
    mins = target.get("MinCapacity")
    evidence = Evidence("scalable_targets", target.get("ResourceId", "?"), "MinCapacity", mins)
    later = "" if zero else f" (MinCapacity is {mins} now; the wake alarm acts once it is 0)"
    alarms = step_path_alarms(s, "wake")
    if not alarms:
        if not any(svc.get("loadBalancers") for svc in s["services"]):
            return _woken_by_schedule(s, c, target, evidence)
        return [
            c.finding(
                [evidence, policy_names_evidence(s)],
                "The service may scale to zero tasks (MinCapacity 0"
                + ("" if zero else f" by its spec or schedule, {mins} now")
                + "), and no wake alarm invokes "
                "a step policy: with no task no policy has a datapoint, so target tracking does "
                "nothing (aws-semantics.md §10), the service stays at zero and the load balancer "
                "answers every request 503. Fix: redeploy with `ecs-gpu deploy` (a spec with "
                "min_tasks = 0 and a [load_balancer] deploys the wake alarm), or keep a task: "
                "min_tasks = 1.",
            )
        ]
    return _wake_policy_differs(s, c, later) + alarm_differs(
        c,
        "wake",
        alarms,
        lambda a: wake.alarm_differences(a, cluster, service),
        f"it may never fire at zero tasks, or fire while tasks run{later}.",
        evidence,
        disabled="at zero tasks nothing starts one: the service stays at zero and the load "
        f"balancer answers every request 503{later}.",
    )


def _wake_policy_differs(s: Snapshot, c: Check, later: str) -> list[Finding]:
    """One finding when every wake policy's step differs from the template's
    (wake.policy_differences): one task, from 0 over the threshold."""
    diffs = [(p, wake.policy_differences(p)) for p in step_path_policies(s, "wake")]
    if not diffs or any(not d for _, d in diffs):
        return []
    return [
        c.finding(
            [
                Evidence("scaling_policies", p.get("PolicyName", "?"), f, v)
                for p, d in diffs
                for f, v, _ in d
            ],
            "The wake policy differs from the one ecs-gpu deploys ("
            + "; ".join(x for _, d in diffs for _, _, x in d)
            + f"): a request at zero tasks starts more tasks than it needs, or none{later}. "
            "Fix: redeploy with `ecs-gpu deploy`.",
            title="The wake policy differs from ecs-gpu's",
        )
    ]


def _schedule_runs(s: Snapshot) -> bool:
    """Whether the scalable target runs its scheduled actions (ScheduledScalingSuspended)."""
    return not any(
        (t.get("SuspendedState") or {}).get("ScheduledScalingSuspended")
        for t in s.get("scalable_targets", [])
    )


def _still_runs(s: Snapshot, action: dict[str, Any]) -> bool:
    """Whether a scheduled action can still run: no EndTime before the collection, and
    not a one-time ``at(...)`` in the past."""
    now = parse_time(s.get(COLLECTION_KEY, {}).get("collected_at"))
    if now is None:
        return True
    end = parse_time(action.get("EndTime"))
    if end is not None and end <= now:
        return False
    when = str(action.get("Schedule") or "").strip()
    if when.startswith("at(") and when.endswith(")"):
        at = parse_time(when[3:-1])  # naive: UTC, ecs-gpu's
        return at is None or at > now
    return True


def _woken_by_schedule(
    s: Snapshot, c: Check, target: dict[str, Any], evidence: Evidence
) -> list[Finding]:
    """At MinCapacity 0 without a load balancer only a scheduled action that raises
    MinCapacity above 0 starts a task again."""
    if "scheduled_actions" not in s:
        raise Unknown(
            "MinCapacity is 0 and the service has no load balancer, so only a scheduled "
            "action can start a task again, and scheduled_actions is missing: "
            + why_missing(s, ("scheduled_actions",))
        )
    raises = [
        a
        for a in s["scheduled_actions"]
        if ((a.get("ScalableTargetAction") or {}).get("MinCapacity") or 0) > 0 and _still_runs(s, a)
    ]
    if raises and _schedule_runs(s):
        return []
    rid = target.get("ResourceId", "?")
    why = (
        "its scheduled scaling is suspended (ScheduledScalingSuspended), so none of its "
        "scheduled actions runs"
        if raises
        else "no scheduled action that can still run raises MinCapacity above 0"
    )
    return [
        c.finding(
            [
                evidence,
                Evidence(
                    "scheduled_actions",
                    rid,
                    "ScalableTargetAction.MinCapacity",
                    {
                        a.get("ScheduledActionName", "?"): (
                            a.get("ScalableTargetAction") or {}
                        ).get("MinCapacity")
                        for a in s["scheduled_actions"]
                    },
                ),
            ],
            "The service may scale to zero tasks (MinCapacity 0), has no load balancer (so no "
            f"wake alarm), and {why}: once it is at zero nothing ever starts a task again. "
            "Fix: add a [[scaling.schedule]] entry with min_tasks >= 1 at the hour the service "
            f"is needed (e.g. cron = {schedule.EXAMPLE!r}, min_tasks = 1) and deploy with "
            "`ecs-gpu deploy`, or keep a task: min_tasks = 1"
            + (f"; resume scheduled scaling: {_resume_schedule(rid)}" if raises else "")
            + ".",
            title="Nothing wakes the service at zero tasks: no scheduled action raises it",
        )
    ]


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
    wanted = collection_target(s).get("schedule")
    if not wanted:
        return []  # no spec (nothing to compare with), or a spec without a schedule
    actions = s["scheduled_actions"]
    rid = scalable_target_id_of(s)
    out: list[Finding] = []
    for i, entry in enumerate(wanted):
        expr, lo, hi = entry["schedule"], entry["min_tasks"], entry["max_tasks"]
        words = f"[[scaling.schedule]] entry {i + 1} ({expr}, min_tasks {lo}, max_tasks {hi})"
        same = [a for a in actions if schedule.same_schedule(a.get("Schedule"), expr)]
        if not same:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "scheduled_actions",
                            rid,
                            "Schedule",
                            {a.get("ScheduledActionName", "?"): a.get("Schedule") for a in actions},
                        ),
                        Evidence("_collection", "target", f"schedule[{i}]", entry),
                    ],
                    f"The spec's {words} has no scheduled action with that Schedule on {rid}: "
                    "at that minute nothing changes the task bounds the spec asks for. "
                    + _REDEPLOY_SCHEDULE,
                    title="A schedule entry is not deployed",
                )
            )
            continue
        diffs = [(a, schedule.action_differences(a, expr, lo, hi)) for a in same]
        if any(not d for _, d in diffs):
            continue
        out.append(
            c.finding(
                difference_evidence("scheduled_actions", "ScheduledActionName", diffs),
                f"The scheduled action for the spec's {words} has "
                + difference_phrases(diffs)
                + ": at that minute the task bounds are not what the spec asks for. "
                + _REDEPLOY_SCHEDULE,
            )
        )
    if not _schedule_runs(s):
        out.append(
            c.finding(
                [
                    Evidence(
                        "scalable_targets", rid, "SuspendedState.ScheduledScalingSuspended", True
                    )
                ],
                "The scalable target's scheduled scaling is suspended, so none of the spec's "
                f"schedule runs. Resume it: {_resume_schedule(rid)}",
                title="Scheduled scaling is suspended",
            )
        )
    return out


_REDEPLOY_SCHEDULE: Final = (
    "Redeploy with `ecs-gpu deploy`, which writes one scheduled action per entry (cron in "
    "UTC, MinCapacity and MaxCapacity from the entry)."
)


def _resume_schedule(rid: str) -> str:
    return (
        "aws application-autoscaling register-scalable-target --service-namespace ecs "
        f"--scalable-dimension ecs:service:DesiredCount --resource-id {rid} "
        "--suspended-state ScheduledScalingSuspended=false"
    )


def scalable_target_id_of(s: Snapshot) -> str:
    """The service's scalable target ResourceId: the collected target's, else its names."""
    for t in s.get("scalable_targets", []):
        if t.get("ResourceId"):
            return str(t["ResourceId"])
    target = collection_target(s)
    return scalable_target_id(target.get("cluster") or "?", target.get("service") or "?")


def _has_sleep_path(s: Snapshot) -> bool:
    """Whether the service has the sleep path: the spec's rule (sleep.sleep_path, recorded
    in the snapshot) whatever MinCapacity is now; without a spec, MinCapacity 0 now or a
    scheduled action that sets it (wake.scales_to_zero's two ways)."""
    from_spec = collection_target(s).get("sleep_path")
    if from_spec is not None:
        return bool(from_spec)
    return any(t.get("MinCapacity") == 0 for t in s["scalable_targets"]) or any(
        (a.get("ScalableTargetAction") or {}).get("MinCapacity") == 0 and _still_runs(s, a)
        for a in s.get("scheduled_actions", [])
    )


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
    if not _has_sleep_path(s):
        return []
    from_spec = collection_target(s).get("sleep_path") is not None
    lacking = tuple(k for k in ("scaling_policies", "alarms") if k not in s)
    if lacking and from_spec:
        raise Unknown(f"{', '.join(lacking)} missing: {why_missing(s, lacking)}")
    if lacking or not (from_spec or step_path_alarms(s, "wake")):
        return []  # no wake path (SCL008's finding): a sleep would never end
    cluster, service = demand_names(s)
    # The load balancer the sleep alarm must read: the one a matching wake alarm reads.
    lbs = [
        wake.load_balancer_of(a)
        for a in step_path_alarms(s, "wake")
        if not wake.alarm_differences(a, cluster, service)
    ]
    lb = lbs[0] if lbs and all(x == lbs[0] for x in lbs) else None
    mins = [t.get("MinCapacity") for t in s["scalable_targets"]]
    later = (
        ""
        if not mins or 0 in mins
        else f" (MinCapacity is {mins[0]} now; the sleep alarm acts once it is 0)"
    )
    alarms = step_path_alarms(s, "sleep")
    # The spec's window where recorded; without, any of at least the longest request's.
    minutes = collection_target(s).get("sleep_minutes")
    if not alarms:
        return [
            c.finding(
                [policy_names_evidence(s)],
                "The service may scale to zero behind a load balancer, but no sleep alarm "
                f"invokes an ExactCapacity 0 step policy{later}: at no load its last task "
                "stays for target tracking's 15 low minutes (aws-semantics.md §9) instead of "
                f"{minutes or sleep.MIN_QUIET_MINUTES}, before the instance's 15 (§2). Fix: "
                "redeploy with `ecs-gpu deploy`.",
            )
        ]
    return alarm_differs(
        c,
        "sleep",
        alarms,
        lambda a: sleep.alarm_differences(a, cluster, service, lb, minutes),
        f"it may never fire, or cut a request still running{later}.",
        disabled="at no load the last task stays for target tracking's 15 low minutes "
        f"(aws-semantics.md §9) instead of {minutes or sleep.MIN_QUIET_MINUTES}{later}.",
    )
