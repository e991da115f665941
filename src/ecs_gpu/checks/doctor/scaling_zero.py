"""Link 8's checks of a service that may run no task: what wakes it (SCL008), the spec's
schedule (SCL009) and what puts it to sleep (SCL010).

:mod:`ecs_gpu.checks.doctor.scaling` registers them (a link's checks live in its module);
their judgement is here.
"""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu.checks.doctor.common import (
    alarm_differs,
    collection_target,
    deleted_step_alarms,
    demand_names,
    difference_evidence,
    difference_phrases,
    parse_time,
    policy_names_evidence,
    step_path_alarms,
    step_path_policies,
)
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.runner import why_missing
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot
from ecs_gpu.contracts import schedule
from ecs_gpu.contracts.naming import scalable_target_id
from ecs_gpu.design.paths import sleep, wake


def judge_wake_path(s: Snapshot, c: Check) -> list[Finding]:
    """SCL008: what wakes a service that may be at zero tasks."""
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
                "answers every request 503. "
                + (
                    deleted_step_alarms(s, "wake")
                    or "Fix: redeploy with `ecs-gpu deploy` (a spec with min_tasks = 0 and a "
                    "[load_balancer] deploys the wake alarm), or keep a task: min_tasks = 1."
                ),
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


def judge_schedule(s: Snapshot, c: Check) -> list[Finding]:
    """SCL009: the spec's [[scaling.schedule]] entries, deployed and running."""
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


def judge_sleep_path(s: Snapshot, c: Check) -> list[Finding]:
    """SCL010: what puts a service that may be at zero to sleep."""
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
                f"{minutes or sleep.MIN_QUIET_MINUTES}, before the instance's 15 (§2). "
                + (deleted_step_alarms(s, "sleep") or "Fix: redeploy with `ecs-gpu deploy`."),
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
