"""The dashboard and the alarms that say a scaling signal stopped arriving.

The reference module's 8.3.0 release scaled on a metric nobody wrote, and
its dashboard showed "No data available" without anyone being told. Here
every series is named from its signal's row (:data:`ecs_gpu.contracts.signals.SERIES`)
and :class:`ecs_gpu.contracts.naming.Names`. Each series that must arrive
(``SignalPlan.arriving``: the GPU series, and a tracked signal's own) has a
missing-metric alarm, in ALARM when the series is absent, not when it is
high; its construct id, name and description are the signal's row in
:data:`ecs_gpu.infra.signal_words.OBSERVED`, and a tracked series with a panel
of its own there gets a dashboard row. With ``[alerts]`` the alarms tell a
person, on ALARM and again on OK. With ``[capacity.spot]`` two more alarms
watch the Spot group (:func:`_spot_alarms`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from ecs_gpu import host
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import (
    SERIES,
    SeriesAt,
    SignalPlan,
    SignalSeries,
    missing_expression,
)
from ecs_gpu.design import Design, spot
from ecs_gpu.design.paths import wake
from ecs_gpu.infra.scaling import running_metric, series_metric
from ecs_gpu.infra.signal_words import OBSERVED, Panel, gpu_missing_description
from ecs_gpu.spec import Spec

ECS_NAMESPACE: Final = "AWS/ECS"
CONTAINER_INSIGHTS_NAMESPACE: Final = "ECS/ContainerInsights"
AUTOSCALING_NAMESPACE: Final = "AWS/AutoScaling"
MANAGED_SCALING_NAMESPACE: Final = "AWS/ECS/ManagedScaling"

# CloudWatch makes a datapoint queryable a minute or two after it is put; a
# named allowance, AWS publishes no bound.
INGESTION_DELAY_S: Final = 120
# The alarm waits this many times the expected launch-to-first-datapoint time.
BOOT_MARGIN_FACTOR: Final = 2
MIN_EVALUATION_PERIODS: Final = 10
# CloudWatch caps evaluation_periods x period at one day.
MAX_EVALUATION_S: Final = 86_400
# The alert topic's key is only for messages in flight; a short wait before
# KMS deletes it after the stack is gone (7 days is the KMS minimum).
ALERT_KEY_PENDING_WINDOW_DAYS: Final = 7
CLOUDWATCH_PRINCIPAL: Final = "cloudwatch.amazonaws.com"


@dataclass(frozen=True)
class Observability:
    """What :func:`add_observability` created."""

    dashboard: cw.Dashboard
    # One per series that must arrive, in SignalPlan.arriving's order (the
    # GPU series' first).
    missing_alarms: tuple[cw.Alarm, ...]
    # Where the alarm publishes: the spec's topic, the stack's own, or None.
    alert_topic: sns.ITopic | None
    # Set only when the stack created the topic (``[alerts] email``).
    alert_key: kms.Key | None
    # [capacity.spot]: the Spot group's GPU-missing and shortfall alarms.
    spot_alarms: tuple[cw.Alarm, ...] = ()


def _alarm_arn(alarm_name: str) -> str:
    return f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:{alarm_name}"


def _own_topic(
    scope: Construct, alarm_name: str, alarm_arns: list[str], emails: list[str]
) -> tuple[sns.Topic, kms.Key]:
    """An encrypted topic CloudWatch can publish to, with one email subscription per address.

    Not the AWS-managed ``alias/aws/sns`` key: its policy cannot be changed
    to let CloudWatch use it, so alarm notifications to such a topic are
    dropped. A customer-managed key, used by this topic alone, grants
    CloudWatch the two calls SNS needs to encrypt the message.
    """
    key = kms.Key(
        scope,
        "AlertKey",
        description=f"encrypts the {alarm_name} alert topic",
        enable_key_rotation=True,
        pending_window=Duration.days(ALERT_KEY_PENDING_WINDOW_DAYS),
        removal_policy=RemovalPolicy.DESTROY,
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmsEncryptToTheTopic",
            principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],
        )
    )
    topic = sns.Topic(
        scope,
        "AlertTopic",
        display_name=f"ecs-gpu {alarm_name}",
        master_key=key,
        enforce_ssl=True,
    )
    # The topic policy enforce_ssl writes replaces SNS's default one, so
    # CloudWatch's publish must be allowed here, and only from these alarms.
    topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="CloudWatchAlarmPublishes",
            principals=[iam.ServicePrincipal(CLOUDWATCH_PRINCIPAL)],
            actions=["sns:Publish"],
            resources=[topic.topic_arn],
            conditions={
                "ArnEquals": {
                    "aws:SourceArn": alarm_arns[0] if len(alarm_arns) == 1 else alarm_arns
                },
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
            },
        )
    )
    for address in emails:
        topic.add_subscription(subs.EmailSubscription(address))
    return topic, key


def series_first_datapoint_s(design: Design, series: SignalSeries) -> float:
    """Expected seconds from instance launch to a series' first datapoint CloudWatch can read.

    From the host's setup (boot to cloud-final, the setup script: dnf
    install, fetch-config) or from a task's model serving (boot, image pull
    and model, the design's cold start, as the health check and the
    simulator read it), as ``series.published_by`` says, then the series'
    own delay to its first datapoint (``series.first_datapoint_delay_s``), then ingestion.
    """
    start = (
        design.spec.simulation.instance_boot_s + host.SETUP_TYPICAL_S
        if series.published_by == "host"
        else design.managed_scaling.cold_start_s
    )
    return start + series.first_datapoint_delay_s + INGESTION_DELAY_S


def series_missing_alarm_evaluation_periods(design: Design, series: SignalSeries) -> int:
    """How many empty periods in a row make a series "missing".

    The series is empty only while nothing publishes it: at the first
    deployment, or when the whole fleet is replaced. Twice the expected
    launch-to-first-datapoint time (and never under 10 minutes) lets a slow
    but healthy boot pass without an alarm, while a metric that never
    arrives (the 8.3.0 failure) is reported within about a quarter of an hour.
    """
    period_s = series.watched.period_s
    periods = math.ceil(BOOT_MARGIN_FACTOR * series_first_datapoint_s(design, series) / period_s)
    return min(max(periods, MIN_EVALUATION_PERIODS), MAX_EVALUATION_S // period_s)


def spot_shortfall_evaluation_periods(spec: Spec) -> int:
    """How many one-minute periods the Spot group may be short of instances before it pages.

    A launch that works leaves the group short from its desired capacity's
    raise until the instance is InService (no lifecycle hook on the Spot
    group): EC2's launch, within the instance's boot
    (``[simulation] instance_boot_s``), then ingestion. Twice that, and never
    under 10 minutes: an interruption's replacement or a scale-out stays
    quiet, while a group EC2 has no Spot capacity for (each launch fails and
    is retried) pages.
    """
    period_s = spot.GROUP_PERIOD_S
    start_s = spec.simulation.instance_boot_s + INGESTION_DELAY_S
    periods = math.ceil(BOOT_MARGIN_FACTOR * start_s / period_s)
    return min(max(periods, MIN_EVALUATION_PERIODS), MAX_EVALUATION_S // period_s)


def _metric(
    namespace: str,
    name: str,
    dimensions: dict[str, str],
    label: str,
    statistic: str = "Average",
    period_s: int = gpu_metric.PERIOD_S,
) -> cw.Metric:
    return cw.Metric(
        namespace=namespace,
        metric_name=name,
        dimensions_map=dimensions,
        statistic=statistic,
        period=Duration.seconds(period_s),
        label=label,
    )


def _missing_alarm(
    scope: Construct,
    construct_id: str,
    *,
    metric: cw.Metric,
    periods: int,
    alarm_description: str,
    alarm_name: str | None = None,
    design: Design | None = None,
    group: str | None = None,
) -> cw.Alarm:
    """An alarm that is in ALARM only while ``metric`` has no datapoints.

    Both series are >= 0 (a utilization, a request count), so real data never
    breaches ``< 0``: the alarm fires only through TreatMissingData=breaching.
    Where the series is expected to be missing now and then, the alarm reads
    :func:`ecs_gpu.contracts.signals.missing_expression` instead, -1 only while it should
    arrive, and no data is not breaching: for a ``design`` that may run no task,
    while a task runs (``wake.MISSING_EXPRESSION``); for the hosts of a
    ``group`` that may have no instance (:func:`ecs_gpu.design.spot.on_demand_may_be_empty`),
    while it has one in service; with both, while both hold.
    """
    period_s = int(metric.period.to_seconds())
    gates: dict[str, cw.IMetric] = {}
    if design is not None and design.scales_to_zero:
        gates[wake.RUNNING_ID] = running_metric(design.spec, period_s)
    if group is not None:
        gates[spot.IN_SERVICE_ID] = _group_metric(spot.IN_SERVICE_METRIC, group)
    watched: cw.IMetric = metric
    missing = cw.TreatMissingData.BREACHING
    if gates:
        label = wake.MISSING_LABEL
        if group is not None:
            asleep = wake.RUNNING_ID in gates
            label = (
                spot.ON_DEMAND_GPU_MISSING_ASLEEP_LABEL
                if asleep
                else spot.ON_DEMAND_GPU_MISSING_LABEL
            )
        watched = cw.MathExpression(
            expression=missing_expression(wake.SERIES_ID, *gates),
            using_metrics={wake.SERIES_ID: metric, **gates},
            label=label,
            period=metric.period,
        )
        missing = cw.TreatMissingData.NOT_BREACHING
    return cw.Alarm(
        scope,
        construct_id,
        metric=watched,
        comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold=0,
        evaluation_periods=periods,
        datapoints_to_alarm=periods,
        treat_missing_data=missing,
        alarm_description=alarm_description,
        alarm_name=alarm_name,
    )


def add_observability(
    scope: Construct, *, design: Design, fast_path_alarm: cw.IAlarm | None = None
) -> Observability:
    """Add the service's dashboard and missing-metric alarms under ``scope``.

    The task-count panel needs Container Insights on the cluster and the
    instance panel needs ASG group metrics; ``GpuService`` turns both on.
    ``fast_path_alarm`` (infra/scaling.py) is drawn beside the series it
    watches.
    """
    spec = design.spec
    names = Names(spec.service.name)
    plan = design.signals
    node = Construct(scope, "Observability")
    # Construct order (the alarms, the topic, the dashboard) is the
    # template's resource order: keep it.
    missing_alarms = _missing_alarms(node, design, names, plan)
    spot_alarms = _spot_alarms(node, design, names, plan)
    topic, key = _alert_topic(node, spec, names, missing_alarms)
    if topic is not None:
        # OK too: the person told "metric missing" is told when it is back.
        for a in missing_alarms + spot_alarms:
            a.add_alarm_action(cw_actions.SnsAction(topic))
            a.add_ok_action(cw_actions.SnsAction(topic))

    # A tracked series' own row first (the GPU series' panels follow).
    widgets: list[list[cw.IWidget]] = [
        _panel_row(design, names, SERIES[signal], panel, fast_path_alarm)
        for signal in plan.tracked
        if (panel := OBSERVED[signal].panel) is not None
    ]
    widgets += [
        _utilization_row(spec, names, plan),
        _memory_and_tasks_row(names),
        _capacity_row(spec, names, missing_alarms + spot_alarms),
    ]
    # Each graph keeps its own period: the 10-s concurrency lines would
    # otherwise be averaged up with the time range ("auto"). (The 20-s CPU
    # series stays at 60 s: dashboards take 1, 5, 10, 30 or n x 60 s.)
    dashboard = cw.Dashboard(
        node,
        "Dashboard",
        dashboard_name=names.dashboard,
        widgets=widgets,
        period_override=cw.PeriodOverride.INHERIT,
    )
    return Observability(
        dashboard=dashboard,
        missing_alarms=tuple(missing_alarms),
        alert_topic=topic,
        alert_key=key,
        spot_alarms=tuple(spot_alarms),
    )


_PERCENT_AXIS: Final = cw.YAxisProps(min=0, max=100, label="%", show_units=False)
_COUNT_AXIS: Final = cw.YAxisProps(min=0, show_units=False)


def _gpu_dims(names: Names) -> dict[str, str]:
    return {gpu_metric.DIMENSION: names.asg}


def _service_dims(names: Names) -> dict[str, str]:
    return {"ClusterName": names.cluster, "ServiceName": names.service}


def _gpu(names: Names, name: str, label: str) -> cw.Metric:
    return _metric(gpu_metric.NAMESPACE, name, _gpu_dims(names), label, gpu_metric.STATISTIC)


def _missing_alarms(
    node: Construct, design: Design, names: Names, plan: SignalPlan
) -> list[cw.Alarm]:
    """One missing-metric alarm per series that must arrive (``plan.arriving``).

    A tracked series' alarm matters most: when it stops, target tracking
    sits in INSUFFICIENT_DATA (and the fast path never fires), so load grows
    with no task added (the outage the field reports describe).
    """
    # No label on an alarm's metric: a labelled metric makes CDK write the
    # Metrics[] (metric math) form; plain MetricName/Namespace/Dimensions is
    # what describe_alarms readers such as doctor expect.
    # The host-published GPU series is per group: with [capacity.spot] the
    # On-Demand group may have no host while every task runs on Spot. A task's
    # series (concurrency) is per service and arrives from Spot tasks too.
    empty_od = design.on_demand_may_be_empty
    out = []
    for signal in plan.arriving:
        series, alarm = SERIES[signal], OBSERVED[signal].alarm
        group = names.asg if empty_od and series.published_by == "host" else None
        description = alarm.description(names, signal in plan.tracked)
        out.append(
            _missing_alarm(
                node,
                alarm.construct_id,
                alarm_name=alarm.name(names),
                alarm_description=description
                if group is None
                else f"While {group} has instances in service: {description}",
                metric=series_metric(series.watched, names),
                periods=series_missing_alarm_evaluation_periods(design, series),
                design=design,
                group=group,
            )
        )
    return out


def _group_metric(metric_name: str, asg: str) -> cw.Metric:
    return cw.Metric(
        namespace=spot.GROUP_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={spot.GROUP_DIMENSION: asg},
        statistic=spot.GROUP_STATISTIC,
        period=Duration.seconds(spot.GROUP_PERIOD_S),
    )


def _spot_alarms(node: Construct, design: Design, names: Names, plan: SignalPlan) -> list[cw.Alarm]:
    """[capacity.spot]'s two alarms (none without it), named so doctor finds them.

    The On-Demand group's GPU alarm cannot see the Spot group (the agent's
    series is per group), and a Spot group at zero instances publishes no
    GPU series by design, so its alarm reads metric math: -1 only while an
    instance is in service without the series. The shortfall is what leaves
    the Spot share of tasks PROVISIONING: the group wants instances EC2 has no
    Spot capacity for. Missing data is not breaching in both: each expression
    fills its inputs, so a gap in them is no evidence of either fault.
    """
    spec = design.spec
    if spec.capacity.spot is None:
        return []
    gpu_name, shortfall_name = _spot_alarm_names(spec, names)
    period = Duration.seconds(spot.GROUP_PERIOD_S)
    in_service = _group_metric(spot.IN_SERVICE_METRIC, names.spot_asg)
    gpu = SERIES[plan.gpu_series]
    at = SeriesAt(asg=names.spot_asg, cluster=names.cluster, service=names.service)
    gpu_periods = series_missing_alarm_evaluation_periods(design, gpu)
    missing = cw.Alarm(
        node,
        spot.GPU_MISSING_ALARM_ID,
        alarm_name=gpu_name,
        alarm_description=f"While {names.spot_asg} has instances in service: "
        + gpu_missing_description(names.spot_asg, names.host_log_group, tracked=False),
        metric=cw.MathExpression(
            expression=spot.GPU_MISSING_EXPRESSION,
            using_metrics={
                spot.GPU_ID: series_metric(gpu.watched, at),
                spot.IN_SERVICE_ID: in_service,
            },
            label=spot.GPU_MISSING_LABEL,
            period=period,
        ),
        comparison_operator=cw.ComparisonOperator.LESS_THAN_THRESHOLD,
        threshold=0,
        evaluation_periods=gpu_periods,
        datapoints_to_alarm=gpu_periods,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )
    short_periods = spot_shortfall_evaluation_periods(spec)
    shortfall = cw.Alarm(
        node,
        spot.SHORTFALL_ALARM_ID,
        alarm_name=shortfall_name,
        alarm_description=spot.shortfall_alarm_description(names.spot_asg, short_periods),
        metric=cw.MathExpression(
            expression=spot.SHORTFALL_EXPRESSION,
            using_metrics={
                spot.DESIRED_ID: _group_metric(spot.DESIRED_METRIC, names.spot_asg),
                spot.IN_SERVICE_ID: in_service,
            },
            label=spot.SHORTFALL_LABEL,
            period=period,
        ),
        comparison_operator=cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        threshold=spot.SHORTFALL_THRESHOLD,
        evaluation_periods=short_periods,
        datapoints_to_alarm=short_periods,
        treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
    )
    return [missing, shortfall]


def _alert_topic(
    node: Construct, spec: Spec, names: Names, missing_alarms: list[cw.Alarm]
) -> tuple[sns.ITopic | None, kms.Key | None]:
    """Where the missing-metric alarms publish: the spec's topic, the stack's own, or None."""
    alerts = spec.alerts
    if alerts is not None and alerts.sns_topic_arn is not None:
        return sns.Topic.from_topic_arn(node, "AlertTopicRef", alerts.sns_topic_arn), None
    if alerts is not None and alerts.email is not None:
        # A named alarm's ARN is known before the alarm exists (no reference
        # from the topic's policy back to it); CloudFormation names the rest.
        plan = SignalPlan.of(spec.scaling)
        arns = [
            alarm.alarm_arn if (name := OBSERVED[s].alarm.name(names)) is None else _alarm_arn(name)
            for s, alarm in zip(plan.arriving, missing_alarms, strict=True)
        ]
        # The Spot alarms are named (_spot_alarms).
        arns += [_alarm_arn(name) for name in _spot_alarm_names(spec, names)]
        return _own_topic(node, names.gpu_metric_missing_alarm, arns, alerts.email)
    return None, None


def _spot_alarm_names(spec: Spec, names: Names) -> list[str]:
    """The Spot alarms' names, the GPU one first (none without [capacity.spot])."""
    if spec.capacity.spot is None:
        return []
    return [names.spot_gpu_metric_missing_alarm, names.spot_capacity_shortfall_alarm]


def _gpu_panel(
    spec: Spec, names: Names, plan: SignalPlan
) -> tuple[list[cw.IMetric], list[cw.HorizontalAnnotation]]:
    """The GPU utilization panel's series and, when a GPU policy runs, its target line."""
    utilization = _gpu(names, gpu_metric.UTILIZATION, "GPU utilization (ASG average)")
    gpu_target = spec.scaling.gpu_target_percent
    # The GPU policy is the signal itself, or a guard beside another signal.
    what = "GPU target" if plan.signal == plan.gpu_series else "GPU guard"
    if SERIES[plan.gpu_series].divides_by_reservation:
        # The policy tracks this expression, so the target line belongs to
        # it; the raw ASG average stays beside it (it is what the agent
        # writes and what the missing-metric alarm watches).
        tracked: cw.IMetric = cw.MathExpression(
            expression=gpu_metric.TASK_GPU_EXPRESSION,
            using_metrics={
                # The same object as the visible raw series: CDK draws it
                # once, with this id, and the expression refers to it.
                gpu_metric.UTILIZATION_ID: utilization,
                gpu_metric.RESERVATION_ID: _metric(
                    gpu_metric.RESERVATION_NAMESPACE,
                    gpu_metric.RESERVATION_METRIC,
                    {gpu_metric.RESERVATION_DIMENSION: names.cluster},
                    "GPUs reserved by tasks (%)",
                ),
            },
            label=f"{gpu_metric.TASK_GPU_LABEL}{', tracked' if plan.tracks_gpu else ''}",
            period=Duration.seconds(gpu_metric.PERIOD_S),
        )
        gpu_series: list[cw.IMetric] = [tracked, utilization]
        target_label = f"{what} {gpu_target:g} % (on task-held GPUs)"
    else:
        gpu_series = [utilization]
        target_label = f"{what} {gpu_target:g} % (on the ASG average)"
    gpu_annotations = (
        [cw.HorizontalAnnotation(value=gpu_target, label=target_label)] if plan.tracks_gpu else []
    )
    return gpu_series, gpu_annotations


def _utilization_row(spec: Spec, names: Names, plan: SignalPlan) -> list[cw.IWidget]:
    """GPU utilization (with the tracked series and target) beside the service's CPU."""
    gpu_series, gpu_annotations = _gpu_panel(spec, names, plan)
    cpu_target = spec.scaling.cpu_target_percent
    return [
        cw.GraphWidget(
            title="GPU utilization (%)",
            left=gpu_series,
            left_annotations=gpu_annotations,
            # No upper bound: the task-GPU expression may pass 100 % for a
            # minute while GPUReservation lags a scale-in.
            left_y_axis=cw.YAxisProps(min=0, label="%", show_units=False),
            width=12,
        ),
        cw.GraphWidget(
            title="Service CPU utilization (%)",
            left=[
                _metric(ECS_NAMESPACE, "CPUUtilization", _service_dims(names), "Service CPU"),
            ],
            left_annotations=[
                cw.HorizontalAnnotation(value=cpu_target, label=f"CPU target {cpu_target:g} %")
            ],
            left_y_axis=_PERCENT_AXIS,
            width=12,
        ),
    ]


def _memory_and_tasks_row(names: Names) -> list[cw.IWidget]:
    """GPU memory per GPU beside the service's desired, running and pending tasks."""
    service_dims = _service_dims(names)
    return [
        cw.GraphWidget(
            title="GPU memory per GPU (MiB)",
            left=[
                _gpu(names, gpu_metric.MEMORY_USED, "used"),
                _gpu(names, gpu_metric.MEMORY_TOTAL, "total"),
            ],
            left_y_axis=_COUNT_AXIS,
            width=12,
        ),
        cw.GraphWidget(
            title="Tasks",
            left=[
                _metric(CONTAINER_INSIGHTS_NAMESPACE, "DesiredTaskCount", service_dims, "desired"),
                _metric(CONTAINER_INSIGHTS_NAMESPACE, "RunningTaskCount", service_dims, "running"),
                # Pending tasks are the ones waiting for a free GPU.
                _metric(CONTAINER_INSIGHTS_NAMESPACE, "PendingTaskCount", service_dims, "pending"),
            ],
            left_y_axis=_COUNT_AXIS,
            width=12,
        ),
    ]


def _capacity_row(spec: Spec, names: Names, alarms: list[cw.Alarm]) -> list[cw.IWidget]:
    """GPU instances, the capacity provider's reservation and whether the metrics arrive.

    With [capacity.spot], the Spot group's instances and reservation beside
    the On-Demand group's, and its two alarms on the status panel.
    """
    spot = spec.capacity.spot is not None
    return [
        cw.GraphWidget(
            title="GPU instances",
            left=[
                _metric(
                    AUTOSCALING_NAMESPACE,
                    "GroupInServiceInstances",
                    {"AutoScalingGroupName": names.asg},
                    "in service",
                ),
                _metric(
                    AUTOSCALING_NAMESPACE,
                    "GroupDesiredCapacity",
                    {"AutoScalingGroupName": names.asg},
                    "desired",
                ),
                *_spot_instances(names, spot),
            ],
            left_y_axis=_COUNT_AXIS,
            width=8,
        ),
        cw.GraphWidget(
            title="Capacity provider reservation (%)",
            left=[
                _metric(
                    MANAGED_SCALING_NAMESPACE,
                    "CapacityProviderReservation",
                    {
                        "ClusterName": names.cluster,
                        "CapacityProviderName": names.capacity_provider,
                    },
                    "reservation",
                ),
                *_spot_reservation(names, spot),
            ],
            # Managed scaling holds this at target capacity; above it, instances launch.
            left_annotations=[
                cw.HorizontalAnnotation(
                    value=spec.capacity.target_capacity_percent,
                    label=f"target capacity {spec.capacity.target_capacity_percent} %",
                )
            ],
            left_y_axis=cw.YAxisProps(min=0, show_units=False),
            width=8,
        ),
        cw.AlarmStatusWidget(
            # The GPU series' alarm alone, or it and a tracked series' own.
            title=_status_title(spot, len(alarms)),
            alarms=list(alarms),
            width=8,
        ),
    ]


def _status_title(spot: bool, alarms: int) -> str:
    if spot:
        return "Metrics arriving? Spot capacity?"
    return "Metrics arriving?" if alarms > 1 else "GPU metric arriving?"


def _spot_instances(names: Names, spot: bool) -> list[cw.IMetric]:
    """The Spot group's instances in service (none without [capacity.spot])."""
    if not spot:
        return []
    dims = {"AutoScalingGroupName": names.spot_asg}
    return [_metric(AUTOSCALING_NAMESPACE, "GroupInServiceInstances", dims, "Spot in service")]


def _spot_reservation(names: Names, spot: bool) -> list[cw.IMetric]:
    """The Spot provider's reservation (none without [capacity.spot])."""
    if not spot:
        return []
    dims = {"ClusterName": names.cluster, "CapacityProviderName": names.spot_capacity_provider}
    return [_metric(MANAGED_SCALING_NAMESPACE, "CapacityProviderReservation", dims, "Spot")]


def _panel_row(
    design: Design,
    names: Names,
    series: SignalSeries,
    panel: Panel,
    fast_path_alarm: cw.IAlarm | None,
) -> list[cw.IWidget]:
    """A tracked series' lines against its target and, on the fast path's series, its alarm.

    For the concurrency series: the 10-second mean is what the fast path
    sees, the one-minute mean what target tracking sees, and the busiest
    task (Maximum over the tasks' datapoints) shows load the mean hides.
    """
    spec = design.spec
    target = series.target(spec.scaling)
    annotations = []
    if target is not None:
        annotations.append(cw.HorizontalAnnotation(value=target, label=panel.target_label(target)))
    fp = design.fast_path if series.drives_fast_path else None
    if fp is not None:
        annotations.append(
            cw.HorizontalAnnotation(
                value=fp.threshold,
                label=f"fast path {fp.threshold:g} "
                f"({spec.scaling.panic_threshold_percent:g} % of target)",
                color=cw.Color.RED,
            )
        )
    alarm = fast_path_alarm if series.drives_fast_path else None
    graph = cw.GraphWidget(
        title=panel.title,
        left=[
            series_metric(series.watched, names, period_s=period, statistic=stat, label=label)
            for period, stat, label in panel.lines
        ],
        left_annotations=annotations,
        left_y_axis=_COUNT_AXIS,
        width=12 if alarm is not None else 24,
    )
    if alarm is None:
        return [graph]
    return [
        graph,
        cw.AlarmWidget(
            title="Fast path: 10-second alarm",
            alarm=alarm,
            left_y_axis=_COUNT_AXIS,
            width=12,
        ),
    ]
