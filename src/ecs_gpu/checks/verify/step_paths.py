"""``verify scaling``'s checks before the test: is each step path of the spec deployed.

The service's StepScaling policies (each of its step path,
:func:`ecs_gpu.design.paths.step_shape.shape_of`) and the CloudWatch alarms that
invoke them, as :mod:`ecs_gpu.aws.verify_step_paths` reads them, judged per path:
the fast path (:func:`explain_missing_fast_path`), and with a wake path the wake's
and the sleep's (:func:`explain_missing_zero_paths`); the fast scale-in's is
:mod:`ecs_gpu.checks.verify.scale_in`'s, over :func:`explain_missing_step_path` too.
Each says in one sentence what the service lacks, or None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ecs_gpu.checks.doctor.common import actions_enabled
from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import wake
from ecs_gpu.design.paths.sleep import EXPRESSION_LABEL as SLEEP_READS
from ecs_gpu.design.paths.sleep import MIN_QUIET_MINUTES
from ecs_gpu.design.paths.sleep import alarm_differences as sleep_differences
from ecs_gpu.design.paths.step_shape import StepShape


@dataclass(frozen=True)
class StepPolicy:
    """A StepScaling policy of the service and the alarms that invoke it."""

    name: str
    # DescribeScalingPolicies lists the CloudWatch alarms whose actions
    # invoke the policy; a step policy with none never fires.
    alarms: tuple[str, ...]
    # Which step path its steps make it (step_shape.shape_of): each check judges its own.
    shape: StepShape = "fast_path"
    # A wake policy's differences from the template's step (wake.policy_differences).
    differs: str = ""


Differences = Callable[[Mapping[str, Any]], list[tuple[str, Any, str]]]

# How judge_alarms says an alarm as the path needs it invokes nothing.
ACTIONS_DISABLED = "its actions are disabled (ActionsEnabled false: it invokes nothing;"


def enable_actions(names: Sequence[str]) -> str:
    """The command that turns the alarms' actions back on (EnableAlarmActions)."""
    return "aws cloudwatch enable-alarm-actions --alarm-names " + " ".join(names)


def disabled_alarms(judged: Sequence[tuple[str, str | None]] | None) -> list[str]:
    """The alarms :func:`judge_alarms` found as the path needs them but disabled."""
    return [n for n, why in judged or () if why is not None and why.startswith(ACTIONS_DISABLED)]


def judge_alarms(
    policies: Sequence[StepPolicy], alarms: Sequence[Mapping[str, Any]], differences: Differences
) -> list[tuple[str, str | None]] | None:
    """None when an alarm that invokes one of ``policies`` has no ``differences`` and its
    actions enabled; else, per alarm they name in order, (its name, what is wrong with it:
    "it reads ..." what differs, or that its actions are disabled; None: it does not exist).
    An alarm with ``ActionsEnabled`` false changes state and invokes nothing
    (aws-semantics.md §10 "Alarm actions disabled"), so it deploys no step path."""
    by_name = {a["AlarmName"]: a for a in alarms}
    out: list[tuple[str, str | None]] = []
    for p in policies:
        for name in p.alarms:
            alarm = by_name.get(name)
            if alarm is None:
                out.append((name, None))
                continue
            diff = differences(alarm)
            if not diff:
                if actions_enabled(alarm):
                    return None
                out.append((name, f"{ACTIONS_DISABLED} {enable_actions([name])})"))
                continue
            out.append((name, "it reads " + ", ".join(d[2] for d in diff)))
    return out


def explain_missing_step_path(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    differences: Differences,
    *,
    head: str,
    kind: str = "StepScaling policy",
) -> str | None:
    """What of a step path (``kind`` of policy invoked by an alarm with no
    ``differences``) ``policies`` lack; None when one is deployed.

    ``head`` says what the spec has and which service lacks it; the fast
    path and the fast scale-in differ only in these and their policies.
    """
    if not policies:
        return head + f"has no {kind}"
    names = ", ".join(p.name for p in policies)
    if not any(p.alarms for p in policies):
        return head + f"has {kind} {names} with no alarm to invoke it: it never fires"
    judged = judge_alarms(policies, alarms, differences)
    if judged is None:
        return None
    seen = [
        f"alarm {name} does not exist" if reads is None else f"alarm {name}: {reads}"
        for name, reads in judged
    ]
    return head + _not_matching(f"{kind} {names} whose alarm", seen)


def _not_matching(what: str, seen: Sequence[str]) -> str:
    """``what`` (an alarm of a step path) reads ``seen``, not what the spec deploys."""
    return (
        f"has {what} does not match it ({'; '.join(seen)}): the deployment is older than "
        "the spec, or was changed by hand"
    )


def explain_missing_fast_path(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    fast: fp.FastPath,
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """What of the spec's fast path the service lacks; None when it is deployed.

    Deployed means a StepScaling policy that adds tasks, invoked by an alarm
    over the sidecars' series at the spec's period and threshold (infra/scaling.py).
    """
    wanted = (
        f"a StepScaling policy invoked by an alarm on {demand_metric.NAMESPACE} "
        f"{demand_metric.METRIC_NAME} ({demand_metric.cli_dimensions(cluster, service)}) "
        f"at or above {fast.threshold:g} over {fast.period_s}-s periods"
    )
    return explain_missing_step_path(
        [p for p in policies if p.shape == "fast_path"],
        alarms,
        lambda a: fp.alarm_differences(a, cluster, service, fast.threshold),
        head=f"the spec has a fast path ({wanted}), but {resource_id} ",
    )


def explain_missing_wake(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """What of the spec's wake path the service lacks; None when it is deployed.

    Deployed means a StepScaling policy that the wake alarm (ecs_gpu.design.paths.wake: the load
    balancer's requests while the service has no CPU datapoint) invokes; without it a
    service at zero tasks stays there and the load balancer answers every request 503.
    """
    head = (
        "the spec scales to zero with a load balancer, so it has a wake path (a StepScaling "
        f"policy invoked by a one-minute alarm on {wake.EXPRESSION}), but {resource_id} "
    )
    # Only the wake policy's alarms: the sleep alarm reads the same RequestCount ``r``.
    wakes = [p for p in policies if p.shape == "wake"]
    judged = judge_alarms(wakes, alarms, lambda a: wake.alarm_differences(a, cluster, service))
    if judged is None:
        if all(p.differs for p in wakes):  # judged None: there is one
            return head + f"has a wake policy that does not match it ({wakes[0].differs})"
        return None
    seen = [f"alarm {name}: {reads}" for name, reads in judged if reads is not None]
    if not seen:
        return head + "has no such alarm: at zero tasks nothing starts one again"
    return head + _not_matching("a wake alarm that", seen)


def explain_missing_sleep(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    *,
    resource_id: str,
    cluster: str,
    service: str,
    minutes: int | None = None,
) -> str | None:
    """What of the spec's sleep path the service lacks; None when it is deployed.

    Deployed means an ExactCapacity 0 StepScaling policy invoked by the sleep alarm
    (``ecs_gpu.design.paths.sleep.alarm_differences``, as doctor's SCL010 judges it, on the
    load balancer
    the wake alarm reads, over ``minutes`` periods: the spec's ``sleep.quiet_minutes``;
    None: any window of at least ``sleep.MIN_QUIET_MINUTES``); without it an idle service
    keeps its last task, and its instance, until the next scheduled action or for good.
    """
    window = f"at least {MIN_QUIET_MINUTES}" if minutes is None else minutes
    wakes = {n for p in policies if p.shape == "wake" for n in p.alarms}
    lb = next((wake.load_balancer_of(a) for a in alarms if a.get("AlarmName") in wakes), None)
    return explain_missing_step_path(
        [p for p in policies if p.shape == "sleep"],
        alarms,
        lambda a: sleep_differences(a, cluster, service, load_balancer=lb, minutes=minutes),
        head=(
            "the spec scales to zero with a load balancer, so it has a sleep path (an "
            f"ExactCapacity 0 StepScaling policy invoked after {window} quiet "
            f"minutes of {SLEEP_READS.lower()}), but {resource_id} "
        ),
        kind="sleep policy",
    )


def explain_missing_zero_paths(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    *,
    resource_id: str,
    cluster: str,
    service: str,
    sleep_minutes: int | None = None,
) -> str | None:
    """What of the wake path (:func:`explain_missing_wake`) and the sleep path
    (:func:`explain_missing_sleep`, over ``sleep_minutes`` periods: the spec's window)
    the service lacks, in one sentence; None when both are deployed."""
    where = {"resource_id": resource_id, "cluster": cluster, "service": service}
    found = [
        explain_missing_wake(policies, alarms, **where),
        explain_missing_sleep(policies, alarms, **where, minutes=sleep_minutes),
    ]
    lacking = [m for m in found if m is not None]
    return "; ".join(lacking) if lacking else None
