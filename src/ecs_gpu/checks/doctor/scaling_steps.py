"""Link 8's step-path checks on the concurrency series: the fast path (SCL005) and the
fast scale-in (SCL007), each a StepScaling policy and the 10-second alarm that invokes it.

:mod:`ecs_gpu.checks.doctor.scaling` registers them (a link's checks live in its module);
their judgement is here.
"""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu.checks.doctor.common import (
    actions_disabled,
    actions_enabled,
    collection_target,
    deleted_step_alarms,
    demand_names,
    policy_alarms,
    policy_types_evidence,
    revert_drift,
    scales_on_concurrency,
    step_path_policies,
)
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.runner import why_missing
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import fast_path, fast_scale_in
from ecs_gpu.design.paths.step_shape import StepShape


def _step_path(
    s: Snapshot, key: str, shape: StepShape, *, policy: str, option: str
) -> tuple[float | None, list[dict[str, Any]]] | None:
    """The threshold a snapshot taken with the spec records under ``key`` (None without
    one) and the service's step policies of ``shape``; None when there is nothing to
    judge: the GPU signals have no 10-second series, hence no step path, or the spec
    turns the path off. Unknown without the alarms, or without a ``policy`` and a spec
    to say whether the service should have one (``option``: its [scaling] key)."""
    if not scales_on_concurrency(s):
        return None
    target = collection_target(s)
    # A snapshot taken with the spec records its threshold (None: the path is off).
    from_spec = target.get("signal") is not None and key in target
    threshold = target.get(key) if from_spec else None
    if from_spec and threshold is None:
        return None
    if "alarms" not in s:
        raise Unknown(f"alarms is missing: {why_missing(s, ('alarms',))}")
    policies = step_path_policies(s, shape)
    if not policies and not from_spec:
        raise Unknown(
            f"the service has no {policy}, and without the spec doctor cannot tell whether "
            f"it should ([scaling] {option}): run `ecs-gpu doctor SPEC`"
        )
    return threshold, policies


def judge_fast_path(s: Snapshot, c: Check) -> list[Finding]:
    """SCL005: the fast path's step policy and its alarm, as the spec deploys them."""
    # The fast scale-in's step policy (SCL007), the wake's (SCL008) and the sleep's
    # (SCL010) are theirs.
    path = _step_path(
        s, "fast_path_threshold", "fast_path", policy="StepScaling policy", option="fast_scale_out"
    )
    if path is None:
        return []
    threshold, steps = path
    cluster, service = demand_names(s)
    want = _fast_path_wanted(cluster, service, threshold)
    if not steps:
        return [_missing_step_policy(s, c, threshold, want)]
    good: list[dict[str, Any]] = []
    bad: list[Finding] = []
    cooldown = collection_target(s).get("fast_path_cooldown_s")
    differs = [f for p in steps for f in _differing_policy(c, p, cooldown)]
    for p in steps:
        matching, wrong = _step_policy_alarms(s, c, p, (cluster, service), threshold, want)
        good += matching
        bad += wrong
    if not good:
        return bad + differs
    if differs:
        return differs
    enabled = [a for a in good if actions_enabled(a)]
    if not enabled:
        return [
            actions_disabled(
                c,
                "fast path's",
                good,
                "a load step waits for target tracking's one-minute datapoints, minutes, "
                "before a task is added.",
            )
        ]
    return [
        _fast_alarm_without_data(c, a)
        for a in enabled
        if a.get("StateValue") == "INSUFFICIENT_DATA"
    ]


# The fast path's and the fast scale-in's fix (SCL005, SCL007).
_REDEPLOY_STEP_PATH: Final = (
    "If the spec changed since the stack was deployed, redeploy with `ecs-gpu deploy`, which "
    "writes the step policy and its alarm from the spec. If they were changed by hand, a "
    "redeploy of the unchanged spec changes nothing (CloudFormation compares templates, not "
    "what runs): a drift-aware change set (CloudFormation's create-change-set with "
    "--deployment-mode REVERT_DRIFT, docs/doctor.md) puts them back, and every other "
    "drifted resource of the stack too (a scheduled minimum or maximum, alarm actions "
    "disabled by hand)."
)


def _differing_policy(c: Check, p: dict[str, Any], cooldown: int | None) -> list[Finding]:
    """A finding when the fast path's step policy is not the template's
    (fast_path.policy_differences), e.g. a cooldown from before it counted the launch."""
    diffs = fast_path.policy_differences(p, cooldown)
    if not diffs:
        return []
    pname = p.get("PolicyName", "?")
    return [
        c.finding(
            [Evidence("scaling_policies", pname, field, value) for field, value, _ in diffs],
            f"The fast path's step policy {pname} is not the spec's: "
            + "; ".join(phrase for _, _, phrase in diffs)
            + ". A cooldown shorter than a new task's time to serve (managed scaling's "
            "launch datapoint and the instance warm-up) lets the next invocation multiply "
            "the tasks still starting by an excess they have not answered. " + _REDEPLOY_STEP_PATH,
            title="The fast path's step policy differs from the spec's",
        )
    ]


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
                    + revert_drift(s, "an alarm"),
                    title="The fast path's alarm does not exist",
                )
            )
    for a in alarms:
        diffs = fast_path.alarm_differences(a, *names, threshold)
        if not diffs:
            good.append(a)
            continue
        bad.append(
            _differing_alarm(
                c,
                a,
                pname,
                diffs,
                f"watches {'; '.join(d[2] for d in diffs)}. The fast path needs {want}: on "
                "another series it never fires, and at another period or threshold it fires "
                "at a load or pace the spec did not ask for.",
            )
        )
    return good, bad


def _differing_alarm(
    c: Check, a: dict[str, Any], pname: str, diffs: list[tuple[str, Any, str]], says: str
) -> Finding:
    """The alarm ``a`` that invokes the step policy ``pname`` differs from its step path's
    (``diffs``); ``says``: what it reads and what the path needs instead."""
    name = a.get("AlarmName", "?")
    return c.finding(
        [Evidence("alarms", name, field, value) for field, value, _ in diffs],
        f"The alarm {name} that invokes the step policy {pname} {says} " + _REDEPLOY_STEP_PATH,
    )


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


def judge_fast_scale_in(s: Snapshot, c: Check) -> list[Finding]:
    """SCL007: the fast scale-in's step policy and its alarm, as the spec deploys them."""
    path = _step_path(
        s,
        "fast_scale_in_threshold",
        "fast_scale_in",
        policy="StepScaling policy that removes tasks",
        option="fast_scale_in",
    )
    if path is None:
        return []
    threshold, removers = path
    cluster, service = demand_names(s)
    if not removers:
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
    matching: list[dict[str, Any]] = []
    for p in removers:
        pname = p.get("PolicyName", "?")
        _, alarms = policy_alarms(s, p)
        if not alarms:
            bad.append(
                c.finding(
                    [Evidence("scaling_policies", pname, "Alarms", p.get("Alarms", []))],
                    f"No collected alarm invokes the step policy {pname}, so the fast "
                    "scale-in never runs. "
                    + (deleted_step_alarms(s, "fast_scale_in") or _REDEPLOY_STEP_PATH),
                    title="No alarm invokes the fast scale-in's step policy",
                )
            )
            continue
        for a in alarms:
            diffs = fast_scale_in.alarm_differences(a, cluster, service, threshold)
            if not diffs:
                if actions_enabled(a):
                    return []
                matching.append(a)
                continue
            bad.append(
                _differing_alarm(
                    c,
                    a,
                    pname,
                    diffs,
                    f"has {'; '.join(d[2] for d in diffs)}. The fast scale-in needs the "
                    "concurrency per task on one task fewer below the target over 10-s "
                    "periods: otherwise it never fires, or removes tasks the load needs.",
                )
            )
    if matching:
        return [
            actions_disabled(
                c,
                "fast scale-in's",
                matching,
                "after a load drop the service keeps its tasks for target tracking's 15 low "
                "minutes.",
            )
        ]
    return bad
