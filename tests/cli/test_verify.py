"""verify metrics and verify scaling against moto in server mode.

moto stores put_metric_data datapoints and answers get_metric_data and
list_metrics from them, so verify metrics runs exactly as against AWS. moto
never scales anything (its target tracking creates inert alarms), so the
scaling tests raise and lower desiredCount themselves with UpdateService
while the tool publishes; what they prove is the tool's side: it publishes
the contract metric, detects both moves, and stops publishing on every exit.

examples/g5-vllm.toml scales on concurrency; the GPU-signal tests take the
same service on the GPU signal (``gpu_spec``, tests/example_specs.py).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.stub import Stubber
from botocore.validate import ParamValidator

from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli import main
from ecs_gpu.cli import verify_scaling as verify_cli
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.errors import EXIT_BAD_INPUT, EXIT_PROBLEMS, EcsGpuError, ProblemsFound
from ecs_gpu.spec import load_spec
from example_specs import write_g5_gpu
from support.stubbed import offline_client
from support.zero_alarms import sleep_metrics, wake_metrics

from .conftest import EXAMPLE_SPEC, NAMES, Clients, Lockstep

# The example's fast-path threshold (panic_threshold_percent of its target).
EXAMPLE_THRESHOLD = fp.threshold(load_spec(EXAMPLE_SPEC))

ASG = NAMES.asg


@pytest.fixture(scope="module")
def gpu_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_g5_gpu(tmp_path_factory.mktemp("spec"))


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


def test_verify_metrics_passes_when_all_three_series_have_datapoints(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    put(clients.cw, gpu_metric.MEMORY_TOTAL, 23028.0)
    # The spec names the ASG through naming.py: vllm-g5 -> vllm-g5-gpu-asg.
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = capsys.readouterr().out
    assert code == 0
    for name in gpu_metric.METRIC_NAMES:
        assert name in out
    assert "23028" in out and "All 3 GPU series" in out


def test_verify_metrics_fails_naming_the_missing_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    code = main(["verify", "metrics", "--asg", ASG, "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS
    err = " ".join(captured.err.split())
    assert f"1 of 3 GPU series missing for ASG {ASG}" in err
    assert f"{gpu_metric.MEMORY_TOTAL}: nothing publishes" in err
    assert "PutMetricData" in err and "agent is not running" in err
    assert gpu_metric.UTILIZATION + ":" not in err  # present series are not blamed


def test_verify_metrics_needs_exactly_one_of_spec_or_asg(
    aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "metrics"]) == EXIT_BAD_INPUT
    assert "exactly one of SPEC or --asg" in capsys.readouterr().err


# --- verify scaling ---------------------------------------------------------------


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


def test_verify_scaling_refuses_without_yes_before_touching_aws(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    sent = count_puts(clients.cw)
    with pytest.raises(EcsGpuError) as exc:
        verify_cli.run_verify_scaling(
            clients.cw,
            clients.ecs,
            clients.appscaling,
            NAMES,
            yes=False,
            publish_interval_s=0.01,
            poll_s=0,
            scale_out_timeout_s=1,
            scale_in_timeout_s=1,
        )
    assert exc.value.exit_code == EXIT_BAD_INPUT
    assert "changes the live service's task count" in exc.value.message
    assert sent == []


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


def test_verify_scaling_measures_scale_out_and_scale_in(clients: Clients) -> None:
    make_service(clients, desired=1)
    sent = count_puts(clients.cw)
    now = [0.0]
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def sleep(_: float) -> None:
        # Stand-in for Application Auto Scaling, which moto does not run: once
        # the tool has published, move desiredCount the way the policy would.
        now[0] += 15.0
        pace.tick()
        if pub.value >= 70 and desired(clients) == 1 and now[0] >= 60:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=2)
        elif pub.value < 70 and desired(clients) == 2 and now[0] >= 150:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    result = run_faked(clients, sleep=sleep, publisher=pub, now=now, poll_s=15)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert result.scale_out_s == 60.0 and result.scale_in_s == 90.0
    assert not pub.running
    # One datapoint at the start and one per 15-s poll: 4 polls out, 6 in.
    assert len(sent) == result.published == 1 + 4 + 6
    data = [p["MetricData"][0] for p in sent]
    assert all(d["MetricName"] == gpu_metric.UTILIZATION for d in data)
    assert all(d["Dimensions"] == gpu_metric.dimensions(ASG) for d in data)
    assert all(d["Counts"] == [1000.0] for d in data)
    values = [d["Values"][0] for d in data]
    assert values[0] == 100.0 and values[-1] == 0.0  # high first, then low


def test_verify_scaling_stops_publishing_when_interrupted(clients: Clients) -> None:
    make_service(clients, desired=1)
    sent = count_puts(clients.cw)
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def ctrl_c(_: float) -> None:
        pace.tick()
        pace.tick()
        raise KeyboardInterrupt

    with pytest.raises(EcsGpuError) as exc:
        run_faked(clients, sleep=ctrl_c, publisher=pub, poll_s=15)
    assert exc.value.exit_code == 130 and "stopped publishing" in exc.value.message
    assert len(sent) == 3
    for _ in range(30):  # thirty more publish intervals
        pace.tick()
    assert len(sent) == 3, "PutMetricData continued after Ctrl-C"
    assert not pub.running
    assert not any(t.name == "ecs-gpu-publisher" and t.is_alive() for t in threading.enumerate())


def test_verify_scaling_refuses_a_test_that_cannot_pass(clients: Clients) -> None:
    make_service(clients, desired=4, max_tasks=4)
    with pytest.raises(ProblemsFound, match="its maximum"):
        verify_cli.run_verify_scaling(
            clients.cw,
            clients.ecs,
            clients.appscaling,
            NAMES,
            yes=True,
            publish_interval_s=0.01,
            poll_s=0,
            scale_out_timeout_s=1,
            scale_in_timeout_s=1,
        )
    with pytest.raises(ProblemsFound, match="no Application Auto Scaling target"):
        vscaling.check_can_scale(None, NAMES.scalable_target_resource_id, 1)


def test_an_unknown_profile_is_bad_input(aws: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", "metrics", "--asg", ASG, "--profile", "no-such-profile"])
    assert code == EXIT_BAD_INPUT
    assert "no such AWS profile" in capsys.readouterr().err


def put_reservation(cw: Any, value: float) -> None:
    cw.put_metric_data(
        Namespace=gpu_metric.RESERVATION_NAMESPACE,
        MetricData=[
            {
                "MetricName": gpu_metric.RESERVATION_METRIC,
                "Dimensions": gpu_metric.reservation_dimensions(NAMES.cluster),
                "Value": value,
                "Unit": "Percent",
                "Timestamp": datetime.now(UTC) - timedelta(seconds=5),
            }
        ],
    )


def _all_three(clients: Clients) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    put(clients.cw, gpu_metric.MEMORY_TOTAL, 23028.0)


def test_verify_metrics_with_a_task_gpus_spec_shows_the_divisor(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    _all_three(clients)
    put_reservation(clients.cw, 25.0)
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert f"GPUReservation (ClusterName={NAMES.cluster})" in out
    assert "1 datapoint(s), latest 25 %" in out and "warning" not in out


def test_verify_metrics_warns_when_the_divisor_is_missing_but_exits_on_the_contract(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    # The agent's three series are there; ECS wrote no reservation (no running
    # task). The contract decides the exit code; the missing divisor is said.
    _all_three(clients)
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "warning:" in out and "GPUReservation" in out and "MET004" in out
    # With --asg there is no spec, so no cluster and no divisor line.
    code = main(["verify", "metrics", "--asg", ASG, "--timeout", "0"])
    assert code == 0
    assert "GPUReservation" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["diff"],
        ["deploy"],
        ["destroy"],
        ["verify"],
        ["verify", "metrics"],
        ["verify", "scaling"],
        ["doctor"],
    ],
    ids=lambda a: " ".join(a),
)
def test_help_explains_with_an_example(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Example" in out
    assert f"ecs-gpu {argv[0]} " in out.split("Example", 1)[1]


# --- the concurrency signal (examples/g5-vllm.toml) ---------------------------------


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


def verify_conc(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def test_a_concurrency_spec_also_needs_the_sidecars_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)  # the host agent publishes; no sidecar ever did
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert "GPU series missing" not in out  # the GPU series are not blamed
    where = (
        f"{demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} "
        f"(ClusterName={NAMES.cluster},ServiceName={NAMES.service})"
    )
    assert f"The concurrency series {where} has no datapoint after 0 s." in out
    assert f"{demand_metric.METRIC_NAME}: no datapoint at all" in out
    # The sidecar, what it reads and where: the vllm preset on the container port.
    assert "'demand-metric' container" in out
    assert "vllm:num_requests_running + vllm:num_requests_waiting" in out
    assert "http://127.0.0.1:8000/metrics" in out
    assert "denied cloudwatch:PutMetricData" in out

    put_concurrency(clients.cw, 14.0)
    put_concurrency(clients.cw, 18.0, age_s=25.0)
    code, out = verify_conc(capsys)
    assert code == 0, out
    assert "All 3 GPU series" in out
    assert f"The concurrency series {where} has datapoints: 2 10-s period(s)" in out
    assert "latest mean per task 14." in out
    # The divisor belongs to the task-gpus policy, which this spec does not have.
    assert "GPUReservation" not in out


def test_concurrency_under_other_dimensions_is_told_apart(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)
    put_concurrency(clients.cw, 14.0, service="vllm-g5-staging")
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert f"{demand_metric.METRIC_NAME}: datapoints under other dimensions" in out
    assert f"ClusterName={NAMES.cluster},ServiceName=vllm-g5-staging" in out
    assert "no datapoint at all" not in out and "--stack" in out


def test_a_series_that_stopped_is_not_called_never_published(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)
    put_concurrency(clients.cw, 14.0, age_s=1800)  # outside the 600-s window
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert "exists but has no datapoint in the window" in out and "MET005" in out
    assert "no datapoint at all" not in out


def test_verify_metrics_with_asg_only_checks_the_gpu_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    # --asg has no spec, so no service to read concurrency for.
    _all_three(clients)
    assert main(["verify", "metrics", "--asg", ASG, "--timeout", "0"]) == 0
    assert demand_metric.METRIC_NAME not in capsys.readouterr().out


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


def test_verify_scaling_on_concurrency_publishes_past_the_fast_path_and_names_its_decision(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = activity("vllm-g5-Cpu-9Z", T0 - timedelta(hours=2), 2, 1)  # before the test
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    result, sent, out, fast = drive(clients, [earlier, first], capsys)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert all(p["Namespace"] == demand_metric.NAMESPACE for p in sent)
    data = [p["MetricData"][0] for p in sent]
    assert all(d["MetricName"] == demand_metric.METRIC_NAME for d in data)
    assert all(
        d["Dimensions"] == demand_metric.dimensions(NAMES.cluster, NAMES.service) for d in data
    )
    assert all(d["StorageResolution"] == 1 and d["Counts"] == [1000.0] for d in data)
    high, low = data[0]["Values"][0], data[-1]["Values"][0]
    # Inside the fast path's first step (the smallest), then below the target.
    assert fast.step_for(high) == fast.steps[0] and low < fast.target
    assert f"First decision: the fast path (step policy {FAST_POLICY}) 31 s after" in out
    assert "changing the desired capacity from 1 to 2" in out
    assert "warning" not in out  # the deployed fast path matches the spec's


def test_verify_scaling_says_when_target_tracking_decided_first(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    _, _, out, fast = drive(clients, [tracking], capsys)
    assert "First decision: not the fast path" in out
    assert f"{fast.datapoints_to_alarm} x {fast.period_s}-s periods" in out
    assert "vllm-g5-Concurrency-7Q" in out and "Scaling loop works" in out


@pytest.mark.parametrize(
    ("policies", "alarm_threshold", "says"),
    [
        ([], None, "has no StepScaling policy"),
        ([fast_policy([])], None, f"has StepScaling policy {FAST_POLICY} with no alarm"),
        (
            [fast_policy(["vllm-g5-Gone-5E"])],
            None,
            "whose alarm does not match it (alarm vllm-g5-Gone-5E does not exist)",
        ),
        (
            [fast_policy([FAST_ALARM])],
            40.0,
            f"alarm {FAST_ALARM}: it reads threshold 40 (want {EXAMPLE_THRESHOLD:g})",
        ),
    ],
    ids=["no-step-policy", "no-alarm", "alarm-deleted", "stale-threshold"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_fast_path(
    clients: Clients,
    capsys: pytest.CaptureFixture[str],
    policies: list[dict[str, Any]],
    alarm_threshold: float | None,
    says: str,
) -> None:
    # The scale-out comes from target tracking (the policy in the cause), as
    # it would with no fast path: the test still runs, then exits 1.
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [tracking], capsys, policies=policies, alarm_threshold=alarm_threshold)
    out = " ".join(capsys.readouterr().out.split())
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "the spec has a fast path (a StepScaling policy invoked by an alarm on" in message
    assert (
        f"at or above {EXAMPLE_THRESHOLD:g} over 10-s periods), but service/vllm-g5/vllm-g5 has"
        in message
    )
    assert says in message and says in out
    assert "`ecs-gpu deploy SPEC`" in message and "`ecs-gpu diff SPEC`" in message
    assert out.index("warning:") < out.index("Scaling loop works")  # told before the wait
    assert "First decision: not the fast path, which the service lacks" in out


def test_the_first_decision_names_a_missing_step_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """Called on its own (no check before it), the report still says no step policy exists."""
    c = offline_client("application-autoscaling")
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    with Stubber(c) as st:
        st.add_response("describe_scaling_policies", {"ScalingPolicies": []})
        st.add_response("describe_scaling_activities", {"ScalingActivities": [tracking]})
        fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
        assert fast is not None
        d = verify_cli.report_first_decision(
            c, NAMES.scalable_target_resource_id, since=T0, fast=fast
        )
    assert d is not None and d.fast_path_policy is None and d.step_policies == ()
    out = " ".join(capsys.readouterr().out.split())
    assert f"{NAMES.scalable_target_resource_id} has no StepScaling policy" in out
    assert "its alarm needs" not in out


@pytest.fixture
def nofast_spec(tmp_path: Path) -> Path:
    """The concurrency example with the fast path off (the service name kept)."""
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    off = text.replace("\n[scaling]\n", "\n[scaling]\nfast_scale_out = false\n", 1)
    assert off != text
    path = tmp_path / "g5-vllm-nofast.toml"
    path.write_text(off, encoding="utf-8")
    spec = load_spec(path)
    assert spec.scaling.signal == "concurrency" and fp.fast_path(spec) is None
    return path


def test_verify_scaling_without_the_fast_path_drives_concurrency_for_target_tracking(
    clients: Clients,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    nofast_spec: Path,
) -> None:
    make_service(clients, desired=1)
    target = load_spec(nofast_spec).scaling.target_concurrency_per_task
    assert target is not None
    made: list[vs.Publisher] = []
    values: list[float] = []
    concurrency_publisher = vs.ConcurrencyPublisher

    class Recording(concurrency_publisher):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        def put(self, value: float) -> None:
            values.append(value)
            super().put(value)

    class RecordingGpu(vs.Publisher):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(vs, "ConcurrencyPublisher", Recording)
    monkeypatch.setattr(vs, "Publisher", RecordingGpu)
    now = [0.0]
    pace = Lockstep()

    def sleep(_: float) -> None:
        # Stand-in for target tracking (moto runs none): three one-minute
        # datapoints above the target, then back in once the value is low.
        now[0] += 10.0
        pace.tick()  # react to what was published, not to what is about to be
        pub = made[0]
        if pub.value > target and desired(clients) == 1 and now[0] >= 200:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=2)
        elif pub.value < target and desired(clients) == 2:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    real = verify_cli.run_verify_scaling

    def quick(*args: Any, **kwargs: Any) -> vscaling.ScalingResult:
        kwargs.update(sleep=sleep, clock=lambda: now[0], publish_interval_s=0.01, pace=pace)
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_cli, "run_verify_scaling", quick)
    code = main(["verify", "scaling", str(nofast_spec), "--yes"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert len(made) == 1 and isinstance(made[0], concurrency_publisher)
    assert not made[0].running
    assert values[0] == 2 * target and values[-1] == 0.0  # above the target, then below
    # One datapoint at the start and one per 10-s poll (20 out, 1 in): bounded by
    # the fake clock, not by how fast this machine publishes.
    assert len(values) == made[0].published == 1 + 20 + 1
    assert "fast path is off ([scaling] fast_scale_out = false)" in out
    assert f"publishing {2 * target:g}, twice the target" in out and "3-4 minutes" in out
    assert "First decision" not in out
    assert "Scaling loop works: desiredCount 1 -> 2" in out
    # What reached CloudWatch: the sidecars' series, no GPU utilization. Read
    # back by GetMetricStatistics, not ListMetrics: moto stores each of the
    # Counts as a datapoint and its ListMetrics is quadratic in them (22 puts
    # x 1000 took minutes).
    stats = clients.cw.get_metric_statistics(
        Namespace=demand_metric.NAMESPACE,
        MetricName=demand_metric.METRIC_NAME,
        Dimensions=demand_metric.dimensions(NAMES.cluster, NAMES.service),  # type: ignore[arg-type]
        StartTime=datetime.now(UTC) - timedelta(hours=1),
        EndTime=datetime.now(UTC) + timedelta(minutes=1),
        Period=3600,
        Statistics=["SampleCount"],
    )["Datapoints"]
    assert sum(d["SampleCount"] for d in stats) == 1000 * len(values)
    assert clients.cw.list_metrics(Namespace=gpu_metric.NAMESPACE)["Metrics"] == []


# --- scale to zero: the wake path (ecs_gpu.design.paths.wake) ---------------------------

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


@pytest.mark.parametrize(
    ("running_stat", "says"),
    [
        (None, "has no such alarm: at zero tasks nothing starts one again"),
        ("Average", "has a wake alarm that does not match it (alarm vllm-g5-WakeAlarm-7D6C"),
    ],
    ids=["no-wake-alarm", "stale-wake-alarm"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_wake_path(
    clients: Clients, capsys: pytest.CaptureFixture[str], running_stat: str | None, says: str
) -> None:
    if running_stat is not None:
        put_wake_alarm(clients, running_stat)
    policies = [fast_policy([FAST_ALARM]), wake_policy([WAKE_ALARM] if running_stat else [])]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    out = " ".join(capsys.readouterr().out.split())
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "the spec scales to zero with a load balancer, so it has a wake path" in message
    assert says in message and says in out
    assert out.index("warning:") < out.index("Scaling loop works")  # told before the wait
    assert "First decision: the fast path" in out  # the fast path itself was fine


@pytest.mark.parametrize(
    ("missing", "step", "says"),
    [
        # Missing data breaching: every quiet minute at zero reads as a request and wakes it.
        ("breaching", 1, "has a wake alarm that does not match it"),
        # The alarm as deployed, the policy's step edited to start two tasks.
        ("notBreaching", 2, "has a wake policy that does not match it (steps (lower, upper, "),
    ],
    ids=["missing-data-breaching", "two-task-step"],
)
def test_verify_scaling_holds_the_wake_alarm_and_step_to_the_templates(
    clients: Clients, capsys: pytest.CaptureFixture[str], missing: str, step: int, says: str
) -> None:
    put_wake_alarm(clients, missing=missing)
    policy = wake_policy([WAKE_ALARM])
    policy["StepScalingPolicyConfiguration"]["StepAdjustments"][0]["ScalingAdjustment"] = step
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(
            clients, [first], capsys, policies=[fast_policy([FAST_ALARM]), policy], wake_path=True
        )
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert says in message
    want = "missing data breaching (want notBreaching)" if step == 1 else "(want [(0, None, 1)])"
    assert want in message


@pytest.mark.parametrize("wake_alarm", [False, True], ids=["no-wake-alarm", "wake-alarm"])
def test_verify_scaling_judges_only_the_wake_policys_alarm_as_the_wake_alarm(
    clients: Clients, capsys: pytest.CaptureFixture[str], wake_alarm: bool
) -> None:
    # The sleep alarm reads the same RequestCount query r: it is not a stale wake alarm.
    put_sleep_alarm(clients)
    if wake_alarm:
        put_wake_alarm(clients, "Average")
    policies = [
        fast_policy([FAST_ALARM]),
        wake_policy([WAKE_ALARM] if wake_alarm else []),
        sleep_policy([SLEEP_ALARM]),
    ]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    message = " ".join(exc.value.message.split())
    assert SLEEP_ALARM not in message
    if wake_alarm:
        assert f"has a wake alarm that does not match it (alarm {WAKE_ALARM}: it reads" in message
    else:
        assert "has no such alarm: at zero tasks nothing starts one again" in message


def test_verify_scaling_passes_with_the_wake_and_sleep_paths_deployed(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    put_wake_alarm(clients)
    put_sleep_alarm(clients)
    policies = [
        fast_policy([FAST_ALARM]),
        wake_policy([WAKE_ALARM]),
        sleep_policy([SLEEP_ALARM]),
    ]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    result, _, out, _ = drive(clients, [first], capsys, policies=policies, wake_path=True)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert "warning" not in out and "Scaling loop works" in out


@pytest.mark.parametrize(
    ("sleep_alarm", "says"),
    [
        (None, f"but {NAMES.scalable_target_resource_id} has no sleep policy"),
        ("wrong-metric", "whose alarm does not match it (alarm vllm-g5-SleepAlarm"),
        ("other-alb", "whose alarm does not match it (alarm vllm-g5-SleepAlarm"),
    ],
    ids=["no-sleep-policy", "sleep-alarm-on-another-metric", "sleep-alarm-on-another-alb"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_sleep_path(
    clients: Clients, capsys: pytest.CaptureFixture[str], sleep_alarm: str | None, says: str
) -> None:
    # Without the sleep path an idle service keeps its last task and instance.
    put_wake_alarm(clients)
    policies = [fast_policy([FAST_ALARM]), wake_policy([WAKE_ALARM])]
    if sleep_alarm is not None:
        metrics = sleep_metrics(ALB, NAMES.cluster, NAMES.service)
        for q in metrics:
            stat = q.get("MetricStat")
            if stat and q["Id"] == "r" and sleep_alarm == "wrong-metric":
                stat["Metric"]["MetricName"] = "RequestCountPerTarget"
            if stat and q["Id"] == "a" and sleep_alarm == "other-alb":
                stat["Metric"]["Dimensions"] = [
                    {"Name": "LoadBalancer", "Value": "app/other/0123456789abcdef"}
                ]
        put_sleep_alarm(clients, metrics)
        policies.append(sleep_policy([SLEEP_ALARM]))
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    message = " ".join(exc.value.message.split())
    out = " ".join(capsys.readouterr().out.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "so it has a sleep path (an ExactCapacity 0 StepScaling policy" in message
    assert says in message and says in out
    assert "wake path" not in message  # the wake path itself was fine


# --- Spot: the agent's series of each group that runs a host ------------------------


def _spot_spec(tmp_path: Path, base: int = 0, extra: str = "") -> Path:
    # [capacity.spot] with on_demand_base = 0 and no instance floor: every task may
    # run on Spot, and the On-Demand group may have no host at all.
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    text = text.replace("min_instances = 1", "min_instances = 0").replace(
        "\n[scaling]\n",
        '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
        f"on_demand_base = {base}\n{extra}\n[scaling]\n",
        1,
    )
    path = tmp_path / "spot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _group(clients: Clients, name: str, hosts: int) -> None:
    ec2 = boto3.Session().client("ec2")
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"{name}-lt", LaunchTemplateData={"ImageId": "ami-12c6146b"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateId": lt},
        MinSize=0,
        MaxSize=4,
        DesiredCapacity=hosts,
        AvailabilityZones=["us-east-1a"],
    )


def _all_three_for(clients: Clients, asg: str) -> None:
    for metric, value in (
        (gpu_metric.UTILIZATION, 37.0),
        (gpu_metric.MEMORY_USED, 20480.0),
        (gpu_metric.MEMORY_TOTAL, 23028.0),
    ):
        put(clients.cw, metric, value, gpu_metric.dimensions(asg))  # type: ignore[arg-type]


def test_with_spot_and_no_on_demand_host_the_spot_groups_series_is_what_must_arrive(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 0)  # on_demand_base = 0: no On-Demand host by design
    _group(clients, NAMES.spot_asg, 1)
    put_concurrency(clients.cw, 14.0)
    argv = ["verify", "metrics", str(spec), "--timeout", "0"]
    # The Spot host's agent has not published: that is the problem, not the empty group.
    code = main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"for ASG {NAMES.spot_asg}" in err and f"ASG {NAMES.asg}" not in err
    _all_three_for(clients, NAMES.spot_asg)
    code = main(argv)
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert "All 3 GPU series" in out and NAMES.spot_asg in out


def test_with_spot_every_group_that_runs_a_host_must_publish(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 1)
    _group(clients, NAMES.spot_asg, 1)
    _all_three(clients)  # the On-Demand host publishes; the Spot host's agent does not
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"3 of 3 GPU series missing for ASG {NAMES.spot_asg}" in err


def test_with_spot_and_no_host_in_either_group_nothing_can_publish(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"neither {NAMES.asg} nor the Spot group {NAMES.spot_asg}" in err
    assert "Fix:" in err


def test_with_spot_every_failing_group_is_named_in_one_message(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 1)
    _group(clients, NAMES.spot_asg, 1)
    put_concurrency(clients.cw, 14.0)
    # Neither group's agent publishes: the second group is checked too, not left out
    # behind the first one's failure.
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"3 of 3 GPU series missing for ASG {NAMES.asg}" in err
    assert f"3 of 3 GPU series missing for ASG {NAMES.spot_asg}" in err


def test_at_spot_percent_0_an_empty_on_demand_group_fails_without_a_base(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The first step of removing [capacity.spot]: every task goes On-Demand, so an
    # empty On-Demand group is a problem though on_demand_base is 0.
    spec = _spot_spec(tmp_path, extra="spot_percent = 0\n")
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still draining
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert (
        f"{NAMES.asg} has no instance in service, yet [capacity.spot] spot_percent = 0 puts "
        "every task on it"
    ) in err


def test_with_a_base_an_empty_on_demand_group_fails_though_the_spot_group_publishes(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path, base=1)
    _group(clients, NAMES.asg, 0)  # on_demand_base = 1: it must run the base's task
    _group(clients, NAMES.spot_asg, 1)
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == EXIT_PROBLEMS
    assert f"{NAMES.asg} has no instance in service, yet [capacity.spot] on_demand_base = 1" in err
    assert "Fix:" in err and "ASG001" in err
    # The Spot group, which has a host, was still checked (and carried the concurrency).
    assert "All 3 GPU series" in " ".join(captured.out.split())


@pytest.mark.parametrize("desired", [0, 1])
def test_with_a_base_the_on_demand_host_is_wanted_only_while_the_service_wants_a_task(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path, desired: int
) -> None:
    # Scaled to zero (desiredCount 0, DescribeServices) the base places no task, so the
    # empty On-Demand group is by design; with a task wanted it must run a host.
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=desired)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still there, publishing
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert "All 3 GPU series" in " ".join(captured.out.split())
    if desired:
        assert code == EXIT_PROBLEMS
        assert f"{NAMES.asg} has no instance in service, yet [capacity.spot]" in err
    else:
        assert code == 0, err
        assert NAMES.asg not in err


def test_with_spot_at_zero_tasks_and_no_host_nothing_is_verified_and_it_says_so(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A healthy scale-to-zero Spot service at night: no task, no instance in either group.
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert f"note: the service {NAMES.service} runs no task (desiredCount 0)" in out
    assert "nothing was verified" in out and "once the service has a task" in out
    # A task wanted and still no host: the base's On-Demand host is missing, exit 1.
    clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"{NAMES.asg} has no instance in service, yet [capacity.spot] on_demand_base = 1" in err


def test_without_spot_a_service_at_zero_tasks_and_no_host_is_not_a_failure(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scale-to-zero service asleep: no task, and managed scaling took the group to zero."""
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert code == 0, captured.err
    assert (
        f"note: the service {NAMES.service} runs no task (desiredCount 0) and {NAMES.asg} has"
        in out
    )
    assert "nothing publishes the series by design, so nothing was verified" in out
    # A task wanted and still no host: nothing publishes, and that is a failure.
    clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)
    assert main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"]) == EXIT_PROBLEMS


@pytest.mark.parametrize("desired", [0, 1])
def test_without_spot_at_zero_tasks_only_the_hosts_series_are_waited_for(
    clients: Clients, capsys: pytest.CaptureFixture[str], desired: int
) -> None:
    """A host still in service, its agent publishing; no task, so no sidecar's concurrency."""
    make_service(clients, desired=desired)
    _group(clients, NAMES.asg, 1)
    _all_three_for(clients, NAMES.asg)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    out, err = " ".join(captured.out.split()), " ".join(captured.err.split())
    if desired:
        # A task wanted: its sidecar's series must arrive, and it has not.
        assert code == EXIT_PROBLEMS and demand_metric.METRIC_NAME in err
        assert f"{demand_metric.METRIC_NAME} Maximum MISSING" in out
    else:
        assert code == 0, err
        assert "All 3 GPU series" in out
        assert "runs no task (desiredCount 0), so no task publishes concurrency's series" in out


def test_with_spot_at_zero_tasks_a_host_is_verified_without_the_sidecars_series(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still there; no task, no sidecar
    _all_three_for(clients, NAMES.spot_asg)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "so no task publishes concurrency's series" in " ".join(captured.out.split())


def test_without_spot_a_denied_describe_services_waits_for_every_series_and_says_why(
    clients: Clients,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The old role (CloudWatch reads only): the service's desiredCount is not read."""
    from .test_failures import as_user, restricted_user

    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 1)
    _all_three_for(clients, NAMES.asg)
    # moto checks CloudWatch's calls under its endpoint prefix, monitoring.
    reads = ["GetMetricData", "ListMetrics"]
    env = restricted_user([f"{p}:{a}" for p in ("cloudwatch", "monitoring") for a in reads])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS, captured.err  # the concurrency was waited for, and is missing
    out = " ".join(captured.out.split())
    assert "ecs:DescribeServices denied: whether the service runs a task was not read" in out
