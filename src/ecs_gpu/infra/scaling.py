"""The task layer: one scalable target and the policies on it.

Application Auto Scaling scales out when any policy asks and, among target
tracking policies, in only when all agree (aws-semantics.md §1), so every
signal can add tasks and target tracking shrinks the service only when all
are slack. A step policy's scale-in is not part of that vote (§9): the fast
scale-in carries its own guard (:mod:`ecs_gpu.design.paths.fast_scale_in`).
Each series is named from its contract (:mod:`ecs_gpu.contracts.gpu_metric`,
:mod:`ecs_gpu.contracts.demand_metric`) and the ASG, cluster and service from
:class:`Names`: the strings the host agent, the metrics sidecar and ECS
publish under. :func:`build_scaling` says which policies each ``[scaling]
signal`` deploys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import (
    CONCURRENCY,
    SERIES,
    SeriesNames,
    Signal,
    Watched,
)
from ecs_gpu.design import Design
from ecs_gpu.design.paths import fast_path, fast_scale_in, sleep, wake
from ecs_gpu.spec import Spec

# Construct ids: the policies' logical ids derive from them, and tests and
# `doctor` find the policies by them (the tracked signals' in signals.py).
CPU_POLICY_ID = "CpuUtilization"
REQUESTS_POLICY_ID = "RequestsPerTarget"
FAST_PATH_POLICY_ID = "FastScaleOut"
FAST_PATH_ALARM_ID = "FastScaleOutAlarm"
FAST_SCALE_IN_POLICY_ID = "FastScaleIn"
FAST_SCALE_IN_ALARM_ID = "FastScaleInAlarm"
WAKE_POLICY_ID = "Wake"
WAKE_ALARM_ID = "WakeAlarm"
SLEEP_POLICY_ID = "Sleep"
SLEEP_ALARM_ID = "SleepAlarm"
# Scheduled actions: SCHEDULE_ID_PREFIX + the entry's index ([[scaling.schedule]]).
SCHEDULE_ID_PREFIX = "Schedule"

# ECS's 20-second service CPU series and the target-tracking type that reads
# it (botocore application-autoscaling MetricType; cfn-lint's schema has it).
# CDK 2.275's PredefinedMetric enum lacks it, so it is set on the L1.
CPU_HIGH_RESOLUTION_METRIC_TYPE = "ECSServiceAverageCPUUtilizationHighResolution"
# ECS publishes the 20-second series only when the service asks for it
# (AWS::ECS::Service Monitoring; valid resolutions 20 and 60).
CPU_RESOLUTION_S = 20


@dataclass(frozen=True)
class Scaling:
    target: ecs.ScalableTaskCount
    # None with signal "concurrency" and no gpu_guard.
    gpu_policy: appscaling.TargetTrackingScalingPolicy | None
    # Set with signal "concurrency".
    concurrency_policy: appscaling.TargetTrackingScalingPolicy | None
    # Set when the signal plan deploys the fast path (plan.fast_path).
    fast_path_alarm: cw.Alarm | None
    fast_path_policy: appscaling.StepScalingAction | None
    # Set when the design has a fast scale-in (Design.fast_scale_in).
    fast_scale_in_alarm: cw.Alarm | None = None
    fast_scale_in_policy: appscaling.StepScalingAction | None = None
    # Set when the design has a wake path (Design.wake): a scale-to-zero service
    # with a load balancer.
    wake_alarm: cw.Alarm | None = None
    wake_policy: appscaling.StepScalingAction | None = None
    # Set when the design has a sleep path (Design.sleep): the same as the wake path.
    sleep_alarm: cw.Alarm | None = None
    sleep_policy: appscaling.StepScalingAction | None = None


def series_metric(
    watched: Watched,
    names: SeriesNames,
    *,
    period_s: int | None = None,
    statistic: str | None = None,
    label: str | None = None,
) -> cw.Metric:
    """A signal's watched series (signals.SERIES) as a CDK metric, at its own period and
    statistic unless told; the policies, the dashboard and the missing-metric alarms use it."""
    return cw.Metric(
        namespace=watched.namespace,
        metric_name=watched.metric_name,
        dimensions_map=watched.dimensions_map(names),
        statistic=watched.statistic if statistic is None else statistic,
        period=Duration.seconds(watched.period_s if period_s is None else period_s),
        label=label,
    )


def task_gpu_metrics(spec: Spec) -> list[dict[str, Any]]:
    """The policy's ``CustomizedMetricSpecification.Metrics`` for ``signal = "task-gpus"``.

    Two hidden queries (the agent's ASG average, ECS's GPUReservation of the
    cluster) and the expression over them that target tracking follows.
    Application Auto Scaling has no Period here: each query is evaluated per
    minute, the agent's and ECS's publishing interval.
    """
    names = Names(spec.service.name)
    return [
        {
            "Id": gpu_metric.UTILIZATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.NAMESPACE,
                    "MetricName": gpu_metric.UTILIZATION,
                    "Dimensions": gpu_metric.dimensions(names.asg),
                },
                "Stat": gpu_metric.STATISTIC,
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.RESERVATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.RESERVATION_NAMESPACE,
                    "MetricName": gpu_metric.RESERVATION_METRIC,
                    "Dimensions": gpu_metric.reservation_dimensions(names.cluster),
                },
                # ECS documents Average as the useful statistic of a reservation.
                "Stat": "Average",
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.TASK_GPU_EXPRESSION_ID,
            "Expression": gpu_metric.TASK_GPU_EXPRESSION,
            "Label": gpu_metric.TASK_GPU_LABEL,
            "ReturnData": True,
        },
    ]


def _use_metric_math(
    policy: appscaling.TargetTrackingScalingPolicy, metrics: list[dict[str, Any]]
) -> None:
    """Make a target-tracking policy track metric math (``metrics``) instead of its plain series.

    CDK's L2 accepts only a direct metric for target tracking (aws-cdk issue
    #20659), so the L1 is overridden: the direct-metric keys go, ``Metrics``
    comes in. The L2 keeps the logical id, policy name, target value,
    cooldowns and scalable-target wiring. The GPU policy tracks
    :func:`task_gpu_metrics`; the concurrency policy, with the fast path on,
    the series capped at the target (fast_path.tracking_cap).
    """
    cfn = _cfn_policy(policy)
    cms = "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
    for key in ("MetricName", "Namespace", "Dimensions", "Statistic", "Unit"):
        cfn.add_property_deletion_override(f"{cms}.{key}")
    cfn.add_property_override(f"{cms}.Metrics", metrics)


def concurrency_metric(
    spec: Spec,
    period_s: int,
    statistic: str = demand_metric.STATISTIC,
    label: str | None = None,
) -> cw.Metric:
    """The sidecar's per-task concurrency series (Average over all tasks' datapoints is the
    mean per task); the policies, the dashboard and the missing-metric alarm all use it."""
    return series_metric(
        SERIES[CONCURRENCY].watched,
        Names(spec.service.name),
        period_s=period_s,
        statistic=statistic,
        label=label,
    )


def _child_policy(
    target: ecs.ScalableTaskCount, policy_id: str
) -> appscaling.TargetTrackingScalingPolicy:
    """A policy the L2 ``scale_*`` calls made (they return nothing): under the scalable target."""
    policy = _scalable_target(target).node.find_child(policy_id)
    if not isinstance(policy, appscaling.TargetTrackingScalingPolicy):
        raise TypeError(f"unexpected {policy_id} construct {type(policy).__name__}")
    return policy


def _scalable_target(target: ecs.ScalableTaskCount) -> appscaling.ScalableTarget:
    # CDK puts the task count's ScalableTarget under it with the id "Target".
    scalable = target.node.find_child("Target")
    if not isinstance(scalable, appscaling.ScalableTarget):
        raise TypeError(f"unexpected scalable target construct {type(scalable).__name__}")
    return scalable


def _cfn_policy(policy: appscaling.TargetTrackingScalingPolicy) -> appscaling.CfnScalingPolicy:
    cfn = policy.node.default_child
    if not isinstance(cfn, appscaling.CfnScalingPolicy):
        raise TypeError(f"unexpected policy child {type(cfn).__name__}")
    return cfn


def _cpu_high_resolution(
    service: ecs.Ec2Service, policy: appscaling.TargetTrackingScalingPolicy
) -> None:
    """Track ECS's 20-second CPU series, and have the service publish it.

    The two go together: the policy type reads a series ECS writes only for a
    service whose Monitoring asks for 20-second CPUUtilization. It costs like
    detailed monitoring; it cuts the CPU policy's reaction from minutes to
    about one (AWS's "faster auto scaling" page: 363 s to 86 s to trigger).
    """
    _cfn_policy(policy).add_property_override(
        "TargetTrackingScalingPolicyConfiguration.PredefinedMetricSpecification"
        ".PredefinedMetricType",
        CPU_HIGH_RESOLUTION_METRIC_TYPE,
    )
    cfn_service = service.node.default_child
    if not isinstance(cfn_service, ecs.CfnService):
        raise TypeError(f"unexpected service child {type(cfn_service).__name__}")
    cfn_service.add_property_override(
        "Monitoring",
        {
            "MetricConfigurations": [
                {"MetricNames": ["CPUUtilization"], "ResolutionSeconds": CPU_RESOLUTION_S}
            ]
        },
    )


def _alarmed_step_policy(
    scope: ecs.ScalableTaskCount,
    ids: tuple[str, str],
    *,
    adjustment_type: appscaling.AdjustmentType,
    cooldown_s: int,
    steps: list[tuple[int, float | None, float | None]],
    alarm: cw.AlarmProps,
    min_adjustment: int | None = None,
    aggregation: str = "Maximum",
) -> tuple[cw.Alarm, appscaling.StepScalingAction]:
    """A step policy (``steps``: adjustment, lower and upper bound over the threshold) and
    the alarm that invokes it; ``ids``: (policy, alarm) construct ids, ``alarm``: the rest
    of the alarm's properties (those the step paths set). Every step path builds its pair
    here.

    Built from ``StepScalingAction`` and a plain alarm rather than CDK's
    ``scale_on_metric``, which would pick the threshold and the missing-data
    treatment itself.
    """
    policy = appscaling.StepScalingAction(
        scope,
        ids[0],
        scaling_target=_scalable_target(scope),
        adjustment_type=adjustment_type,
        cooldown=Duration.seconds(cooldown_s),
        # One-step policies (wake, sleep) keep the default: it picks no step there.
        metric_aggregation_type=appscaling.MetricAggregationType[aggregation.upper()],
        min_adjustment_magnitude=min_adjustment,
    )
    for adjustment, lower, upper in steps:
        policy.add_adjustment(adjustment=adjustment, lower_bound=lower, upper_bound=upper)
    made = cw.Alarm(
        scope,
        ids[1],
        alarm_description=alarm.alarm_description,
        metric=alarm.metric,
        comparison_operator=alarm.comparison_operator,
        threshold=alarm.threshold,
        evaluation_periods=alarm.evaluation_periods,
        datapoints_to_alarm=alarm.datapoints_to_alarm,
        treat_missing_data=alarm.treat_missing_data,
    )
    made.add_alarm_action(cw_actions.ApplicationScalingAction(policy))
    return made, policy


def _add_fast_path(
    scope: ecs.ScalableTaskCount, spec: Spec, fp: fast_path.FastPath
) -> tuple[cw.Alarm, appscaling.StepScalingAction]:
    """The 10-second alarm and the step policy it invokes.

    The numbers are from :mod:`ecs_gpu.design.paths.fast_path`.

    The policy only adds: scale-in stays with target tracking, which sees the
    same series once a minute.
    """
    target = fp.target
    return _alarmed_step_policy(
        scope,
        (FAST_PATH_POLICY_ID, FAST_PATH_ALARM_ID),
        adjustment_type=appscaling.AdjustmentType.PERCENT_CHANGE_IN_CAPACITY,
        cooldown_s=fp.cooldown_s,
        min_adjustment=fp.min_adjustment,
        aggregation=fp.aggregation,
        steps=[(step.percent, step.lower, step.upper) for step in fp.steps],
        alarm=cw.AlarmProps(
            alarm_description=(
                f"Requests in flight or waiting per task reached {fp.threshold:g} "
                f"({spec.scaling.panic_threshold_percent:g} % of the target {target:g}) for "
                f"{fp.datapoints_to_alarm} x {fp.period_s} s: the step policy adds tasks in "
                "proportion to the excess (ecs-gpu fast path)."
            ),
            metric=concurrency_metric(spec, fp.period_s),
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            threshold=fp.threshold,
            evaluation_periods=fp.evaluation_periods,
            datapoints_to_alarm=fp.datapoints_to_alarm,
            # A missing series is the missing-metric alarm's business
            # (observability.py); here it must not add GPU instances.
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        ),
    )


def scale_in_expression(spec: Spec, fsi: fast_scale_in.FastScaleIn) -> cw.MathExpression:
    """``s / (n - 1)`` over the sidecars' 10-second series: per-task concurrency with one
    task fewer (Sum over SampleCount - 1; each task publishes one datapoint per 10 s)."""
    return cw.MathExpression(
        expression=fast_scale_in.expression(fsi.threshold, fsi.period_s),
        using_metrics={
            fast_scale_in.SUM_ID: concurrency_metric(spec, fsi.period_s, "Sum"),
            fast_scale_in.COUNT_ID: concurrency_metric(spec, fsi.period_s, "SampleCount"),
        },
        label=fast_scale_in.EXPRESSION_LABEL,
        period=Duration.seconds(fsi.period_s),
    )


def _add_fast_scale_in(
    scope: ecs.ScalableTaskCount, spec: Spec, fsi: fast_scale_in.FastScaleIn
) -> tuple[cw.Alarm, appscaling.StepScalingAction]:
    """The 10-second low alarm and the step policy that removes a bounded fraction.

    Numbers from :mod:`ecs_gpu.design.paths.fast_scale_in`, which says why it cannot take
    what the load needs: target tracking does not block a step scale-in
    (aws-semantics.md §9), so the guard is the alarm's expression and the
    step sizes. Target tracking keeps its own scale-in as the backstop.
    """
    return _alarmed_step_policy(
        scope,
        (FAST_SCALE_IN_POLICY_ID, FAST_SCALE_IN_ALARM_ID),
        adjustment_type=appscaling.AdjustmentType.PERCENT_CHANGE_IN_CAPACITY,
        cooldown_s=fsi.cooldown_s,
        min_adjustment=fsi.min_adjustment,
        aggregation=fast_scale_in.METRIC_AGGREGATION,
        steps=[(-step.percent, step.lower, step.upper) for step in fsi.steps],
        alarm=cw.AlarmProps(
            alarm_description=(
                f"Requests in flight or waiting per task, counted on one task fewer, below "
                f"{fsi.threshold:g} (the target {fsi.target:g}) for {fsi.datapoints_to_alarm} x "
                f"{fsi.period_s} s: the step policy removes at most "
                f"{fast_scale_in.MAX_STEP_PERCENT} % of the tasks, never below what the load "
                "needs at the target (ecs-gpu fast scale-in)."
            ),
            metric=scale_in_expression(spec, fsi),
            comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
            threshold=fsi.threshold,
            evaluation_periods=fsi.evaluation_periods,
            datapoints_to_alarm=fsi.datapoints_to_alarm,
            # No data (the sidecars stopped) is no evidence of low load.
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        ),
    )


def running_metric(spec: Spec, period_s: int) -> cw.Metric:
    """ECS's service CPU datapoint count: 0 (missing) exactly while no task is RUNNING
    (:mod:`ecs_gpu.design.paths.wake`); the wake alarm and, at zero, the missing-metric alarms
    read it."""
    names = Names(spec.service.name)
    return cw.Metric(
        namespace=wake.RUNNING_NAMESPACE,
        metric_name=wake.RUNNING_METRIC,
        dimensions_map={"ClusterName": names.cluster, "ServiceName": names.service},
        statistic=wake.RUNNING_STATISTIC,
        period=Duration.seconds(period_s),
    )


def _elb_metric(load_balancer: str, metric: str, period_s: int) -> cw.Metric:
    """One of the load balancer's counts the wake and sleep alarms read.

    See :mod:`ecs_gpu.design.paths.wake`.
    """
    return cw.Metric(
        namespace=wake.ELB_NAMESPACE,
        metric_name=metric,
        dimensions_map={wake.ELB_DIMENSION: load_balancer},
        statistic=wake.ELB_STATISTIC,
        period=Duration.seconds(period_s),
    )


def wake_expression(spec: Spec, wp: wake.WakePath, load_balancer: str) -> cw.MathExpression:
    """Requests to the load balancer (RequestCount + the ELB's own 503s) while the service
    has no CPU datapoint, i.e. no RUNNING task; 0 while one runs
    (:mod:`ecs_gpu.design.paths.wake`)."""
    period = Duration.seconds(wp.period_s)
    running = running_metric(spec, wp.period_s)
    return cw.MathExpression(
        expression=wake.EXPRESSION,
        using_metrics={
            wake.REQUESTS_ID: _elb_metric(load_balancer, wake.REQUESTS_METRIC, wp.period_s),
            wake.REJECTED_ID: _elb_metric(load_balancer, wake.REJECTED_METRIC, wp.period_s),
            wake.RUNNING_ID: running,
        },
        label=wake.EXPRESSION_LABEL,
        period=period,
    )


def _add_wake_path(
    scope: ecs.ScalableTaskCount,
    spec: Spec,
    wp: wake.WakePath,
    alb: elbv2.ApplicationLoadBalancer,
) -> tuple[cw.Alarm, appscaling.StepScalingAction]:
    """The one-minute wake alarm and the step policy that adds one task.

    See :mod:`ecs_gpu.design.paths.wake`.

    The step's lower bound is 0 over the threshold and it has no upper bound:
    any request while no task runs adds ``wp.tasks`` to the RUNNING count (0),
    so a re-invocation while the first task starts sets the same count.
    """
    return _alarmed_step_policy(
        scope,
        (WAKE_POLICY_ID, WAKE_ALARM_ID),
        adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
        cooldown_s=wp.cooldown_s,
        steps=[(wp.tasks, 0, None)],
        alarm=cw.AlarmProps(
            alarm_description=(
                f"A request reached the load balancer in a {wp.period_s}-s period while the "
                f"service ran no task: the step policy starts {wp.tasks} (ecs-gpu wake path; "
                "target tracking has no datapoint at zero tasks)."
            ),
            metric=wake_expression(spec, wp, alb.load_balancer_full_name),
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            threshold=wp.threshold,
            evaluation_periods=wp.evaluation_periods,
            datapoints_to_alarm=wp.datapoints_to_alarm,
            # No request: the ALB publishes nothing (aws-semantics §10); nothing to wake for.
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        ),
    )


def sleep_expression(spec: Spec, sp: sleep.SleepPath, load_balancer: str) -> cw.MathExpression:
    """The load balancer's requests and open connections (and, with the in-flight series,
    the most requests any task has in flight) in a period while a task is RUNNING: 0 while
    the service has nothing to serve, 1 while no task runs (:mod:`ecs_gpu.design.paths.sleep`)."""
    metrics: dict[str, cw.IMetric] = {
        wake.REQUESTS_ID: _elb_metric(load_balancer, wake.REQUESTS_METRIC, sp.period_s),
        wake.REJECTED_ID: _elb_metric(load_balancer, wake.REJECTED_METRIC, sp.period_s),
        sleep.CONNECTIONS_ID: _elb_metric(load_balancer, sleep.CONNECTIONS_METRIC, sp.period_s),
        # The gate: read only while a task is RUNNING (ecs_gpu.design.paths.sleep).
        wake.RUNNING_ID: running_metric(spec, sp.period_s),
    }
    if sp.in_flight:
        # The sidecars' series: with demand_estimate "in-flight" the requests in flight.
        metrics[sleep.IN_FLIGHT_ID] = concurrency_metric(
            spec, sp.period_s, sleep.IN_FLIGHT_STATISTIC
        )
    return cw.MathExpression(
        expression=sp.expression,
        using_metrics=metrics,
        label=sleep.EXPRESSION_LABEL,
        period=Duration.seconds(sp.period_s),
    )


def _add_sleep_path(
    scope: ecs.ScalableTaskCount,
    spec: Spec,
    sp: sleep.SleepPath,
    alb: elbv2.ApplicationLoadBalancer,
) -> tuple[cw.Alarm, appscaling.StepScalingAction]:
    """The sleep alarm and the ExactCapacity 0 step policy (:mod:`ecs_gpu.design.paths.sleep`).

    The one step has no lower bound and upper bound 0 over the threshold (0):
    a quiet period, read as 0 or missing, sets the count to 0, which
    Application Auto Scaling raises to the target's minimum when one is set.
    """
    return _alarmed_step_policy(
        scope,
        (SLEEP_POLICY_ID, SLEEP_ALARM_ID),
        adjustment_type=appscaling.AdjustmentType.EXACT_CAPACITY,
        cooldown_s=sp.cooldown_s,
        steps=[(sp.tasks, None, 0)],
        alarm=cw.AlarmProps(
            alarm_description=(
                f"Sleep path (ecs-gpu): {sp.minutes} min without a request or connection at "
                f"the ALB set the service to {sp.tasks} tasks."
            ),
            metric=sleep_expression(spec, sp, alb.load_balancer_full_name),
            comparison_operator=cw.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
            threshold=sp.threshold,
            evaluation_periods=sp.minutes,
            datapoints_to_alarm=sp.minutes,
            # The gated expression has a value every period a task exists
            # (ecs_gpu.design.paths.sleep).
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
        ),
    )


def _add_schedule(target: ecs.ScalableTaskCount, spec: Spec) -> None:
    """One scheduled action per [[scaling.schedule]] entry, in UTC (no time zone set)."""
    for i, entry in enumerate(spec.scaling.schedule):
        target.scale_on_schedule(
            f"{SCHEDULE_ID_PREFIX}{i}",
            schedule=appscaling.Schedule.expression(f"cron({entry.cron})"),
            min_capacity=entry.min_tasks,
            max_capacity=entry.max_tasks,
        )


def _tracking_policies(
    target: ecs.ScalableTaskCount,
    design: Design,
    scale_in: Duration,
    scale_out: Duration,
) -> dict[Signal, appscaling.TargetTrackingScalingPolicy]:
    """One target-tracking policy per tracked signal, each on its watched series.

    Application Auto Scaling has no Period for a custom metric: the policies'
    alarms read one-minute datapoints (for concurrency each the mean of the
    tasks' 10-second ones; aws-semantics.md §1 "High resolution"). With the fast
    path, the concurrency policy's datapoint is capped: the fast path does every
    scale-out, target tracking keeps the scale-in.
    """
    spec = design.spec
    sc = spec.scaling
    names = Names(spec.service.name)
    policies: dict[Signal, appscaling.TargetTrackingScalingPolicy] = {}
    for signal in design.signals.tracked:
        series = SERIES[signal]
        value = series.target(sc)
        if value is None:
            raise ValueError(f"signal {signal} needs [scaling] {series.target_key}")
        target.scale_to_track_custom_metric(
            series.policy_id,
            metric=series_metric(series.watched, names),
            target_value=value,
            scale_in_cooldown=scale_in,
            scale_out_cooldown=scale_out,
        )
        policies[signal] = _child_policy(target, series.policy_id)
        if series.divides_by_reservation:
            _use_metric_math(policies[signal], task_gpu_metrics(spec))
    cap = design.tracking_cap
    if cap is not None and CONCURRENCY in policies:
        _use_metric_math(
            policies[CONCURRENCY],
            demand_metric.capped_tracking_metrics(names.cluster, names.service, cap),
        )
    return policies


def build_scaling(
    service: ecs.Ec2Service,
    design: Design,
    target_group: elbv2.ApplicationTargetGroup | None,
    alb: elbv2.ApplicationLoadBalancer | None = None,
) -> Scaling:
    """Scalable target on the service's DesiredCount and its policies (the wake path reads
    ``alb``'s request count).

    By ``[scaling] signal``:

    * ``"concurrency"``: target tracking on requests in flight or waiting per
      task (the sidecar's series, Average over all tasks' datapoints = the mean
      per task), plus the fast path (:mod:`ecs_gpu.design.paths.fast_path`: a
      10-second alarm and a step policy that only adds), the fast scale-in
      (:mod:`ecs_gpu.design.paths.fast_scale_in`, with ``fast_scale_in = true``:
      a 10-second low alarm and a step policy that only removes, a bounded
      fraction) and, with ``gpu_guard``, the GPU policy.
    * ``"task-gpus"``: the GPU policy tracks metric math, the agent's ASG
      average scaled by ECS's GPUReservation, i.e. the utilization of the GPUs
      tasks hold (gpu_metric.py says why).
    * ``"asg-average"``: the GPU policy tracks the agent's series as is.

    The CPU policy is there with every signal, on ECS's 20-second CPU series.
    """
    spec = design.spec
    sc = spec.scaling
    plan = design.signals
    scale_in = Duration.seconds(sc.scale_in_cooldown_s)
    scale_out = Duration.seconds(sc.scale_out_cooldown_s)
    target = service.auto_scale_task_count(min_capacity=sc.min_tasks, max_capacity=sc.max_tasks)

    policies = _tracking_policies(target, design, scale_in, scale_out)
    concurrency_policy = policies.get(CONCURRENCY)
    gpu_policy = policies.get(plan.gpu_series)

    target.scale_on_cpu_utilization(
        CPU_POLICY_ID,
        target_utilization_percent=sc.cpu_target_percent,
        scale_in_cooldown=scale_in,
        scale_out_cooldown=scale_out,
        # An idle server's CPU is never 0 %, so with scale-in the CPU policy would
        # hold the last task; DisableScaleIn takes it out of the scale-in vote
        # (aws-semantics §9 "DisableScaleIn"). Unset otherwise: the template stays.
        disable_scale_in=True if design.scales_to_zero else None,
    )
    _cpu_high_resolution(service, _child_policy(target, CPU_POLICY_ID))

    lb = spec.load_balancer
    if lb is not None and lb.request_count_target is not None and target_group is not None:
        target.scale_on_request_count(
            REQUESTS_POLICY_ID,
            requests_per_target=lb.request_count_target,
            target_group=target_group,
            scale_in_cooldown=scale_in,
            scale_out_cooldown=scale_out,
        )

    alarm = step_policy = None
    fp = design.fast_path
    if fp is not None:
        alarm, step_policy = _add_fast_path(target, spec, fp)
    in_alarm = in_policy = None
    fsi = design.fast_scale_in
    if fsi is not None:
        in_alarm, in_policy = _add_fast_scale_in(target, spec, fsi)
    wake_alarm = wake_policy = None
    wp = design.wake
    if wp is not None and alb is not None:
        wake_alarm, wake_policy = _add_wake_path(target, spec, wp, alb)
    sleep_alarm = sleep_policy = None
    sp = design.sleep
    if sp is not None and alb is not None:
        sleep_alarm, sleep_policy = _add_sleep_path(target, spec, sp, alb)
    _add_schedule(target, spec)
    return Scaling(
        target=target,
        gpu_policy=gpu_policy,
        concurrency_policy=concurrency_policy,
        fast_path_alarm=alarm,
        fast_path_policy=step_policy,
        fast_scale_in_alarm=in_alarm,
        fast_scale_in_policy=in_policy,
        wake_alarm=wake_alarm,
        wake_policy=wake_policy,
        sleep_alarm=sleep_alarm,
        sleep_policy=sleep_policy,
    )
