"""Link 7, alarm: the scaling and missing-metric alarms have data."""

from __future__ import annotations

from typing import Any

from ecs_gpu import demand_metric, gpu_metric
from ecs_gpu.doctor.checks.common import (
    collection_target,
    demand_names,
    policy_alarms,
    reads_demand_metric,
    reads_gpu_metric,
    service_items,
    spec_plan,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.checks.runner import why_missing
from ecs_gpu.doctor.snapshot import Snapshot


def _asleep(s: Snapshot) -> bool:
    """At zero tasks by design: MinCapacity 0 and no task desired. Every target-tracking
    alarm then reads no data, since no task publishes (aws-semantics.md §10); SCL008
    checks what wakes the service."""
    desired = [svc.get("desiredCount") for svc in service_items(s)]
    zero = [t for t in s.get("scalable_targets") or [] if t.get("MinCapacity") == 0]
    return bool(zero) and desired == [0]


def _is_gpu_alarm(a: dict[str, Any]) -> bool:
    if (
        a.get("Namespace") == gpu_metric.NAMESPACE
        and a.get("MetricName") in gpu_metric.METRIC_NAMES
    ):
        return True
    for q in a.get("Metrics", []):
        m = q.get("MetricStat", {}).get("Metric", {})
        if (
            m.get("Namespace") == gpu_metric.NAMESPACE
            and m.get("MetricName") in gpu_metric.METRIC_NAMES
        ):
            return True
    return False


def _concurrency_alarms(s: Snapshot) -> list[dict[str, Any]] | None:
    """The alarms of the target-tracking policies on the sidecars' series; None: unknown.

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
        and reads_demand_metric(p)
        for a in policy_alarms(s, p)[1]
    ]


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
        if not (reads_gpu_metric(p) or reads_demand_metric(p)):
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
                    "hand?): without them the policy never changes the task count. Redeploy "
                    "with `ecs-gpu deploy` (Application Auto Scaling recreates them with the "
                    "policy).",
                    title="The scaling policy's alarm does not exist",
                )
            )
    return out


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
    if _asleep(s):
        return _missing_policy_alarms(s, c)
    out = _missing_policy_alarms(s, c) + [
        c.finding(
            _no_data_evidence(a),
            "Target tracking does nothing while its alarm has no data: the GPU series is not "
            "arriving, or (task-gpus) ECS's GPUReservation divisor is not. Fix the metric "
            "first (MET001, MET004 and the HOST checks).",
        )
        for a in s["alarms"]
        if _is_gpu_alarm(a)
        and a.get("AlarmName") != missing_alarm
        and a.get("StateValue") == "INSUFFICIENT_DATA"
    ]
    concurrency = _concurrency_alarms(s)
    if concurrency is None:
        # Those alarms are found through the policies; without them, say so.
        if not out and (plan := spec_plan(s)) is not None and plan.tracks_concurrency:
            raise Unknown(
                "the concurrency policy's alarms are found through scaling_policies, which is "
                f"missing: {why_missing(s, ('scaling_policies',))}"
            )
        return out
    cluster, service = demand_names(s)
    series = (
        f"{demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} "
        f"({demand_metric.cli_dimensions(cluster, service)})"
    )
    return out + [
        c.finding(
            _no_data_evidence(a),
            f"Target tracking on concurrency does nothing while its alarm {a['AlarmName']} has "
            f"no data: the sidecars' series {series} is not arriving. Fix the series first: "
            "MET005 says whether it arrives and why not (no task running, or the "
            f"{demand_metric.SIDECAR_NAME} container's log and the task role's "
            "cloudwatch:PutMetricData), TD001 whether the task definition has the sidecar, "
            "and SCL004 whether the policy reads the series the sidecars write.",
            title="Concurrency scaling alarm has no data",
        )
        for a in concurrency
        if a.get("StateValue") == "INSUFFICIENT_DATA"
    ]


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
                "dead metric goes unnoticed. Redeploy with `ecs-gpu deploy`.",
                title="GPU missing-metric alarm does not exist",
                severity="warning",
            )
        ]
    a = found[0]
    if a.get("StateValue") != "ALARM":
        return []
    evidence = [
        Evidence("alarms", name, "StateValue", "ALARM"),
        Evidence("alarms", name, "StateReason", a.get("StateReason")),
    ]
    fix = (
        "The GPU metric stopped arriving. Run `ecs-gpu doctor --probe-hosts` and fix what "
        "the HOST checks report (agent down, nvidia-smi missing, PutMetricData denied)."
    )
    if not a.get("AlarmActions"):
        # A firing alarm nobody hears is how the reference's 8.3.0 went unnoticed.
        evidence.append(Evidence("alarms", name, "AlarmActions", a.get("AlarmActions", [])))
        fix += (
            " Nobody was told: the alarm has no actions. Add an [alerts] section "
            "(sns_topic_arn or email, docs/spec.md) to the spec and redeploy."
        )
    return [c.finding(evidence, fix)]
