"""Link 7, alarm: the scaling and missing-metric alarms have data, and the Spot
group's alarms exist and are quiet."""

from __future__ import annotations

import json
import shlex
from typing import Any

from ecs_gpu.checks.doctor.common import (
    asleep,
    collection_target,
    plan_tracks,
    policy_alarms,
    policy_metrics,
    revert_drift,
    series_at,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.doctor.signal_words import CHECKED
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.runner import why_missing
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts.signals import SERIES, Signal


def _reads(a: dict[str, Any], metrics: set[tuple[str, str]]) -> bool:
    """Does the alarm (plain, or metric math) read one of ``metrics``, (namespace, name)?"""
    found = [a] + [q.get("MetricStat", {}).get("Metric", {}) for q in a.get("Metrics", [])]
    return any((m.get("Namespace"), m.get("MetricName")) in metrics for m in found)


def _meant_as_a_signal(p: dict[str, Any]) -> bool:
    """Does this target-tracking policy read a metric meant as some signal's series?"""
    return any(checked.meant_as(m) for checked in CHECKED.values() for _, m in policy_metrics(p))


def _tracking_alarms(s: Snapshot, signal: Signal) -> list[dict[str, Any]] | None:
    """The alarms of the target-tracking policies meant as ``signal``'s series; None: unknown.

    Application Auto Scaling makes them (TargetTracking-...-AlarmHigh/-AlarmLow)
    and lists them in the policy's Alarms; the fast path's alarm watches the
    same series but invokes a StepScaling policy, and is SCL005's.
    """
    if "scaling_policies" not in s:
        return None
    return [
        a
        for p in s["scaling_policies"]
        if p.get("PolicyType", "TargetTrackingScaling") == "TargetTrackingScaling"
        and any(CHECKED[signal].meant_as(m) for _, m in policy_metrics(p))
        for a in policy_alarms(s, p)[1]
    ]


def _spot_alarm_names(s: Snapshot) -> dict[str, str]:
    """The Spot group's alarms the target names: name -> "gpu" or "shortfall" (none
    without [capacity.spot], or in a snapshot taken before they existed)."""
    spot = collection_target(s).get("spot") or {}
    found = (("gpu", spot.get("gpu_missing_alarm")), ("shortfall", spot.get("shortfall_alarm")))
    return {name: role for role, name in found if name}


def _no_data_evidence(a: dict[str, Any]) -> list[Evidence]:
    return [
        Evidence("alarms", a["AlarmName"], "StateValue", a["StateValue"]),
        Evidence("alarms", a["AlarmName"], "StateReason", a.get("StateReason")),
    ]


def _missing_policy_alarms(s: Snapshot, c: Check) -> list[Finding]:
    """A GPU or concurrency target-tracking policy names an alarm DescribeAlarms did not return.

    Absent is not "has data": without its alarms target tracking never acts.
    """
    out = []
    collected = {a.get("AlarmName") for a in s["alarms"]}
    for p in s.get("scaling_policies", []):
        if p.get("PolicyType", "TargetTrackingScaling") != "TargetTrackingScaling":
            continue  # the fast path's step policy: SCL005
        if not _meant_as_a_signal(p):
            continue
        names = [a["AlarmName"] for a in p.get("Alarms", []) if a.get("AlarmName")]
        gone = [n for n in names if n not in collected]
        if gone:
            pname = p.get("PolicyName", "?")
            out.append(
                c.finding(
                    [
                        Evidence("scaling_policies", pname, "Alarms[].AlarmName", names),
                        Evidence("alarms", gone[0], "AlarmName", None),
                    ],
                    f"The target-tracking policy {pname} acts through the alarms "
                    f"{', '.join(gone)}, which DescribeAlarms did not return (deleted by "
                    "hand?): without them the policy never changes the task count. A redeploy "
                    "of an unchanged stack does not touch the policy; put it again as it is, "
                    "and Application Auto Scaling creates its alarms (aws-semantics.md §12): "
                    + _reput_policy(p),
                    title="The scaling policy's alarm does not exist",
                )
            )
    return out


def _reput_policy(p: dict[str, Any]) -> str:
    """The put-scaling-policy command that writes the target-tracking policy ``p`` again,
    its configuration as DescribeScalingPolicies returned it, and how to see its alarms."""
    rid = str(p.get("ResourceId", "?"))
    ns = str(p.get("ServiceNamespace", "ecs"))
    config = json.dumps(p.get("TargetTrackingScalingPolicyConfiguration", {}), sort_keys=True)
    where = (
        f"--service-namespace {ns} --resource-id {shlex.quote(rid)} "
        f"--scalable-dimension {p.get('ScalableDimension', 'ecs:service:DesiredCount')}"
    )
    name = shlex.quote(str(p.get("PolicyName", "?")))
    return (
        f"aws application-autoscaling put-scaling-policy {where} --policy-name {name} "
        "--policy-type TargetTrackingScaling --target-tracking-scaling-policy-configuration "
        f"{shlex.quote(config)}; then check that the policy names its alarms: aws "
        f"application-autoscaling describe-scaling-policies {where} --policy-names {name} "
        "--query 'ScalingPolicies[].Alarms[].AlarmName'; and that they exist: aws cloudwatch "
        "describe-alarms "
        f"--alarm-name-prefix {shlex.quote('TargetTracking-' + rid + '-')} (the new alarms' "
        "names end in new ids)."
    )


@check(
    "ALM001",
    link="alarm",
    severity="error",
    title="GPU scaling alarm has no data",
    requires=("alarms",),
    doc="A target-tracking alarm on the GPU metric, or of the policy on the sidecars' "
    "concurrency series, is INSUFFICIENT_DATA.",
)
def _alarms_insufficient(s: Snapshot, c: Check) -> list[Finding]:
    missing_alarm = collection_target(s).get("missing_metric_alarm")
    if asleep(s):
        return _missing_policy_alarms(s, c)
    names = series_at(s)
    # The missing-metric alarms read the series too, by design (ALM002, ALM003).
    own = {missing_alarm, *_spot_alarm_names(s)}
    out = _missing_policy_alarms(s, c)
    shared: dict[str, list[Signal]] = {}
    for signal, row in CHECKED.items():
        shared.setdefault(row.arrives.id, []).append(signal)
    for signals in shared.values():
        series, checked = SERIES[signals[0]], CHECKED[signals[0]]
        if series.drives_fast_path:
            # Its series has step alarms besides: its policies' alarms only.
            found = _tracking_alarms(s, signals[0])
            if found is None:
                # Those alarms are found through the policies; without them, say so.
                if not out and plan_tracks(s, tuple(signals)):
                    raise Unknown(
                        f"the {checked.in_words} policy's alarms are found through "
                        "scaling_policies, which is missing: "
                        f"{why_missing(s, ('scaling_policies',))}"
                    )
                continue
        else:
            # Any alarm on the series but its missing-metric alarm.
            metrics = {
                (q["MetricStat"]["Metric"]["Namespace"], q["MetricStat"]["Metric"]["MetricName"])
                for q in series.arrival_queries(names)
            }
            found = [a for a in s["alarms"] if _reads(a, metrics) and a.get("AlarmName") not in own]
        for a in found:
            if a.get("StateValue") != "INSUFFICIENT_DATA":
                continue
            title, fix = checked.alarm_no_data(a["AlarmName"], names)
            out.append(c.finding(_no_data_evidence(a), fix, title=title))
    return out


@check(
    "ALM002",
    link="alarm",
    severity="error",
    title="GPU missing-metric alarm is firing",
    requires=("alarms",),
    doc="The missing-metric alarm is in ALARM (or does not exist: warning).",
)
def _missing_metric_alarm(s: Snapshot, c: Check) -> list[Finding]:
    name = collection_target(s).get("missing_metric_alarm")
    if not name:
        raise Unknown("the snapshot does not name the missing-metric alarm")
    found = [a for a in s["alarms"] if a.get("AlarmName") == name]
    if not found:
        return [
            c.finding(
                [Evidence("alarms", name, "AlarmName", None)],
                f"The alarm {name} that fires when the GPU metric stops does not exist, so a "
                "dead metric goes unnoticed. " + revert_drift(s, "an alarm"),
                title="GPU missing-metric alarm does not exist",
                severity="warning",
            )
        ]
    a = found[0]
    if a.get("StateValue") != "ALARM":
        return []
    fix = (
        "The GPU metric stopped arriving. Run `ecs-gpu doctor --probe-hosts` and fix what "
        "the HOST checks report (agent down, nvidia-smi missing, PutMetricData denied)."
    )
    return [c.finding(*_firing(a, fix))]


def _firing(a: dict[str, Any], fix: str) -> tuple[list[Evidence], str]:
    """A firing alarm's evidence and fix, told when nobody hears it."""
    name = a["AlarmName"]
    evidence = [
        Evidence("alarms", name, "StateValue", "ALARM"),
        Evidence("alarms", name, "StateReason", a.get("StateReason")),
    ]
    if not a.get("AlarmActions"):
        # A firing alarm nobody hears is how the reference's 8.3.0 went unnoticed.
        evidence.append(Evidence("alarms", name, "AlarmActions", a.get("AlarmActions", [])))
        fix += (
            " Nobody was told: the alarm has no actions. Add an [alerts] section "
            "(sns_topic_arn or email, docs/spec.md) to the spec and redeploy."
        )
    return evidence, fix


# What each Spot alarm watches (its absence goes unnoticed) and, firing, its
# finding's title and fix (infra/observability._spot_alarms; ecs_gpu.design.spot).
_SPOT_ALARMS: dict[str, tuple[str, str, str]] = {
    "gpu": (
        "fires when the Spot instances' GPU metric stops",
        "The Spot group's GPU metric is missing",
        "The Spot group has instances in service but its hosts publish no GPU metric. Run "
        "`ecs-gpu doctor --probe-hosts` and fix what the HOST checks report on the Spot "
        "instances (agent down, nvidia-smi missing, PutMetricData denied).",
    ),
    "shortfall": (
        "fires when the Spot group cannot get the instances it wants",
        "The Spot group is short of Spot capacity",
        "The Spot group has wanted more instances than it has in service for longer than a "
        "launch takes: EC2 has no Spot capacity for its types in its Availability Zones, and "
        "the service's Spot share of tasks waits in PROVISIONING (ASG checks show the failed "
        "launches). Now: raise [capacity.spot] on_demand_base or lower spot_percent and "
        "redeploy with `ecs-gpu deploy` (a new strategy: it forces the new deployment ECS "
        "needs, each task replaced once); then list more interchangeable instance_types.",
    ),
}


@check(
    "ALM003",
    link="alarm",
    severity="error",
    title="A Spot group alarm is firing",
    requires=("alarms",),
    doc="With [capacity.spot]: the Spot group's GPU-missing or capacity-shortfall alarm is "
    "in ALARM (or does not exist: warning).",
)
def _spot_alarms(s: Snapshot, c: Check) -> list[Finding]:
    wanted = _spot_alarm_names(s)
    if not wanted:
        return []  # no [capacity.spot] (or no spec, or a snapshot older than the alarms)
    by_name = {a.get("AlarmName"): a for a in s["alarms"]}
    out = []
    for name, role in wanted.items():
        watches, title, fix = _SPOT_ALARMS[role]
        a = by_name.get(name)
        if a is None:
            out.append(
                c.finding(
                    [Evidence("alarms", name, "AlarmName", None)],
                    f"The alarm {name} that {watches} does not exist, so nobody hears of it. "
                    + revert_drift(s, "an alarm", newer=True),
                    title="A Spot group alarm does not exist",
                    severity="warning",
                )
            )
        elif a.get("StateValue") == "ALARM":
            out.append(c.finding(*_firing(a, fix), title=title))
    return out
