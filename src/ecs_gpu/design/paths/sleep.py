"""The sleep path: what takes a scale-to-zero service to zero tasks once no request comes.

Target tracking takes the last task away only after its AWS-owned low alarm
sees 15 one-minute datapoints (aws-semantics.md §9 "Target tracking's low
alarm"), and the instance leaves 15 CPR datapoints after that (§2 "CPR
AlarmHigh / AlarmLow"): a fleet at zero load pays 30 minutes a night. The
sleep path shortens the first half (the second stays AWS's: no scaling policy
of ours may act on a capacity provider's group, §10 "Other scaling policies on
a managed group"), beside the wake path (:mod:`ecs_gpu.design.paths.wake`) and
only where one is deployed (``min_tasks = 0`` and ``[load_balancer]``): a
one-minute alarm on the load balancer's requests and open connections
(:data:`ACTIVITY`), read only while a task is RUNNING (:data:`REQUESTS`), in
ALARM after :func:`quiet_minutes` quiet minutes in a row, invokes a step
policy with ``ExactCapacity`` 0. docs/template.md "Sleep path" says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import wake
from ecs_gpu.spec import Spec

# The quiet window is defined in wake (the wake's cooldown must end within it);
# the sleep path reads it here.
LONGEST_REQUEST_S: Final = wake.LONGEST_REQUEST_S
MIN_QUIET_MINUTES: Final = wake.MIN_QUIET_MINUTES
quiet_minutes = wake.quiet_minutes
PERIOD_S: Final = wake.PERIOD_S
THRESHOLD: Final = 0.0
COMPARISON: Final = "LessThanOrEqualToThreshold"
# Application Auto Scaling takes ExactCapacity for an ECS service and never
# sets a count below the target's MinCapacity (aws-semantics §10 "ExactCapacity
# and MinCapacity"): a scheduled min_tasks of 1 by day keeps the task, and the
# alarm sitting in ALARM all night re-sets 0.
ADJUSTMENT_TYPE: Final = "ExactCapacity"
TASKS: Final = 0
# Re-invocations set the same 0; the cooldown only spaces them.
COOLDOWN_S: Final = PERIOD_S
# Every period has a value while the gate's CPU series exists; with none at all
# the service is at zero already: nothing to put to sleep.
TREAT_MISSING_DATA: Final = "notBreaching"
# The load balancer's open connections (client and target side): a streaming
# response holds one however long it runs.
CONNECTIONS_ID: Final = "a"
CONNECTIONS_METRIC: Final = "ActiveConnectionCount"
IN_FLIGHT_ID: Final = "q"
# With [service.metrics] and demand_estimate = "in-flight" the expression adds
# the sidecars' series (demand_metric.py), the requests in flight, at this
# statistic. The arrival-rate estimate is a function of arrivals, not of a
# request still running, so it is not added.
IN_FLIGHT_STATISTIC: Final = "Maximum"
# What makes a minute not quiet. A minute without a request has no ALB
# datapoint (§10 "ALB metrics at no request"), so each count is FILLed with 0.
# A request the ALB counted may still be running: the window lasts at least
# LONGEST_REQUEST_S (the load balancer's idle timeout, the longest a request
# may go without a byte) in whole periods, MIN_QUIET_MINUTES. A response that
# streams for longer keeps its connection open, and ActiveConnectionCount
# (Sum, published while it is non-zero: §10 "Open connections") counts it, so
# a minute with a connection open is never quiet, whatever the sidecars report.
ACTIVITY: Final = (
    f"FILL({wake.REQUESTS_ID}, 0) + FILL({wake.REJECTED_ID}, 0) + FILL({CONNECTIONS_ID}, 0)"
)
# Read only while a task is RUNNING (ECS's CPU datapoint, the wake alarm's ``c``,
# exists only then: §10 "ECS metrics with no RUNNING task"): a task the wake
# just started has none while its instance boots and its image pulls (PENDING),
# and the lone request that woke it got its 503 at once and holds no
# connection; the service at zero is asleep. Either way the value is 1, never
# quiet, so the alarm cannot stop a task before it served, and every period
# has a value (no reliance on missing data). A task is RUNNING while its model
# loads too: quiet_minutes outlasts that load.
NOT_RUNNING: Final = 1
REQUESTS: Final = f"IF(FILL({wake.RUNNING_ID}, 0) > 0, {ACTIVITY}, {NOT_RUNNING})"
IN_FLIGHT_EXPRESSION: Final = (
    f"IF(FILL({wake.RUNNING_ID}, 0) > 0, {ACTIVITY} + FILL({IN_FLIGHT_ID}, 0), {NOT_RUNNING})"
)
EXPRESSION_LABEL: Final = "Requests and connections (and in flight)"


@dataclass(frozen=True)
class SleepPath:
    """The alarm and step policy a spec deploys (None from :func:`sleep_path` without one)."""

    minutes: int
    # The sidecars' in-flight series is in the expression.
    in_flight: bool
    period_s: int = PERIOD_S
    threshold: float = THRESHOLD
    tasks: int = TASKS
    cooldown_s: int = COOLDOWN_S

    @property
    def expression(self) -> str:
        return IN_FLIGHT_EXPRESSION if self.in_flight else REQUESTS


def sleep_path(spec: Spec) -> SleepPath | None:
    """The sleep alarm and policy, or None: a service gets one exactly where it gets
    the wake path (:func:`ecs_gpu.design.paths.wake.wake_path`), which brings it back."""
    if wake.wake_path(spec) is None:
        return None
    in_flight = spec.service.metrics is not None and spec.scaling.demand_estimate == "in-flight"
    return SleepPath(minutes=quiet_minutes(spec), in_flight=in_flight)


def is_sleep_policy(policy: Mapping[str, Any]) -> bool:
    """Whether a deployed StepScaling policy has the sleep path's shape: ExactCapacity,
    every step setting 0 (the fast path adds, the fast scale-in removes, the wake adds)."""
    cfg = policy.get("StepScalingPolicyConfiguration") or {}
    steps = cfg.get("StepAdjustments") or []
    return (
        cfg.get("AdjustmentType") == ADJUSTMENT_TYPE
        and bool(steps)
        and all(s.get("ScalingAdjustment") == TASKS for s in steps)
    )


def queries(cluster: str, service: str, in_flight: bool) -> dict[str, wake.Query]:
    """The sleep alarm's queries by id: the wake alarm's (the ALB's two counts, the CPU
    gate), the ALB's open connections and, ``in_flight``, the sidecars' series."""
    want = {**wake.queries(cluster, service), CONNECTIONS_ID: wake.elb_query(CONNECTIONS_METRIC)}
    if in_flight:
        dims = {d["Name"]: d["Value"] for d in demand_metric.dimensions(cluster, service)}
        want[IN_FLIGHT_ID] = (
            demand_metric.NAMESPACE,
            demand_metric.METRIC_NAME,
            IN_FLIGHT_STATISTIC,
            dims,
        )
    return want


def alarm_differences(
    alarm: Mapping[str, Any],
    cluster: str,
    service: str,
    load_balancer: Any = None,
    minutes: int | None = None,
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed alarm differs from the sleep
    alarm: one of the two expressions over :func:`queries` (each query's namespace,
    metric, statistic, dimensions and period; the ALB's three of one load balancer,
    ``load_balancer`` where given: the wake alarm's), :data:`COMPARISON`
    :data:`THRESHOLD`, ``minutes`` of as many periods (the spec's :func:`quiet_minutes`;
    None, without a spec: any window of at least :data:`MIN_QUIET_MINUTES`, which the
    model's load may lengthen), :data:`TREAT_MISSING_DATA`. Empty: it is the sleep
    alarm. Pure; doctor's sleep-path check and ``verify scaling`` read it."""
    exprs = [q.get("Expression") for q in alarm.get("Metrics") or [] if "Expression" in q]
    if exprs not in ([REQUESTS], [IN_FLIGHT_EXPRESSION]):
        return [("Expression", exprs, f"expression {exprs} (want {REQUESTS}, + in flight)")]
    want = queries(cluster, service, in_flight=exprs == [IN_FLIGHT_EXPRESSION])
    out = wake.query_differences(alarm, want, load_balancer)
    found = (alarm.get("ComparisonOperator"), alarm.get("Threshold"))
    if found != (COMPARISON, THRESHOLD):
        out.append(("Threshold", found, f"{found} (want {COMPARISON} {THRESHOLD:g})"))
    periods = (alarm.get("EvaluationPeriods"), alarm.get("DatapointsToAlarm"))
    if minutes is not None:
        ok, want_n = periods == (minutes, minutes), f"{minutes} of {minutes}"
    else:
        n = periods[0]
        ok = periods[1] == n and isinstance(n, int) and n >= MIN_QUIET_MINUTES
        want_n = f"N of N, N at least {MIN_QUIET_MINUTES}"
    if not ok:
        out.append(("EvaluationPeriods", periods, f"{periods[0]} periods (want {want_n})"))
    missing = alarm.get("TreatMissingData")
    if missing != TREAT_MISSING_DATA:
        out.append(
            ("TreatMissingData", missing, f"missing data {missing} (want {TREAT_MISSING_DATA})")
        )
    return out
