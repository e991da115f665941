"""The wake path: what starts a task again when a scale-to-zero service has none.

With ``[scaling] min_tasks = 0`` target tracking can take the service to
zero tasks, but not back: with no task there is no CPU or concurrency
datapoint, and a policy with insufficient data does not scale; the GPU
series of the hosts that stay reads 0 %, which asks for no task either
(aws-semantics.md §10 "Target tracking at zero"). And target tracking must
not take the woken task back to zero before it serves
(:func:`unprotected_wake`). Two wake paths: with ``[load_balancer]``, a
one-minute alarm on the load balancer's requests while the service has no
RUNNING task (:data:`EXPRESSION`) invokes a step policy that adds one task
(:func:`wake_path`); without one, ``[[scaling.schedule]]`` entries
(:mod:`ecs_gpu.contracts.schedule`) raise min_tasks when the service must
serve. The template (infra/scaling.py) writes these numbers and the
simulator runs them, so they are here once, without CDK.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ecs_gpu.contracts import signals
from ecs_gpu.design import managed_scaling, spot, startup
from ecs_gpu.spec import Spec
from ecs_gpu.spec.messages import Problem

ELB_NAMESPACE: Final = "AWS/ApplicationELB"
REQUESTS_METRIC: Final = "RequestCount"
REJECTED_METRIC: Final = "HTTPCode_ELB_503_Count"
# The load balancer's full name (app/<name>/<id>): RequestCount and the ELB's
# own 503 count both have the LoadBalancer dimension alone (§10).
ELB_DIMENSION: Final = "LoadBalancer"
ELB_STATISTIC: Final = "Sum"
RUNNING_NAMESPACE: Final = "AWS/ECS"
RUNNING_METRIC: Final = "CPUUtilization"
RUNNING_STATISTIC: Final = "SampleCount"
REQUESTS_ID: Final = "r"
REJECTED_ID: Final = "e"
RUNNING_ID: Final = "c"
# Requests while no task runs; 0 while one does. The requests are
# RequestCount plus HTTPCode_ELB_503_Count: the ALB answers 503 while its
# target group has no registered target, and AWS does not say whether
# RequestCount counts those requests, so the sum is at least 1 either way.
# "No task runs" is ECS's service CPUUtilization having no datapoint: ECS sends
# the service's metrics only while it has RUNNING tasks, at no extra cost
# (RunningTaskCount would need Container Insights, which bills per metric).
# FILL(c, 0) turns its absence into 0.
EXPRESSION: Final = (
    f"IF(FILL({RUNNING_ID}, 0) == 0, FILL({REQUESTS_ID}, 0) + FILL({REJECTED_ID}, 0), 0)"
)
EXPRESSION_LABEL: Final = "Requests to the load balancer while no task runs"
# The missing-metric alarms of a service that may run no task: a series is
# missing only while a task runs (-1 then, below their threshold 0); with no
# task, 0. Without this they would be in ALARM every night at zero.
SERIES_ID: Final = "m"
MISSING_EXPRESSION: Final = signals.missing_expression(SERIES_ID, RUNNING_ID)
MISSING_LABEL: Final = "The series, or -1 while a task runs without it (0 with no task)"
# The ALB publishes every 60 s while requests flow (§10): one period, one
# datapoint, so the first minute with a request wakes the service.
PERIOD_S: Final = 60
EVALUATION_PERIODS: Final = 1
DATAPOINTS_TO_ALARM: Final = 1
THRESHOLD: Final = 1.0
COMPARISON: Final = "GreaterThanOrEqualToThreshold"
# Application Auto Scaling starts a ChangeInCapacity from the RUNNING count
# (§1 "Base for the computation"), so while the first task boots, pulls and
# loads, every re-invocation sets the same desired count of one.
ADJUSTMENT_TYPE: Final = "ChangeInCapacity"
TASKS_ADDED: Final = 1
# When an alarm sees a minute's ALB datapoint is not documented (§10 "ALB
# metrics at no request", a gap): one period. The simulator's
# alb_metric_delay_s defaults to it.
ALB_LAG_S: Final = PERIOD_S
# Beyond the instance warm-up, what the cooldown waits for: the launch comes a
# CapacityProviderReservation datapoint and its alarm after the wake (about two
# minutes, aws-semantics §2), and "no task runs" ends a minute and its lag after
# the task is RUNNING (§10): five minutes cover both.
DETECTION_MARGIN_S: Final = 300


# The sleep path's quiet window (ecs_gpu.design.paths.sleep, which reads it from here: the
# wake's cooldown must end within it). The load balancer's idle timeout the
# template sets (infra/loadbalancer.py): the longest a request may go without a
# byte before the ALB cuts it.
LONGEST_REQUEST_S: Final = 600


def request_minutes(longest_request_s: float = LONGEST_REQUEST_S) -> int:
    """Whole alarm periods that cover the longest request, so the last counted one has
    finished."""
    return max(1, math.ceil(longest_request_s / PERIOD_S))


# The least quiet window of any spec: what doctor accepts without the spec's.
MIN_QUIET_MINUTES: Final = request_minutes()


def load_minutes(spec: Spec) -> int:
    """Whole alarm periods that cover a woken task's start to serving, counted from its
    first RUNNING minute: :func:`ecs_gpu.design.startup.running_to_healthy_s`, plus one for the
    minute it turns RUNNING in (that minute has its CPU datapoint, and may be quiet)."""
    return math.ceil(startup.running_to_healthy_s(spec) / PERIOD_S) + 1


def quiet_minutes(spec: Spec) -> int:
    """Periods without a request before the service sleeps: the longer of the longest
    request (:func:`request_minutes`) and a woken task's load (:func:`load_minutes`).

    The sleep alarm reads the requests only while a task is RUNNING (ECS's CPU
    datapoint), and a task is RUNNING while its model server still loads: the
    container runs, its ALB target is not healthy yet (aws-semantics.md §10 "A
    task RUNNING while its model loads"). A lone request at zero gets its 503
    and holds no connection, so from the woken task's first RUNNING minute
    every minute is quiet until the next request: a window shorter than the
    load stops the task before it ever serves (a 40-minute p5 load under a
    10-minute window: a sparse-traffic service never serves). The load is
    taken as slow as the health-check grace period allows for (model x 1.5,
    then the ALB's two 30-s checks), so a download slower than the estimate
    is neither replaced by ECS nor stopped by the sleep. The image pull and
    the boot come before RUNNING and are not in it. 10 for g5-vllm's 60-s
    model, 13 for g6e-alb-odcr's 433 s, 62 for p5-8gpu's 2,398 s.
    """
    return max(MIN_QUIET_MINUTES, load_minutes(spec))


@dataclass(frozen=True)
class WakePath:
    """The alarm and step policy a spec deploys (None from :func:`wake_path` without one)."""

    cooldown_s: int
    tasks: int = TASKS_ADDED
    period_s: int = PERIOD_S
    threshold: float = THRESHOLD
    evaluation_periods: int = EVALUATION_PERIODS
    datapoints_to_alarm: int = DATAPOINTS_TO_ALARM


def detection_s(wp: WakePath) -> int:
    """From a request at zero to the wake policy's invocation, at the latest: the
    request's ALB minute closes (one period), its datapoint's lag (:data:`ALB_LAG_S`),
    and the alarm's evaluation of its datapoints (one period each, aws-semantics §10).
    ``verify wake`` holds the measured rise of desiredCount against it."""
    return wp.period_s + ALB_LAG_S + wp.datapoints_to_alarm * wp.period_s


def scales_to_zero(spec: Spec) -> bool:
    """Whether the service may run no task: ``[scaling] min_tasks = 0``, or a schedule
    entry that sets it."""
    sc = spec.scaling
    return sc.min_tasks == 0 or any(e.min_tasks == 0 for e in sc.schedule)


def cooldown_s(spec: Spec) -> int:
    """The step policy's cooldown: until the alarm sees the first task's CPU datapoint,
    and over before the sleep path can stop that task.

    The capacity provider's instance warm-up (boot + pull + model, or the
    pooled start; managed_scaling) plus :data:`DETECTION_MARGIN_S`. A shorter
    one lets the alarm, still reading "no task" for the minutes before the
    task's first datapoint, add a second task to the one now RUNNING.

    At most the sleep alarm's quiet minutes: each needs a RUNNING task, and a
    wake's task may be RUNNING at once (on an instance still there after the
    last sleep, its image pulled), so the sleep may set 0 that soon after the
    wake. During its own cooldown the policy "won't increase the desired
    capacity again unless either a larger scale out is triggered or the
    cooldown period ends", and its one step is never larger (aws-semantics §10
    "The wake's cooldown after a sleep"): a cooldown still running after the
    sleep would hold the next request's wake (lost for a lone request, whose
    1-of-1 alarm is in ALARM one minute). Where the bound cuts the warm-up
    short, a cold wake's task may be RUNNING without a CPU datapoint after the
    cooldown, and a client still retrying then adds a second task, on the
    second instance a launch from none brings anyway (§2 "N = 0 and tasks
    provisioning").
    """
    warmup = managed_scaling.instance_warmup_s(spec) + DETECTION_MARGIN_S
    return min(warmup, quiet_minutes(spec) * PERIOD_S)


def wake_path(spec: Spec) -> WakePath | None:
    """The wake alarm and step policy, or None: only a service that may run no task and
    has a load balancer to count requests at needs and gets one."""
    if not scales_to_zero(spec) or spec.load_balancer is None:
        return None
    return WakePath(cooldown_s=cooldown_s(spec))


# A minute for the low alarm to see a datapoint, and a minute of margin, inside
# target tracking's low minutes (signals.TRACKING_LOW_DATAPOINTS).
_START_MARGIN_MINUTES: Final = 2


def unprotected_wake(spec: Spec) -> list[Problem]:
    """Why target tracking would stop the task the wake starts before it serves; empty
    when nothing can. The design carries them (``Zero.unprotected_wake``), and
    ``ecs_gpu.design.check_woken_task`` refuses them (exit 2) in validate, the
    template's construct and each command that loads a spec.

    Application Auto Scaling scales in only when every target-tracking policy with
    scale-in reads low (aws-semantics §1 "Multiple TT policies"), and a policy without
    a datapoint is not ready to. So the woken task is safe while some policy has none:

    * ``[load_balancer] request_count_target``: the per-target request count has no
      datapoint until a healthy target receives a request (§10 "RequestCountPerTarget",
      a **[gap]** for the minutes no target is healthy), so it holds every scale-in.
    * A GPU signal alone: no. At zero the hosts that stay (``min_instances``, or the last
      one for managed scaling's 15 low minutes after the sleep) publish 0 %, and the GPU
      expression reads that (§10 "The GPU series on an idle floor"): the GPU policy's low
      alarm is already in ALARM when the wake starts a task, and sets it back to 0.
    * The concurrency signal: while the server starts, each sidecar publishes 0 (the
      demand sidecar's start deadline), and no request reaches the task before its
      target is healthy, so its policy reads low from the task's start: safe only if
      the task serves within the policy's low minutes, for a model as slow as the
      health-check grace allows (startup.running_to_healthy_s, the figure the sleep
      path's quiet window outlasts).
    """
    sc = spec.scaling
    if wake_path(spec) is None or (
        spec.load_balancer is not None and spec.load_balancer.request_count_target is not None
    ):
        return []
    key = "scaling.min_tasks" if sc.min_tasks == 0 else "scaling.schedule"
    value = 0 if sc.min_tasks == 0 else "an entry with min_tasks = 0"
    protect = (
        "add [load_balancer] request_count_target (its per-target request count has no "
        "datapoint until a task serves, which holds every target-tracking scale-in)"
    )
    if not signals.SignalPlan.of(sc).tracks_concurrency:
        return [
            Problem(
                key,
                value,
                "scales to zero on a GPU signal: at zero tasks the hosts that stay (the "
                "instance floor, or the last instance for managed scaling's 15 low minutes "
                "after a sleep) publish 0 % GPU utilization, so the GPU policy's scale-in "
                "alarm is already low when the wake starts a task, and target tracking sets "
                "it back to 0 before it serves",
                f"{protect}, or scale on concurrency with [service.metrics], or keep min_tasks = 1",
            )
        ]
    ready = startup.running_to_healthy_s(spec)
    low_s = (signals.TRACKING_LOW_DATAPOINTS - _START_MARGIN_MINUTES) * PERIOD_S
    if ready < low_s:
        return []
    return [
        Problem(
            key,
            value,
            f"scales to zero while the task may take about {ready / 60:.0f} min to serve "
            "after its container starts (the model as slow as the health-check grace "
            "allows, then the load balancer's health checks), and until then each sidecar "
            "publishes 0 "
            f"requests: target tracking's scale-in alarm reads its "
            f"{signals.TRACKING_LOW_DATAPOINTS} low minutes first and sets the task the wake "
            "started back to 0 before it serves",
            f"{protect}, or keep min_tasks = 1",
        )
    ]


def wakes_on_spot(spec: Spec) -> bool:
    """Whether the task a wake starts is the Spot provider's: with ``[capacity.spot]
    on_demand_base = 0`` the strategy's weights place the one task (``spot.split``,
    Spot at ``spot_percent`` >= 50). A task is bound to its provider's group, so it
    starts cold there (the Spot group has no warm pool and no floor) whatever the
    On-Demand group keeps, and a Spot shortage leaves it PROVISIONING."""
    sp = spec.capacity.spot
    return sp is not None and spot.split(1, sp.on_demand_base, sp.spot_percent)[1] == 1


def pooled_wake(spec: Spec) -> bool:
    """Whether the first instance after zero comes from the warm pool: the pool holds
    one at the group's floor (managed_scaling.pool_size), and the woken task is the
    On-Demand group's (not :func:`wakes_on_spot`)."""
    if wakes_on_spot(spec):
        return False
    cap = spec.capacity
    wp = cap.warm_pool
    floor = max(cap.min_instances, cap.reserved_instances or 0)
    return (
        wp is not None and managed_scaling.pool_size(wp.min_size, wp.prepared_capacity, floor) >= 1
    )


def start_s(spec: Spec) -> float:
    """From the wake to a serving task: the image pull and model on a kept instance
    (min_instances >= 1), else the warm pool's start when the pool holds an instance
    (:func:`pooled_wake`), else a cold boot + pull + model (managed_scaling); always
    the cold boot when the woken task is the Spot group's (:func:`wakes_on_spot`)."""
    kept = max(spec.capacity.min_instances, spec.capacity.reserved_instances or 0) >= 1
    if kept and not wakes_on_spot(spec):
        return startup.task_ready_s(spec)
    if pooled_wake(spec):
        return managed_scaling.pooled_start_s(spec)
    return managed_scaling.cold_start_s(spec)


# One MetricStat query the wake and sleep alarms read: (namespace, metric, statistic,
# dimensions); dimensions None: the load balancer's, by ELB_DIMENSION alone.
Query = tuple[str, str, str, Mapping[str, str] | None]


def elb_query(metric: str) -> Query:
    """One of the load balancer's counts, as the wake and sleep alarms read it."""
    return (ELB_NAMESPACE, metric, ELB_STATISTIC, None)


def queries(cluster: str, service: str) -> dict[str, Query]:
    """The wake alarm's queries by id: the ALB's two counts and the service's CPU
    SampleCount; the sleep alarm reads them too."""
    return {
        REQUESTS_ID: elb_query(REQUESTS_METRIC),
        REJECTED_ID: elb_query(REJECTED_METRIC),
        RUNNING_ID: (
            RUNNING_NAMESPACE,
            RUNNING_METRIC,
            RUNNING_STATISTIC,
            {"ClusterName": cluster, "ServiceName": service},
        ),
    }


def _query(alarm: Mapping[str, Any], qid: str) -> Mapping[str, Any]:
    for q in alarm.get("Metrics") or []:
        if q.get("Id") == qid:
            ms: Mapping[str, Any] = q.get("MetricStat") or {}
            return ms
    return {}


def _dimensions(ms: Mapping[str, Any]) -> dict[Any, Any]:
    metric = ms.get("Metric") or {}
    return {d.get("Name"): d.get("Value") for d in metric.get("Dimensions") or []}


def load_balancer_of(alarm: Mapping[str, Any]) -> Any:
    """The LoadBalancer the alarm's RequestCount query ``r`` reads (None without one)."""
    return _dimensions(_query(alarm, REQUESTS_ID)).get(ELB_DIMENSION)


def query_differences(
    alarm: Mapping[str, Any], want: Mapping[str, Query], load_balancer: Any = None
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way the alarm's queries differ from ``want``:
    namespace, metric, statistic, dimensions and :data:`PERIOD_S`. The load balancer's
    queries read one LoadBalancer, ``load_balancer`` where given, else the first's: a
    query on another ALB counts requests this service never sees. Pure; the wake and
    sleep alarms' comparisons share it."""
    out: list[tuple[str, Any, str]] = []
    # The first ELB query's load balancer (a CloudFormation token in a template: no hash).
    lb = load_balancer
    for qid, (ns, name, stat, dims) in want.items():
        ms = _query(alarm, qid)
        metric = ms.get("Metric") or {}
        found = (metric.get("Namespace"), metric.get("MetricName"), ms.get("Stat"))
        if found != (ns, name, stat):
            out.append((f"Metrics.{qid}", found, f"{qid} reads {found} (want {(ns, name, stat)})"))
        got = _dimensions(ms)
        if dims is None and set(got) != {ELB_DIMENSION}:
            out.append(
                (f"Metrics.{qid}.Dimensions", got, f"{qid} by {sorted(got)} (want {ELB_DIMENSION})")
            )
        elif dims is None and lb is None:
            lb = got[ELB_DIMENSION]
        elif dims is None and got[ELB_DIMENSION] != lb:
            out.append(
                (
                    f"Metrics.{qid}.Dimensions",
                    got,
                    f"{qid} reads load balancer {got[ELB_DIMENSION]} (want {lb})",
                )
            )
        if dims is not None and got != dims:
            out.append((f"Metrics.{qid}.Dimensions", got, f"{qid} by {got} (want {dims})"))
        if ms.get("Period") != PERIOD_S:
            out.append(
                (
                    f"Metrics.{qid}.Period",
                    ms.get("Period"),
                    f"{qid} period {ms.get('Period')} s (want {PERIOD_S} s)",
                )
            )
    return out


# No request: the ALB publishes nothing (aws-semantics §10), nothing to wake for;
# breaching would read every quiet minute at zero as a request.
TREAT_MISSING_DATA: Final = "notBreaching"


def alarm_differences(
    alarm: Mapping[str, Any], cluster: str, service: str
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed alarm differs from the wake
    alarm (:data:`EXPRESSION` over :func:`queries` at :data:`PERIOD_S`, both counts of
    one load balancer, :data:`COMPARISON` :data:`THRESHOLD`, :data:`DATAPOINTS_TO_ALARM`
    of :data:`EVALUATION_PERIODS`, :data:`TREAT_MISSING_DATA`); empty: it is the wake
    alarm. doctor's wake-path check and ``verify scaling`` read it."""
    exprs = [q.get("Expression") for q in alarm.get("Metrics") or [] if "Expression" in q]
    if exprs != [EXPRESSION]:
        return [("Expression", exprs, f"expression {exprs} (want {EXPRESSION})")]
    out = query_differences(alarm, queries(cluster, service))
    if alarm.get("ComparisonOperator") != COMPARISON or alarm.get("Threshold") != THRESHOLD:
        found_op = (alarm.get("ComparisonOperator"), alarm.get("Threshold"))
        out.append(("Threshold", found_op, f"{found_op} (want {COMPARISON} {THRESHOLD:g})"))
    periods = (alarm.get("EvaluationPeriods"), alarm.get("DatapointsToAlarm"))
    if periods != (EVALUATION_PERIODS, DATAPOINTS_TO_ALARM):
        out.append(
            (
                "EvaluationPeriods",
                periods,
                f"{periods[1]} of {periods[0]} periods "
                f"(want {DATAPOINTS_TO_ALARM} of {EVALUATION_PERIODS})",
            )
        )
    missing = alarm.get("TreatMissingData")
    if missing != TREAT_MISSING_DATA:
        out.append(
            ("TreatMissingData", missing, f"missing data {missing} (want {TREAT_MISSING_DATA})")
        )
    return out


def is_wake_policy(policy: Mapping[str, Any]) -> bool:
    """Whether a deployed StepScaling policy has the wake path's shape: ChangeInCapacity,
    every step adding (the fast path's adds percentages, the fast scale-in's removes)."""
    cfg = policy.get("StepScalingPolicyConfiguration") or {}
    steps = cfg.get("StepAdjustments") or []
    return (
        cfg.get("AdjustmentType") == ADJUSTMENT_TYPE
        and bool(steps)
        and all(
            isinstance(s.get("ScalingAdjustment"), int | float) and s["ScalingAdjustment"] > 0
            for s in steps
        )
    )


def policy_differences(policy: Mapping[str, Any]) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed wake policy (one
    :func:`is_wake_policy` takes) differs from the template's: one step adding
    :data:`TASKS_ADDED` from 0 over the threshold, unbounded above. A larger step
    starts tasks the first request does not need. The cooldown is not compared: it is
    the spec's (:func:`cooldown_s`), which a snapshot does not record. doctor's
    wake-path check and ``verify scaling`` read it."""
    cfg = policy.get("StepScalingPolicyConfiguration") or {}
    steps = [
        (
            s.get("MetricIntervalLowerBound"),
            s.get("MetricIntervalUpperBound"),
            s.get("ScalingAdjustment"),
        )
        for s in cfg.get("StepAdjustments") or []
    ]
    if steps == [(0.0, None, TASKS_ADDED)]:
        return []
    return [
        (
            "StepScalingPolicyConfiguration.StepAdjustments",
            steps,
            f"steps (lower, upper, adjustment) {steps} (want [(0, None, {TASKS_ADDED})])",
        )
    ]
