"""What the verify tests (here and in tests/aws/) set up on moto: metrics, the service, policies.

moto never scales anything and has no DescribeScalingActivities, so these put
the datapoints and alarms a deployed stack would have, answer the calls moto
lacks with AWS-shaped responses (checked against botocore's output shapes),
and run verify scaling on a clock the test drives.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.validate import ParamValidator

from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli import verify_scaling as verify_cli
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.spec import load_spec
from support.zero_alarms import sleep_metrics, wake_metrics

from .conftest import EXAMPLE_SPEC, NAMES, Clients, Lockstep

ASG = NAMES.asg


def put(cw: Any, metric: str, value: float, dims: list[dict[str, str]] | None = None) -> None:
    cw.put_metric_data(
        Namespace=gpu_metric.NAMESPACE,
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": dims if dims is not None else gpu_metric.dimensions(ASG),
                "Value": value,
                "Timestamp": datetime.now(UTC) - timedelta(seconds=5),
            }
        ],
    )


def make_service(c: Clients, desired: int = 1, max_tasks: int = 4) -> None:
    c.ecs.create_cluster(clusterName=NAMES.cluster)
    c.ecs.register_task_definition(
        family=NAMES.task_family,
        containerDefinitions=[{"name": "app", "image": "vllm/vllm-openai:v0.11.0", "memory": 512}],
    )
    c.ecs.create_service(
        cluster=NAMES.cluster,
        serviceName=NAMES.service,
        taskDefinition=NAMES.task_family,
        desiredCount=desired,
    )
    # moto's CloudFormation skips ApplicationAutoScaling::ScalableTarget; the
    # stack would create this one.
    c.appscaling.register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=1,
        MaxCapacity=max_tasks,
    )


def count_puts(cw: Any) -> list[dict[str, Any]]:
    """Every PutMetricData the client sends, with its params (a botocore event hook)."""
    sent: list[dict[str, Any]] = []

    def hook(params: dict[str, Any], **_: Any) -> None:
        sent.append(params)

    cw.meta.events.register("provide-client-params.monitoring.PutMetricData", hook)
    return sent


def desired(c: Clients) -> int:
    svc = c.ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])
    return int(svc["services"][0]["desiredCount"])


def run_faked(
    clients: Clients,
    *,
    sleep: Any,
    publisher: Any,
    now: list[float] | None = None,
    poll_s: int = 10,
    **options: Any,
) -> vscaling.ScalingResult:
    """run_verify_scaling on moto, confirmed (--yes), with 600-s timeouts, the test's
    stand-in ``sleep`` for the policies moto does not run and, given ``now``, its clock."""
    if now is not None:
        options["clock"] = lambda: now[0]
    return verify_cli.run_verify_scaling(
        clients.cw,
        clients.ecs,
        clients.appscaling,
        NAMES,
        yes=True,
        publish_interval_s=0.01,
        poll_s=poll_s,
        scale_out_timeout_s=600,
        scale_in_timeout_s=600,
        sleep=sleep,
        publisher=publisher,
        **options,
    )


def put_concurrency(
    cw: Any, value: float, service: str = NAMES.service, *, age_s: float = 5.0
) -> None:
    """One datapoint as a sidecar publishes it (high resolution)."""
    cw.put_metric_data(
        Namespace=demand_metric.NAMESPACE,
        MetricData=[
            {
                "MetricName": demand_metric.METRIC_NAME,
                "Dimensions": demand_metric.dimensions(NAMES.cluster, service),
                "Value": value,
                "Unit": demand_metric.UNIT,
                "StorageResolution": demand_metric.STORAGE_RESOLUTION,
                "Timestamp": datetime.now(UTC) - timedelta(seconds=age_s),
            }
        ],
    )


def activities_hook(client: Any, activities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Answer DescribeScalingActivities with AWS-shaped activities; record the requests.

    moto has no DescribeScalingActivities (nor scaling that would write any).
    The answer is checked against botocore's output shape, so it is one AWS
    could send; every other call still goes to moto.
    """
    op = client.meta.service_model.operation_model("DescribeScalingActivities")
    response = {"ScalingActivities": activities}
    report = ParamValidator().validate(response, op.output_shape)
    assert not report.has_errors(), report.generate_report()
    calls: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        calls.append(params)

    def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
        http = AWSResponse("", 200, HTTPHeaders(), None)
        return http, {**response, "ResponseMetadata": {"HTTPStatusCode": 200}}

    client.meta.events.register(
        "provide-client-params.application-autoscaling.DescribeScalingActivities", record
    )
    client.meta.events.register(
        "before-call.application-auto-scaling.DescribeScalingActivities", answer
    )
    return calls


T0 = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def activity(policy: str, start: datetime, frm: int, to: int) -> dict[str, Any]:
    alarm = f"{policy}-alarm"
    return {
        "ActivityId": f"act-{policy}-{start.timestamp():.0f}",
        "ServiceNamespace": "ecs",
        "ResourceId": NAMES.scalable_target_resource_id,
        "ScalableDimension": "ecs:service:DesiredCount",
        "Description": f"Setting desired count to {to}.",
        "Cause": f"monitor alarm {alarm} in state ALARM triggered policy {policy} changing "
        f"the desired capacity from {frm} to {to}.",
        "StartTime": start,
        "EndTime": start + timedelta(seconds=5),
        "StatusCode": "Successful",
    }


FAST_POLICY = "vllm-g5-FastScaleOut-1A2B"
FAST_POLICY_ARN = (
    "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:0b5c0e2a-6f0e-4d7a-9c1e-"
    f"2f4b8a1d3c5e:resource/ecs/{NAMES.scalable_target_resource_id}:policyName/{FAST_POLICY}"
)
FAST_ALARM = "vllm-g5-FastScaleOutAlarm-3C4D"


def fast_policy(alarms: list[str]) -> dict[str, Any]:
    """The fast path's StepScaling policy as DescribeScalingPolicies lists it."""
    return {
        "PolicyARN": FAST_POLICY_ARN,
        "PolicyName": FAST_POLICY,
        "ServiceNamespace": "ecs",
        "ResourceId": NAMES.scalable_target_resource_id,
        "ScalableDimension": "ecs:service:DesiredCount",
        "PolicyType": "StepScaling",
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": "PercentChangeInCapacity",
            "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 100}],
            "MinAdjustmentMagnitude": 1,
            "MetricAggregationType": "Maximum",
        },
        "Alarms": [
            {"AlarmName": a, "AlarmARN": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{a}"}
            for a in alarms
        ],
        "CreationTime": T0 - timedelta(days=1),
    }


def policies_hook(client: Any, policies: list[dict[str, Any]]) -> None:
    """Answer DescribeScalingPolicies with AWS-shaped policies.

    moto never lists a StepScaling policy's alarms (AWS lists the alarms
    whose actions invoke it, botocore ScalingPolicy.Alarms), so the tests
    answer it, checked against botocore's output shape; every other call
    (DescribeAlarms included) still goes to moto.
    """
    op = client.meta.service_model.operation_model("DescribeScalingPolicies")
    response = {"ScalingPolicies": policies}
    report = ParamValidator().validate(response, op.output_shape)
    assert not report.has_errors(), report.generate_report()

    def answer(**_: Any) -> tuple[Any, dict[str, Any]]:
        http = AWSResponse("", 200, HTTPHeaders(), None)
        return http, {**response, "ResponseMetadata": {"HTTPStatusCode": 200}}

    client.meta.events.register(
        "before-call.application-auto-scaling.DescribeScalingPolicies", answer
    )


def put_fast_alarm(c: Clients, fast: fp.FastPath, threshold: float | None = None) -> None:
    # moto's CloudFormation skips AWS::CloudWatch::Alarm; the stack would create
    # this one (infra/scaling.py), invoking the step policy.
    c.cw.put_metric_alarm(
        AlarmName=FAST_ALARM,
        Namespace=demand_metric.NAMESPACE,
        MetricName=demand_metric.METRIC_NAME,
        Dimensions=demand_metric.dimensions(NAMES.cluster, NAMES.service),
        Statistic=fp.STATISTIC,
        Period=fast.period_s,
        EvaluationPeriods=fast.evaluation_periods,
        DatapointsToAlarm=fast.datapoints_to_alarm,
        Threshold=fast.threshold if threshold is None else threshold,
        ComparisonOperator=fp.COMPARISON,
        TreatMissingData="notBreaching",
        AlarmActions=[FAST_POLICY_ARN],
    )


def lockstep_publisher(clients: Clients) -> tuple[vs.ConcurrencyPublisher, Lockstep]:
    """The sidecars' series publisher verify scaling drives, paced by the test's clock."""
    pace = Lockstep()
    pub = vs.ConcurrencyPublisher(
        clients.cw, NAMES.cluster, NAMES.service, 0.0, interval_s=0.01, pace=pace
    )
    return pub, pace


def drive(
    clients: Clients,
    activities: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    *,
    policies: list[dict[str, Any]] | None = None,
    alarm_threshold: float | None = None,
    wake_path: bool = False,
) -> tuple[vscaling.ScalingResult, list[dict[str, Any]], str, fp.FastPath]:
    """Run verify scaling on the example's fast path; by default the service has it deployed.

    ``policies``: what DescribeScalingPolicies lists instead of the fast
    path's policy; ``alarm_threshold``: the deployed alarm's, instead of the
    spec's.
    """
    make_service(clients, desired=1)
    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    put_fast_alarm(clients, fast, alarm_threshold)
    policies_hook(clients.appscaling, [fast_policy([FAST_ALARM])] if policies is None else policies)
    calls = activities_hook(clients.appscaling, activities)
    sent = count_puts(clients.cw)
    now = [0.0]
    pub, pace = lockstep_publisher(clients)

    def sleep(_: float) -> None:
        # Stand-in for the fast path's alarm and step policy, which moto does not run.
        now[0] += 10.0
        pace.tick()
        if pub.value >= fast.threshold and desired(clients) == 1 and now[0] >= 30:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=2)
        elif pub.value < fast.target and desired(clients) == 2 and now[0] >= 120:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    try:
        result = run_faked(
            clients,
            sleep=sleep,
            publisher=pub,
            now=now,
            fast=fast,
            wall_clock=lambda: T0,
            wake_path=wake_path,
        )
    finally:
        assert not pub.running
    assert calls and calls[0]["ResourceId"] == NAMES.scalable_target_resource_id
    return result, sent, " ".join(capsys.readouterr().out.split()), fast


WAKE_POLICY = "vllm-g5-Wake-9F8E"
WAKE_ALARM = "vllm-g5-WakeAlarm-7D6C"
SLEEP_POLICY = "vllm-g5-Sleep-5B4A"
SLEEP_ALARM = "vllm-g5-SleepAlarm-3928"
ALB = "app/vllm-g5-alb/0123456789abcdef"


def path_policy(name: str, alarms: list[str], config: dict[str, Any]) -> dict[str, Any]:
    """Another step path's StepScaling policy (``config``: its StepScalingPolicyConfiguration)
    as DescribeScalingPolicies lists it, beside the fast path's."""
    p = fast_policy(alarms)
    return {
        **p,
        "PolicyARN": p["PolicyARN"].replace(FAST_POLICY, name),
        "PolicyName": name,
        "StepScalingPolicyConfiguration": config,
    }


def wake_policy(alarms: list[str]) -> dict[str, Any]:
    """The wake path's StepScaling policy as DescribeScalingPolicies lists it."""
    return path_policy(
        WAKE_POLICY,
        alarms,
        {
            "AdjustmentType": wake.ADJUSTMENT_TYPE,
            "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 1}],
            "MetricAggregationType": "Maximum",
            "Cooldown": 780,
        },
    )


def sleep_policy(alarms: list[str]) -> dict[str, Any]:
    """The sleep path's StepScaling policy (ExactCapacity 0) as DescribeScalingPolicies lists it."""
    return path_policy(
        SLEEP_POLICY,
        alarms,
        {
            "AdjustmentType": sleep.ADJUSTMENT_TYPE,
            "StepAdjustments": [{"MetricIntervalUpperBound": 0.0, "ScalingAdjustment": 0}],
            "MetricAggregationType": "Maximum",
            "Cooldown": sleep.COOLDOWN_S,
        },
    )


def put_sleep_alarm(c: Clients, metrics: list[dict[str, Any]] | None = None) -> None:
    """The sleep alarm as infra/scaling.py writes it: the same ``r`` as the wake alarm's
    (``metrics`` in place of its queries: a hand-edited one)."""
    minutes = sleep.MIN_QUIET_MINUTES
    c.cw.put_metric_alarm(
        AlarmName=SLEEP_ALARM,
        Metrics=metrics or sleep_metrics(ALB, NAMES.cluster, NAMES.service),
        EvaluationPeriods=minutes,
        DatapointsToAlarm=minutes,
        Threshold=sleep.THRESHOLD,
        ComparisonOperator=sleep.COMPARISON,
        TreatMissingData=sleep.TREAT_MISSING_DATA,
        AlarmActions=[sleep_policy([])["PolicyARN"]],
    )


def put_wake_alarm(
    c: Clients, running_stat: str = wake.RUNNING_STATISTIC, missing: str = "notBreaching"
) -> None:
    """The wake alarm as infra/scaling.py writes it (moto's CloudFormation skips alarms)."""
    c.cw.put_metric_alarm(
        AlarmName=WAKE_ALARM,
        Metrics=wake_metrics(ALB, NAMES.cluster, NAMES.service, running_stat),
        EvaluationPeriods=wake.EVALUATION_PERIODS,
        DatapointsToAlarm=wake.DATAPOINTS_TO_ALARM,
        Threshold=wake.THRESHOLD,
        ComparisonOperator=wake.COMPARISON,
        TreatMissingData=missing,
        AlarmActions=[wake_policy([])["PolicyARN"]],
    )
