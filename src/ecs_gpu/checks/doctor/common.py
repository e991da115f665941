"""Helpers the checks share: reading raw AWS API shapes out of a snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.doctor.signal_words import CHECKED, Checked, CheckText
from ecs_gpu.checks.model import Check, CheckFn, Evidence, Finding, Unknown
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot
from ecs_gpu.contracts import ami, demand_metric
from ecs_gpu.contracts.signals import SeriesAt, Signal, SignalPlan
from ecs_gpu.design.paths.step_shape import StepShape, shape_of
from ecs_gpu.host import probe


def collection_target(s: Snapshot) -> dict[str, Any]:
    meta = s.get(COLLECTION_KEY) or {}
    target: dict[str, Any] = meta.get("target") or {}
    return target


def short_name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1] if arn else arn


def parse_time(value: Any) -> datetime | None:
    """An API timestamp as an aware datetime (naive ones are UTC), or None.

    Epoch seconds too: AWS CLI v1 prints timestamps as the API sends them.
    """
    when = value if isinstance(value, datetime) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when


# Sorts an object without a timestamp last; aware, so it compares with parsed ones.
NEVER: Final = datetime.min.replace(tzinfo=UTC)


def resource_gpus(resources: list[dict[str, Any]]) -> int:
    """GPUs in ECS registered/remainingResources: a STRINGSET of GPU UUIDs."""
    n = 0
    for r in resources:
        if r.get("name") == "GPU":
            if r.get("type") == "STRINGSET":
                n += len(r.get("stringSetValue") or [])
            else:
                n += int(r.get("integerValue") or 0)
    return n


def attribute(ci: dict[str, Any], name: str) -> str | None:
    for a in ci.get("attributes", []):
        if a.get("name") == name:
            value: str | None = a.get("value")
            return value
    return None


def active_instances(s: Snapshot) -> list[dict[str, Any]]:
    return [ci for ci in s["container_instances"] if ci.get("status") == "ACTIVE"]


def service_items(s: Snapshot) -> list[dict[str, Any]]:
    """The service's items; Unknown when there is none (SVC000 reports that).

    A check over no service has nothing to decide: "ok" would say a service
    that does not exist is healthy.
    """
    services: list[dict[str, Any]] = s["services"]
    if not services:
        raise Unknown("services holds no service (SVC000: the service does not exist)")
    return services


def task_definition(s: Snapshot, arn: str | None) -> dict[str, Any] | None:
    for td in s.get("task_definitions", []):
        if td.get("taskDefinitionArn") == arn:
            found: dict[str, Any] = td
            return found
    return None


def gpus_per_task(td: dict[str, Any]) -> int:
    total = 0
    for c in td.get("containerDefinitions", []):
        for rr in c.get("resourceRequirements", []):
            if rr.get("type") == "GPU":
                try:
                    total += int(rr.get("value", "0"))
                except ValueError:
                    total += 1  # "ALL" or a fraction: at least one
    return total


def service_short(s: Snapshot) -> bool:
    """True when some service wants more tasks than run."""
    return any(
        svc.get("pendingCount", 0) > 0 or svc.get("runningCount", 0) < svc.get("desiredCount", 0)
        for svc in service_items(s)
    )


def probes(s: Snapshot) -> dict[str, probe.ProbeReport]:
    """Parsed probe output of every instance whose probe ran."""
    out = {}
    for iid, inv in sorted(s["host_probes"].items()):
        if isinstance(inv, dict) and inv.get("Status") == "Success":
            out[iid] = probe.parse_probe(inv.get("StandardOutputContent", ""))
    if not out:
        raise Unknown("no host probe succeeded (see HOST000)")
    return out


def probe_sections(s: Snapshot, name: str) -> dict[str, probe.Section]:
    out = {}
    for iid, rep in probes(s).items():
        sec = rep.section(name)
        if sec is not None and sec.rc is not None:
            out[iid] = sec
    if not out:
        raise Unknown(f"no probe output has the {name!r} section")
    return out


def metric_series(s: Snapshot) -> dict[str, dict[str, Any]]:
    return {r.get("Label", r.get("Id")): r for r in s["metric_data"]}


def policy_metrics(p: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(field path, metric) for every metric a target-tracking policy reads.

    Both forms of CustomizedMetricSpecification: the plain one (MetricName,
    Namespace, Dimensions) and metric math (Metrics[].MetricStat.Metric), the
    form ``gpu_metric = "task-gpus"`` deploys.
    """
    return [(path, m) for path, m, _ in policy_metric_stats(p)]


def policy_metric_stats(p: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """:func:`policy_metrics` with each metric's statistic (Statistic, or MetricStat.Stat)."""
    cfg = p.get("TargetTrackingScalingPolicyConfiguration", {})
    cms = cfg.get("CustomizedMetricSpecification")
    base = "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
    if not cms:
        return []
    if "MetricName" in cms:
        return [(base, cms, cms.get("Statistic"))]
    return [
        (
            f"{base}.Metrics[{i}].MetricStat.Metric",
            q["MetricStat"].get("Metric", {}),
            q["MetricStat"].get("Stat"),
        )
        for i, q in enumerate(cms.get("Metrics", []))
        if isinstance(q.get("MetricStat"), dict)
    ]


# The group preference that fills a reservation, then overflows to On-Demand.
ODCR_FIRST = "capacity-reservations-first"


def is_demand_series(m: dict[str, Any]) -> bool:
    """Is this metric (a policy's or an alarm's) the sidecars' concurrency series by name?"""
    return (m.get("Namespace"), m.get("MetricName")) == (
        demand_metric.NAMESPACE,
        demand_metric.METRIC_NAME,
    )


def policy_names_evidence(s: Snapshot) -> Evidence:
    """The service's scaling policies by name: the evidence of a missing policy."""
    return Evidence(
        "scaling_policies",
        collection_target(s).get("service") or "?",
        "PolicyName",
        [p.get("PolicyName") for p in s["scaling_policies"]],
    )


def reads_demand_metric(p: dict[str, Any]) -> bool:
    """Does this target-tracking policy track the sidecars' concurrency series?"""
    return any(is_demand_series(m) for _, m in policy_metrics(p))


def policy_alarms(s: Snapshot, p: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """(names, collected alarms) of the alarms that invoke policy ``p``.

    Application Auto Scaling lists them in the policy's ``Alarms``; an alarm
    collected with the policy's ARN among its actions counts too.
    """
    arn = p.get("PolicyARN")
    names = [a["AlarmName"] for a in p.get("Alarms", []) if a.get("AlarmName")]
    names += [
        a["AlarmName"]
        for a in s.get("alarms", [])
        if arn
        and arn in a.get("AlarmActions", [])
        and a.get("AlarmName")
        and a["AlarmName"] not in names
    ]
    found = [a for a in s.get("alarms", []) if a.get("AlarmName") in names]
    return names, found


def step_path_policies(s: Snapshot, shape: StepShape) -> list[dict[str, Any]]:
    """The service's StepScaling policies of one step path's shape (step_shape.shape_of):
    each check judges only its own path's policies and alarms."""
    return [
        p
        for p in s["scaling_policies"]
        if p.get("PolicyType") == "StepScaling" and shape_of(p) == shape
    ]


def step_path_alarms(s: Snapshot, shape: StepShape) -> list[dict[str, Any]]:
    """The collected alarms that invoke the service's step policies of ``shape``."""
    return [a for p in step_path_policies(s, shape) for a in policy_alarms(s, p)[1]]


def policy_types_evidence(s: Snapshot) -> Evidence:
    """Each of the service's scaling policies and its PolicyType: a missing step policy's."""
    return Evidence(
        "scaling_policies",
        collection_target(s).get("service") or "?",
        "PolicyType",
        {p.get("PolicyName", "?"): p.get("PolicyType") for p in s["scaling_policies"]},
    )


def spec_plan(s: Snapshot) -> SignalPlan | None:
    """The signal plan of the spec the snapshot was collected with; None without a spec.

    A snapshot without ``gpu_guard`` (an older one) reads as no guard.
    """
    target = collection_target(s)
    signal = target.get("signal")
    if signal is None:
        return None
    return SignalPlan.from_parts(signal, bool(target.get("gpu_guard")))


def scales_on_concurrency(s: Snapshot) -> bool:
    """Whether the service scales on concurrency: the spec's signal, else its policies.

    Off the policies: a target-tracking policy on the sidecars' series, or a
    step policy (the fast path) whose alarm watches it.
    """
    plan = spec_plan(s)
    if plan is not None:
        return plan.tracks_concurrency
    if "scaling_policies" not in s:
        raise Unknown(
            "cannot tell whether the service scales on concurrency: the snapshot names no "
            "[scaling] signal (run doctor with the spec) and scaling_policies was not collected"
        )
    return any(
        reads_demand_metric(p)
        or (
            p.get("PolicyType") == "StepScaling"
            and any(is_demand_series(a) for a in policy_alarms(s, p)[1])
        )
        for p in s["scaling_policies"]
    )


def demand_names(s: Snapshot) -> tuple[str, str]:
    """(cluster, service) the concurrency series of this service is written under."""
    target = collection_target(s)
    clusters = [c.get("clusterName") for c in s.get("clusters", []) if c.get("clusterName")]
    cluster = target.get("cluster") or (clusters[0] if clusters else "?")
    return str(cluster), str(target.get("service") or "?")


def series_at(s: Snapshot) -> SeriesAt:
    """The names this service's series are written under ("?" where nothing says)."""
    cluster, service = demand_names(s)
    return SeriesAt(
        asg=str(collection_target(s).get("asg") or "?"), cluster=cluster, service=service
    )


def plan_tracks(s: Snapshot, signals: tuple[Signal, ...]) -> bool | None:
    """Whether the spec's plan tracks the series of one of ``signals``; None when it cannot say.

    None without a signal in the snapshot, or when only ``gpu_guard``, which
    an older snapshot lacks, would tell (whether the guard tracks a GPU series).
    """
    target = collection_target(s)
    signal = target.get("signal")
    if signal is None:
        return None
    guard = target.get("gpu_guard")
    by_guard = [
        any(x in SignalPlan.from_parts(signal, g).tracked for x in signals) for g in (False, True)
    ]
    if by_guard[0] != by_guard[1] and guard is None:
        return None
    return by_guard[bool(guard)]


def policies_track(s: Snapshot, signals: tuple[Signal, ...]) -> bool | None:
    """Whether a policy is meant as the series of one of ``signals``; None without the policies.

    A target-tracking policy's metric, or a step policy's alarm's, meant as
    the series (``signal_words.Checked.meant_as``).
    """
    if "scaling_policies" not in s:
        return None
    meant = [CHECKED[x].meant_as for x in signals]
    return any(
        any(f(m) for f in meant for _, m in policy_metrics(p))
        or (
            p.get("PolicyType") == "StepScaling"
            and any(f(a) for f in meant for a in policy_alarms(s, p)[1])
        )
        for p in s["scaling_policies"]
    )


def tracks(s: Snapshot, signals: tuple[Signal, ...]) -> bool | None:
    """Whether a scaling policy tracks the series of one of ``signals``; None when nothing says.

    The spec's plan decides when the snapshot records what it turns on; else the policies.
    """
    by_plan = plan_tracks(s, signals)
    return policies_track(s, signals) if by_plan is None else by_plan


def in_service(groups: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """The InService instance ids of each DescribeAutoScalingGroups group, by group name.

    ``LifecycleState`` InService only: Pending, Terminating, Standby and warm-pool
    states run no task. ``verify metrics`` counts the same items live.
    """
    return {
        g["AutoScalingGroupName"]: [
            i.get("InstanceId", "?")
            for i in g.get("Instances") or []
            if i.get("LifecycleState") == "InService"
        ]
        for g in groups
        if "AutoScalingGroupName" in g
    }


def asleep(s: Snapshot) -> bool:
    """At zero tasks by design: MinCapacity 0 and no task desired. Every target-tracking
    alarm then reads no data, since no task publishes (aws-semantics.md §10), and once
    managed scaling has emptied the group no host publishes the agent's series either;
    SCL008 checks what wakes the service."""
    desired = [svc.get("desiredCount") for svc in service_items(s)]
    zero = [t for t in s.get("scalable_targets") or [] if t.get("MinCapacity") == 0]
    return bool(zero) and desired == [0]


def in_service_counts(groups: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many InService instances each group has (:func:`in_service`), by group name."""
    return {name: len(ids) for name, ids in in_service(groups).items()}


def spot_groups(s: Snapshot) -> list[dict[str, Any]]:
    """The collected groups that launch Spot: a mixed instances policy whose share of
    On-Demand above its base is under 100 % (InstancesDistribution's default is 100)."""
    out = []
    for g in s.get("auto_scaling_groups", []):
        dist = (g.get("MixedInstancesPolicy") or {}).get("InstancesDistribution")
        if dist is not None and dist.get("OnDemandPercentageAboveBaseCapacity", 100) < 100:
            out.append(g)
    return out


def register_per_series(
    link: str,
    text_of: Callable[[Checked], CheckText],
    make: Callable[[tuple[Signal, ...]], CheckFn],
) -> None:
    """Register one check per id that ``text_of`` gives the signals' rows
    (``signal_words.CHECKED[s]``): signals sharing a watched series share the check,
    which ``make`` builds over them. "Does it arrive" (metric.py) and "does a policy
    track it" (scaling.py) are both registered this way, so a new signal adds none."""
    shared: dict[str, list[Signal]] = {}
    for signal, checked in CHECKED.items():
        shared.setdefault(text_of(checked).id, []).append(signal)
    for signals in shared.values():
        t = text_of(CHECKED[signals[0]])
        check(t.id, link=link, severity=t.severity, title=t.title, requires=t.requires, doc=t.doc)(
            make(tuple(signals))
        )


def actions_disabled(
    c: Check, path: str, alarms: list[dict[str, Any]], disabled: str, *evidence: Evidence
) -> Finding:
    """The ``path``'s ``alarms`` (each as the path needs it) all have ``ActionsEnabled``
    false: they change state and invoke nothing (``disabled``: what the path then fails
    to do; aws-semantics.md §10 "Alarm actions disabled")."""
    names = [str(a.get("AlarmName", "?")) for a in alarms]
    return c.finding(
        [*evidence, *(Evidence("alarms", n, "ActionsEnabled", False) for n in names)],
        f"The {path} alarm {', '.join(names)} has its actions disabled "
        "(ActionsEnabled false, as DisableAlarmActions leaves it, "
        f"say after maintenance): it goes to ALARM and invokes no policy, so {disabled} "
        "Fix: aws cloudwatch enable-alarm-actions --alarm-names " + " ".join(names),
        title=f"The {path} alarm's actions are disabled",
    )


def actions_enabled(alarm: Mapping[str, Any]) -> bool:
    """Does the alarm invoke its actions? ``ActionsEnabled`` absent (an older snapshot,
    a hand-made one) is AWS's default, enabled."""
    return alarm.get("ActionsEnabled") is not False


def alarm_differs(
    c: Check,
    path: str,
    alarms: list[dict[str, Any]],
    differences: Callable[[dict[str, Any]], list[tuple[str, Any, str]]],
    effect: str,
    *evidence: Evidence,
    disabled: str,
) -> list[Finding]:
    """Nothing when one of the ``path``'s ``alarms`` has no ``differences`` and its
    actions enabled; else one finding: every difference (``effect``: what a differing
    alarm does), or, where every matching alarm has ``ActionsEnabled`` false, that
    (``disabled``: what the path then fails to do). A disabled alarm still changes
    state but invokes nothing (aws-semantics.md §10 "Alarm actions disabled")."""
    diffs = [(a, differences(a)) for a in alarms]
    matching = [a for a, d in diffs if not d]
    if matching:
        if any(actions_enabled(a) for a in matching):
            return []
        return [actions_disabled(c, path, matching, disabled, *evidence)]
    return [
        c.finding(
            [*evidence, *difference_evidence("alarms", "AlarmName", diffs)],
            f"The {path} alarm differs from the one ecs-gpu deploys ("
            + difference_phrases(diffs)
            + f"): {effect} Fix: redeploy with `ecs-gpu deploy`.",
            title=f"The {path} alarm differs from ecs-gpu's",
        )
    ]


# A deployed item and its (field, value found, phrase) differences from what ecs-gpu
# deploys: an alarm's (wake, sleep), a scheduled action's (schedule).
Differences = list[tuple[dict[str, Any], list[tuple[str, Any, str]]]]


def difference_evidence(kind: str, name_key: str, diffs: Differences) -> list[Evidence]:
    """One Evidence per difference of each ``kind`` item, by its ``name_key``."""
    return [
        Evidence(kind, item.get(name_key, "?"), field, value)
        for item, d in diffs
        for field, value, _ in d
    ]


def difference_phrases(diffs: Differences) -> str:
    """Every difference's phrase, in order, joined for a finding's sentence."""
    return "; ".join(phrase for _, d in diffs for _, _, phrase in d)


def replace_instance(iid: str) -> str:
    """The command that has an Auto Scaling instance replaced: marked Unhealthy, its
    group terminates it and launches another from the group's launch template, scale-in
    protection or not (aws-semantics.md §12 "Replacing an instance")."""
    return (
        f"aws autoscaling set-instance-health --instance-id {iid} --health-status Unhealthy "
        "(its Auto Scaling group terminates it and launches a replacement, even with scale-in "
        "protection on)"
    )


# The change set revert_drift names (one at a time: a second create under the name fails
# until the first is executed or deleted).
REVERT_DRIFT_CHANGE_SET: Final = "ecs-gpu-revert-drift"


def revert_drift(s: Snapshot, what: str, *, newer: bool = False) -> str:
    """How to put back ``what``, a resource of the stack deleted by hand: a redeploy of
    the unchanged stack does not (CloudFormation compares templates), a drift-aware
    change set brings the resources in line with the template (aws-semantics.md §12
    "A stack resource deleted by hand"). ``newer``: ecs-gpu added the resource after
    some stacks were deployed, so a stack that never had it gets it from a redeploy."""
    older = (
        "If the stack was deployed by an ecs-gpu from before it, `ecs-gpu deploy` adds it. "
        if newer
        else ""
    )
    stack = collection_target(s).get("stack")
    if not stack:
        return older + (
            f"A redeploy of the unchanged stack does not recreate {what} deleted by hand; a "
            "drift-aware change set on its stack does (`ecs-gpu doctor SPEC` names the stack "
            "and quotes the commands)."
        )
    cs = f"--stack-name {stack} --change-set-name {REVERT_DRIFT_CHANGE_SET}"
    return older + (
        f"A redeploy of the unchanged stack does not recreate {what} deleted by hand "
        "(CloudFormation compares templates, not what exists); a drift-aware change set "
        f"brings the stack's resources back in line with its template: aws cloudformation "
        f"create-change-set {cs} --change-set-type UPDATE --use-previous-template "
        f"--parameters ParameterKey={ami.PARAMETER},UsePreviousValue=true "
        "--capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM --deployment-mode REVERT_DRIFT; "
        f"read what it will do: aws cloudformation describe-change-set {cs}. "
        + REVERT_DRIFT_REACH
        + f" Then run it: aws cloudformation execute-change-set {cs}."
    )


# What a REVERT_DRIFT change set also does: it brings every drifted resource of the
# stack back to the template ("bring drifted resources in line with their template
# definitions", aws-semantics.md §12), not only the one deleted by hand.
REVERT_DRIFT_REACH: Final = (
    "It reverts every drifted resource of the stack, not only this one: a scalable "
    "target's minimum and maximum that a [[scaling.schedule]] action or a hand edit set go "
    "back to [scaling]'s until the next scheduled action, alarm actions disabled by hand "
    "come back on, suspended scaling resumes; check each Modify it lists (the "
    "ScalableTarget, the Auto Scaling groups, the alarms) before you run it."
)


def deleted_step_alarms(s: Snapshot, shape: StepShape) -> str:
    """ "" when no step policy of ``shape`` names an alarm DescribeAlarms did not return;
    else what is gone and how to put it back (a stack alarm: :func:`revert_drift`)."""
    collected = {a.get("AlarmName") for a in s.get("alarms", [])}
    gone = {
        str(p.get("PolicyName", "?")): names
        for p in step_path_policies(s, shape)
        if (names := [n for n in policy_alarms(s, p)[0] if n not in collected])
    }
    if not gone:
        return ""
    said = "; ".join(f"{p} names {', '.join(n)}" for p, n in gone.items())
    return (
        f"Its step policy is there, but its alarm is gone ({said}, which DescribeAlarms did "
        "not return). " + revert_drift(s, "an alarm")
    )
